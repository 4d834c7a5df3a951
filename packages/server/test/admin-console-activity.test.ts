/**
 * The console's Activity search (issue 33, item 8) against a real server, on both stores: every record
 * reachable by keyset pages (not only the latest 50), the search by text, channel, status, our number, their
 * number, the key and the creation day, and a record's own events however many events came after them (the
 * page used to look among the organisation's latest 1,000 only). Then the same task in Chromium with axe-core
 * (SQLite pass). Records and later events are seeded in the database, copied from a real text's row.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium } from "./support/browser.js"
import { type ConsoleSession, consoleGet, setPasswordFromLink, signIn } from "./support/console.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const PASSWORD = "a long passphrase for the console"
/** More than two pages of 50. */
const SEEDED = 120
/** More events after the first text than the page used to look through. */
const LATER_EVENTS = 1_100

const plan = chromiumPlan("the console's Activity browser test", { sqliteOnly: true })

/** The record ids a page of the search lists, in its order, and its "Older records" link. */
const listed = (html: string) => ({
  ids: [...html.matchAll(/activity\/record\?kind=message&amp;id=(\d+)"/g)].map((m) => m[1] ?? ""),
  older: /<a href="([^"]+)">Older records<\/a>/.exec(html)?.[1]?.replaceAll("&amp;", "&") ?? null
})

describe("console Activity search", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession
  let firstId = ""
  let keyId = ""

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "ana@demo.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    session = await signIn(server.baseUrl, "ana@demo.example", PASSWORD)
    const sent = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": "activity-first" },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "The very first text" })
    })
    expect(sent.status).toBe(202)
    firstId = ((await sent.json()) as { id: string }).id
    await until(async () => {
      const rows = await server.db.query<{ n: number | string }>(
        "SELECT COUNT(*) AS n FROM events WHERE org_id = ? AND type = 'message.delivered'",
        [demo.orgId]
      )
      return Number(rows[0]?.n ?? 0) > 0 ? true : undefined
    }, { what: "the first text delivered" })
    const [row] = await server.db.query<Record<string, unknown>>("SELECT * FROM actions WHERE id = ?", [Number(firstId)])
    if (row === undefined) throw new Error("the first text's row is missing")
    keyId = String(row["api_key_id"])
    // Older-looking copies would sort before it; these come after it, one a day from 2026-01-01 (UTC).
    const { id: _id, ...template } = row
    const columns = Object.keys(template)
    for (let i = 0; i < SEEDED; i++) {
      const at = new Date(Date.UTC(2026, 0, 1 + i, 12)).toISOString()
      const values: Record<string, unknown> = {
        ...template,
        body: i % 10 === 0 ? `Invoice ${i} is ready` : `Reminder number ${i}`,
        type: i % 3 === 0 ? "WhatsApp" : "SMS",
        status: i % 4 === 0 ? "Failed" : "Delivered",
        counterpart: i % 2 === 0 ? "+14155550199" : "+14155550123",
        api_key_id: i % 5 === 0 ? null : keyId,
        at,
        modified: at,
        sid: null,
        work_at: null,
        lease_owner: null,
        lease_until: null
      }
      await server.db.query(
        `INSERT INTO actions (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        columns.map((c) => values[c] ?? null)
      )
    }
    // Events of other records written after the first text's, in batches.
    for (let from = 0; from < LATER_EVENTS; from += 100) {
      const rows = Array.from({ length: 100 }, (_, i) => [
        `evt_later_${from + i}`,
        demo.orgId,
        "message.sent",
        new Date().toISOString(),
        JSON.stringify({ type: "message.sent", timestamp: new Date().toISOString(), data: { id: `9${from + i}` } })
      ])
      await server.db.query(
        `INSERT INTO events (id, org_id, type, timestamp, payload) VALUES ${rows.map(() => "(?, ?, ?, ?, ?)").join(", ")}`,
        rows.flat()
      )
    }
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
  })

  const search = async (path: string) => {
    const response = await consoleGet(server.baseUrl, session, path)
    return { status: response.status, html: await response.text() }
  }

  it("walks every record, newest first, 50 a page, to the very first text", async () => {
    const seen: Array<string> = []
    let path: string | null = "/admin/activity"
    while (path !== null) {
      const { html, status } = await search(path)
      expect(status).toBe(200)
      const page = listed(html)
      expect(page.ids.length).toBeLessThanOrEqual(50)
      seen.push(...page.ids)
      path = page.older
    }
    expect(seen.length).toBe(SEEDED + 1)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.map(Number)).toEqual([...seen.map(Number)].sort((a, b) => b - a))
    expect(seen.at(-1)).toBe(firstId)
  })

  it("searches by text, channel, status, their number, key and creation days, and pages the result", async () => {
    /** How many records the search finds, over all its pages. */
    const ids = async (query: string) => {
      let count = 0
      let path: string | null = `/admin/activity?${query}`
      while (path !== null) {
        const page = listed((await search(path)).html)
        count += page.ids.length
        path = page.older
      }
      return count
    }
    expect(await ids("text=invoice")).toBe(SEEDED / 10)
    expect(await ids("text=INVOICE+1")).toBe(3) // 10, 100 and 110
    expect(await ids("text=50%25")).toBe(0) // a wildcard is a character
    expect(await ids("channel=WhatsApp")).toBe(SEEDED / 3)
    expect(await ids("status=Failed&channel=SMS")).toBe(20)
    expect(await ids(`with=${encodeURIComponent("+1 415 555 0199")}`)).toBe(SEEDED / 2)
    expect(await ids("from=2026-01-01&to=2026-01-10")).toBe(10)
    expect(await ids(`number=${demo.numbers[0]?.sid ?? ""}&from=2026-03-01&to=2026-03-01`)).toBe(1)
    // The key: every fifth seeded record has none, the first text has it.
    const byKey = listed((await search(`/admin/activity?key=${keyId}`)).html)
    expect(byKey.ids.length).toBe(50)
    const second = listed((await search(byKey.older ?? "")).html)
    expect(second.ids.length).toBe(SEEDED - SEEDED / 5 + 1 - 50)
    expect(second.older).toBeNull()
    expect(second.ids.at(-1)).toBe(firstId)
  })

  it("shows each wrong field beside it, and runs no search", async () => {
    const { html, status } = await search("/admin/activity?with=0199&from=2026-13-01&key=key_other")
    expect(status).toBe(400)
    expect(html).toContain("international form")
    expect(html).toContain("Enter a date as YYYY-MM-DD.")
    expect(html).toContain("Choose one of the organisation&#39;s keys.")
  })

  it("shows the first text's own events though 1,100 events came after them", async () => {
    const { html } = await search(`/admin/activity/record?kind=message&id=${firstId}`)
    expect(html).toContain("message.queued")
    expect(html).toContain("message.delivered")
    expect(html).not.toContain("No events.")
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

    it("searches by key and text, pages to the first text and opens its events; axe finds nothing", async () => {
      await page.goto("/admin/activity")
      await audit("activity")
      await page.getByLabel("Sent with key").selectOption(keyId)
      await page.getByRole("button", { name: "Search" }).click()
      await page.getByRole("link", { name: "Older records" }).waitFor()
      expect(page.url()).toContain(`key=${keyId}`)
      await page.getByRole("link", { name: "Older records" }).click()
      await page.getByRole("link", { name: "Newest" }).waitFor()
      await audit("activity-older")
      await page.getByRole("link", { name: firstId, exact: true }).click()
      await page.getByRole("heading", { name: `Message ${firstId}` }).waitFor()
      expect(await page.getByRole("table").textContent()).toContain("message.delivered")
      await audit("activity-record")
      await page.goto("/admin/activity?text=x&from=2026-02-30")
      await page.getByText("Enter a date as YYYY-MM-DD.").waitFor()
      expect(await page.getByLabel("Created from").getAttribute("aria-invalid")).toBe("true")
      await audit("activity-error")
      expect(axe.violations).toEqual([])
    })
  })
})
