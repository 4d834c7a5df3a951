/**
 * The console's Events page (issue 33, item 9) against a real server, on both stores: each delivery with its
 * state, status code, attempts and the stored failure reason; every delivery to an endpoint reachable page by
 * page (keyset on the event's sequence); an event's payload and deliveries; "Resend" one delivery (the endpoint
 * receives the same webhook-id again); "Send test event" (signed with the endpoint's secret, not kept). Then the
 * same tasks in Chromium with axe-core (SQLite pass). Older deliveries are seeded in the database.
 */
import type { Page } from "playwright-core"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium } from "./support/browser.js"
import { type ConsoleSession, consoleGet, consolePost, setPasswordFromLink, signIn } from "./support/console.js"
import { FakeServer } from "./support/fakes/FakeServer.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const PASSWORD = "a long passphrase for the console"
/** More than two pages of 25. */
const SEEDED = 60

const plan = chromiumPlan("the console's Events browser test", { sqliteOnly: true })

interface Received {
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
}

describe("console Events page", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession
  let receiver: FakeServer
  const received: Array<Received> = []
  let goodId = ""
  let goodSecret = ""
  let failingId = ""

  const addEndpoint = async (path: string) => {
    const added = await consolePost(server.baseUrl, session, "/admin/events/add", {
      csrf: session.csrf,
      url: `${receiver.url}${path}`,
      description: path,
      events: "*"
    })
    expect(added.status).toBe(200)
    const secret = /id="new-secret">([^<]+)</.exec(await added.text())?.[1] ?? ""
    const [row] = await server.db.query<{ id: string }>("SELECT id FROM webhooks WHERE url = ?", [`${receiver.url}${path}`])
    return { id: row?.id ?? "", secret }
  }

  const get = async (path: string) => {
    const response = await consoleGet(server.baseUrl, session, path)
    return { status: response.status, html: await response.text() }
  }

  beforeAll(async () => {
    receiver = await FakeServer.start((request, body, response) => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers[name] = value
      received.push({ path: request.url ?? "/", headers, body })
      response.writeHead(request.url === "/failing" ? 500 : 200, { "content-type": "text/plain" })
      response.end("ok")
    })
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "3600000" } })
    demo = await server.demo()
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "eve@demo.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    session = await signIn(server.baseUrl, "eve@demo.example", PASSWORD)
    ;({ id: goodId, secret: goodSecret } = await addEndpoint("/good"))
    ;({ id: failingId } = await addEndpoint("/failing"))
    // Older deliveries to the good endpoint, written before the live text below.
    for (let i = 0; i < SEEDED; i++) {
      const id = `evt_seeded_${String(i).padStart(3, "0")}`
      const timestamp = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString()
      await server.db.query("INSERT INTO events (id, org_id, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)", [
        id,
        demo.orgId,
        "message.sent",
        timestamp,
        JSON.stringify({ type: "message.sent", timestamp, data: { id: String(i) } })
      ])
      await server.db.query(
        `INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, last_status, updated_at)
         VALUES (?, ?, 1, NULL, 'delivered', 200, ?)`,
        [id, goodId, timestamp]
      )
    }
    const sent = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": "events-page-1" },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "Hello, events" })
    })
    expect(sent.status).toBe(202)
    await until(async () => {
      const rows = await server.db.query<{ last_error: string | null }>(
        "SELECT last_error FROM webhook_deliveries WHERE webhook_id = ? AND attempts > 0",
        [failingId]
      )
      return rows.length > 0 ? true : undefined
    }, { what: "a failed attempt to the failing endpoint" })
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
    await receiver?.stop()
  })

  it("shows each delivery's state, status code, attempts and why it failed", async () => {
    // Without the column names the cells carry for narrow screens (ResponsiveTables).
    const html = (await get("/admin/events")).html.replace(/ data-label="[^"]*"/g, "")
    expect(html).toContain("Failure reason")
    expect(html).toContain("<td>HTTP 500</td>")
    expect(html).toContain("<td>500</td>")
  })

  it("pages through every delivery to an endpoint, newest first", async () => {
    const count = async () => {
      const [stored] = await server.db.query<{ n: number | string }>(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?",
        [goodId]
      )
      return Number(stored?.n)
    }
    const pageThrough = async () => {
      const seen: Array<string> = []
      let path: string | null = `/admin/events/deliveries?id=${goodId}`
      while (path !== null) {
        const { html, status } = await get(path)
        expect(status).toBe(200)
        const ids = [...html.matchAll(/name="event" value="(evt_[A-Za-z0-9_]+)"/g)].map((m) => m[1] ?? "")
        expect(ids.length).toBeLessThanOrEqual(25)
        seen.push(...ids)
        path = /<a href="([^"]+)">Older deliveries<\/a>/.exec(html)?.[1]?.replaceAll("&amp;", "&") ?? null
      }
      return seen
    }
    // The text sent in beforeAll may still be raising events (its carrier's later statuses): a walk is
    // compared with the count only when no delivery was added while it ran (seen failing at load 30).
    let seen: Array<string> = []
    let compared = false
    for (let walk = 0; walk < 5 && !compared; walk++) {
      const before = await count()
      seen = await pageThrough()
      if ((await count()) !== before) continue
      expect(seen.length).toBe(before)
      compared = true
    }
    expect(compared, "a walk with no delivery added meanwhile").toBe(true)
    expect(seen.length).toBeGreaterThan(SEEDED)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.at(-1)).toBe("evt_seeded_000")
    expect(seen.at(-2)).toBe("evt_seeded_001")
    // Another organisation's endpoint, or none: 404.
    expect((await get("/admin/events/deliveries?id=wh_nothing")).status).toBe(404)
  })

  it("shows an event's payload and its deliveries to each endpoint", async () => {
    const [event] = await server.db.query<{ id: string }>(
      "SELECT id FROM events WHERE org_id = ? AND type = 'message.queued'",
      [demo.orgId]
    )
    const { html } = await get(`/admin/events/event?id=${event?.id ?? ""}`)
    expect(html).toContain("Hello, events")
    expect(html).toContain(`${receiver.url}/good`)
    expect(html).toContain(`${receiver.url}/failing`)
    expect((await get("/admin/events/event?id=evt_nothing")).status).toBe(404)
  })

  it("resends one delivery: the endpoint receives the same event again", async () => {
    const before = received.filter((r) => r.headers["webhook-id"] === "evt_seeded_007").length
    expect(before).toBe(0)
    const resent = await consolePost(server.baseUrl, session, "/admin/events/resend", {
      csrf: session.csrf,
      event: "evt_seeded_007",
      webhook: goodId,
      back: `/admin/events/deliveries?id=${goodId}`
    })
    expect(resent.status).toBe(303)
    expect(resent.headers.get("location")).toBe(`/admin/events/deliveries?id=${goodId}&done=resent`)
    const delivered = await until(async () => received.find((r) => r.headers["webhook-id"] === "evt_seeded_007"), {
      what: "the resent event"
    })
    expect(new Webhook(goodSecret).verify(delivered.body, delivered.headers)).toMatchObject({ type: "message.sent" })
    // Not a delivery of the organisation: refused, nothing sent.
    const refused = await consolePost(server.baseUrl, session, "/admin/events/resend", {
      csrf: session.csrf,
      event: "evt_seeded_007",
      webhook: "wh_other"
    })
    expect(refused.status).toBe(404)
  })

  describe.skipIf(plan.kind !== "ready")("in Chromium", () => {
    let page: Page
    const axe = new Axe()
    const audit = (name: string) => axe.check(page, name)

    beforeAll(async () => {
      page = await openPage(await sharedChromium(plan), server.baseUrl, { session: session.cookie })
    }, 120_000)

    afterAll(async () => {
      await closePages()
    })

    it("sends a test event, pages deliveries, opens an event and resends it; axe finds nothing", async () => {
      await page.goto("/admin/events")
      await audit("events")
      await page.getByRole("button", { name: `Send test event to ${receiver.url}/good` }).click()
      await page.getByText(`${receiver.url}/good answered HTTP 200.`).waitFor()
      await audit("test-event")
      const test = received.find((r) => r.path === "/good" && r.body.includes("A test event from the Parley console."))
      expect(test).toBeDefined()
      expect(new Webhook(goodSecret).verify(test?.body ?? "", test?.headers ?? {})).toMatchObject({ type: "message.delivered" })
      await page.goto("/admin/events")
      await page.getByRole("link", { name: `All deliveries to ${receiver.url}/good` }).click()
      await page.getByRole("link", { name: "Older deliveries" }).click()
      await page.getByRole("link", { name: "Newest" }).waitFor()
      await audit("deliveries-older")
      await page.getByRole("link", { name: "message.sent" }).first().click()
      await page.getByRole("heading", { name: "Payload" }).waitFor()
      await audit("event")
      const eventId = (await page.getByRole("heading", { level: 2 }).first().textContent()) ?? ""
      await page.getByRole("button", { name: `Resend message.sent ${eventId} to ${receiver.url}/good` }).click()
      await page.getByText("The event is due again").waitFor()
      await until(async () => received.find((r) => r.headers["webhook-id"] === eventId), { what: "the event resent from Chromium" })
      expect(axe.violations).toEqual([])
    })
  })
})
