/**
 * Recipient-local quiet hours on a real server, on both stores (`parley orgs update --recipient-hours`, the
 * console's Sending rules page): a live text is held while the recipient's own clock is outside the window and
 * goes out when the window opens there, the zone coming from the number (+1 212 New York, +44 London), else the
 * organisation's. The server has no test clock: the windows are chosen from each zone's clock now, shaped as
 * 08:00-21:00 is at 22:00 (closed, opening ten hours later), and the held action's next look (`work_at`) is read
 * from the store and checked on the zone's own clock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, consolePost, type ConsoleSession, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { readJson, readUntil } from "./support/wire.js"

const PASSWORD = "a long passphrase for quiet hours"
const ORGANISATION_ZONE = "Asia/Tokyo" // 13 or 14 hours ahead of New York: open in the windows below
const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** Minutes from local midnight in `zone` at `t`. */
const minuteIn = (zone: string, t: number): number => {
  const parts = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hourCycle: "h23", hour: "2-digit", minute: "2-digit" })
    .formatToParts(t)
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  return part("hour") * 60 + part("minute")
}
const hhmm = (minutes: number) => {
  const m = ((minutes % 1440) + 1440) % 1440
  return `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("recipient-local quiet hours", () => {
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession
  let n = 0

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50", PARLEY_DISPATCH_POLL_MS: "20", PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    demo = await server.demo()
    await server.adminJson(["orgs", "update", demo.orgId, "--destinations", "any", "--timezone", ORGANISATION_ZONE])
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "quiet@a.example", "--password-stdin"], {
      input: `${PASSWORD}\n`
    })
    expect(created.code, created.stderr).toBe(0)
    session = await signIn(server.baseUrl, "quiet@a.example", PASSWORD)
  }, 180_000)
  afterAll(() => server?.dispose())

  const text = async (to: string) =>
    (await readJson<{ id: string }>(
      await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `quiet-${++n}` },
        body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: "Your appointment is tomorrow at 10" })
      }),
      202
    )).id
  const statusOf = async (id: string) =>
    (await readJson<{ status: string }>(await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }), 200)).status
  const leftQueued = (id: string) => readUntil(() => statusOf(id), (s) => s !== "Queued")
  /** When the dispatcher next looks at the text to `to` (epoch ms), once it has held it. */
  const heldUntil = async (to: string) => {
    const read = async () =>
      (await server.db.query<{ work_at: number | string; due_at: number | string }>(
        "SELECT work_at, due_at FROM actions WHERE org_id = ? AND counterpart = ? AND kind = 'message'",
        [demo.orgId, to]
      ))[0]
    const row = await readUntil(read, (r) => r !== undefined && Number(r.work_at) > Number(r.due_at))
    return Number(row?.work_at)
  }
  const setHours = (spec: string) => server.adminJson<{ recipientHours: string | null }>(["orgs", "update", demo.orgId, "--recipient-hours", spec])

  it("holds a text to +1 212 at '22:00' in New York until the window opens there, +44 until it opens in London; others use the organisation's zone", async () => {
    const now = Date.now()
    // Closed in New York now, an hour after it closed; it opens ten hours from now, as 08:00-21:00 does at 22:00.
    const start = minuteIn("America/New_York", now) + 10 * 60
    const spec = `${hhmm(start)}-${hhmm(start - 11 * 60)}`
    expect((await setHours(spec)).recipientHours).toBe(spec)
    const newYork = "+12125550123"
    const london = "+442079460123"
    const newYorkId = await text(newYork)
    const londonId = await text(london)
    // Australia's zones differ and +1 800 has no area code's zone: the organisation's (Tokyo), where it is open.
    const elsewhere = [await text("+61491570156"), await text("+18005550123")]
    for (const id of elsewhere) expect(await leftQueued(id)).not.toBe("Failed")

    const newYorkOpens = await heldUntil(newYork)
    expect(minuteIn("America/New_York", newYorkOpens)).toBe(start % 1440)
    expect(newYorkOpens).toBeGreaterThan(now + 9 * HOUR)
    expect(newYorkOpens).toBeLessThanOrEqual(now + 10 * HOUR)
    // London's clock is four or five hours ahead of New York's: the same window opens there sooner.
    const londonOpens = await heldUntil(london)
    expect(minuteIn("Europe/London", londonOpens)).toBe(start % 1440)
    expect(londonOpens).toBeLessThan(newYorkOpens)
    expect(await statusOf(newYorkId)).toBe("Queued")
    expect(await statusOf(londonId)).toBe("Queued")

    // Turning the rule off releases what it held.
    expect((await setHours("off")).recipientHours).toBeNull()
    expect(await leftQueued(newYorkId)).not.toBe("Failed")
    expect(await leftQueued(londonId)).not.toBe("Failed")
  })

  it("releases a held text when the window opens on the recipient's clock", async () => {
    // Start at the top of a minute, so the minute the window is closed in is not over before the text is due.
    if (new Date().getSeconds() > 45) await sleep((61 - new Date().getSeconds()) * 1000)
    const now = Date.now()
    const minute = minuteIn("America/New_York", now)
    // Closed in New York for this minute only: it opens at the next.
    await setHours(`${hhmm(minute + 1)}-${hhmm(minute)}`)
    const to = "+12125550124"
    const id = await text(to)
    const opens = await heldUntil(to)
    expect(opens).toBe(Math.floor(now / MINUTE) * MINUTE + MINUTE)
    expect(await statusOf(id)).toBe("Queued")
    expect(await readUntil(() => statusOf(id), (s) => s !== "Queued", 90_000)).not.toBe("Failed")
    await setHours("off")
  }, 120_000)

  it("is set on the console's Sending rules page and checked as the CLI checks it", async () => {
    const form = { csrf: session.csrf, sendingHours: "always", timezone: ORGANISATION_ZONE, smsAllowance: "unlimited", callAllowance: "unlimited" }
    const refused = await consolePost(server.baseUrl, session, "/admin/rules", { ...form, recipientHours: "08:00-25:00" })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain("Invalid end time")
    const saved = await consolePost(server.baseUrl, session, "/admin/rules", { ...form, recipientHours: "8:00-21:00" })
    expect(saved.status).toBe(303)
    const shown = await server.adminJson<{ recipientHours: string | null }>(["orgs", "show", demo.orgId])
    expect(shown.recipientHours).toBe("08:00-21:00")
    expect(await (await consoleGet(server.baseUrl, session, "/admin/rules")).text()).toContain('value="08:00-21:00"')
    const cli = await server.cli(["orgs", "update", demo.orgId, "--recipient-hours", "always"])
    expect(cli.code).not.toBe(0)
    expect(cli.stderr).toContain("--recipient-hours")
    await setHours("off")
  })
})
