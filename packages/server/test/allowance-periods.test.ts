/**
 * Allowances per period, on both stores, over HTTP, the CLI and the console: a calendar month in the
 * organisation's time zone, a text counted when it is sent (never when cancelled before), a used-up
 * allowance refused with 403 ALLOWANCE_EXHAUSTED, `orgs show` and the Sending rules page saying "used N of M
 * this period (since …)", and the month's rollover making it whole again. The server has no test clock:
 * the rollover moves the stored usage into the previous month, which is what the first of the month does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, consolePost, type ConsoleSession, signIn } from "./support/console.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError } from "./support/wire.js"

const ZONE = "Pacific/Kiritimati" // UTC+14: its month starts a day before UTC's does at the end of a month
const PASSWORD = "a long passphrase for the rules"

interface Allowance {
  readonly used: number
  readonly limit: number | null
}
interface Shown {
  readonly smsAllowance: number | null
  readonly callAllowance: number | null
  readonly allowances: {
    readonly period: string
    readonly since: string
    readonly timezone: string
    readonly sms: Allowance
    readonly calls: Allowance
  }
}

const monthIn = (zone: string, at = Date.now()) => {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit" }).formatToParts(at)
  return `${parts.find((p) => p.type === "year")?.value}-${parts.find((p) => p.type === "month")?.value}`
}
const monthBefore = (period: string) => {
  const [year, month] = period.split("-").map(Number) as [number, number]
  return month === 1 ? `${year - 1}-12` : `${year}-${String(month - 1).padStart(2, "0")}`
}

describe("allowances per period", () => {
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession
  let key = 0

  beforeAll(async () => {
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_DISPATCH_POLL_MS: "20" }
    })
    demo = await server.demo()
    await server.adminJson(["orgs", "update", demo.orgId, "--timezone", ZONE, "--sms-allowance", "2", "--call-allowance", "1"])
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "rules@a.example", "--password-stdin"], {
      input: `${PASSWORD}\n`
    })
    expect(created.code, created.stderr).toBe(0)
    session = await signIn(server.baseUrl, "rules@a.example", PASSWORD)
  }, 180_000)
  afterAll(() => server?.dispose())

  const create = (kind: "messages" | "ai-calls", body: Record<string, unknown>) =>
    server.fetch(`/api/v1/${kind}`, {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `period-${++key}` },
      body: JSON.stringify({ fromNumberSid: demo.numbers[0]!.sid, to: "+14155550123", ...body })
    })
  const text = (body: Record<string, unknown> = {}) => create("messages", { body: "x", ...body })
  const accepted = async (response: Response) => {
    expect(response.status).toBe(202)
    return ((await response.json()) as { id: string }).id
  }
  const show = () => server.adminJson<Shown>(["orgs", "show", demo.orgId])
  const rulesPage = async () => {
    const response = await consoleGet(server.baseUrl, session, "/admin/rules")
    expect(response.status).toBe(200)
    return response.text()
  }
  const statusOf = async (id: string) =>
    ((await (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).json()) as { status: string }).status

  it("counts a text when it is sent, not a cancelled one; refuses the next once the month's allowance is used; shows it", async () => {
    const period = monthIn(ZONE)
    const before = await show()
    expect(before.allowances).toEqual({
      period,
      since: `${period}-01`,
      timezone: ZONE,
      sms: { used: 0, limit: 2 },
      calls: { used: 0, limit: 1 }
    })
    // Cancelled before it was due: it never counts.
    const later = await accepted(await text({ scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }))
    const cancel = await server.fetch(`/api/v1/messages/${later}/cancel`, { method: "POST", key: demo.keys.live })
    expect(cancel.status).toBe(200)
    // Counting them moves no settings version: the settings cache (keys, numbers, the organisation) is not
    // emptied by every text sent (it was, through migration 0021's triggers, until 0045).
    const version = async () => Number((await server.db.query<{ value: number | string }>("SELECT value FROM settings_version"))[0]?.value)
    const versionBefore = await version()
    const sent = [await accepted(await text()), await accepted(await text())]
    await until(async () => ((await Promise.all(sent.map(statusOf))).every((s) => s === "Delivered") ? true : undefined), {
      what: "both texts to be delivered"
    })
    expect(await version()).toBe(versionBefore)
    expect((await show()).allowances.sms).toEqual({ used: 2, limit: 2 })
    const refused = await expectError(await text(), 403, "ALLOWANCE_EXHAUSTED")
    expect(refused.message).toMatch(/text allowance for this month is used up/)
    // The limit is a setting: it stays 2, and the CLI's text says how much of it this month used.
    const shown = await server.admin(["orgs", "show", demo.orgId])
    expect(shown.stdout).toContain(`used 2 of 2 this period (since ${period}-01)`)
    expect((await show()).smsAllowance).toBe(2)
    const page = await rulesPage()
    expect(page).toContain(`<dd id="usage-sms">used 2 of 2 this period (since ${period}-01)</dd>`)
    expect(page).toContain(`<dd id="usage-calls">used 0 of 1 this period (since ${period}-01)</dd>`)
    expect(page).toContain(`calendar month in ${ZONE}`)
  }, 60_000)

  it("counts an AI call when it is started and refuses the next one of the month", async () => {
    const call = { botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Your order ships Monday." }
    await accepted(await create("ai-calls", call))
    await until(async () => ((await show()).allowances.calls.used === 1 ? true : undefined), { what: "the call to be counted" })
    await expectError(await create("ai-calls", call), 403, "ALLOWANCE_EXHAUSTED")
    expect(await rulesPage()).toContain(`<dd id="usage-calls">used 1 of 1 this period (since ${monthIn(ZONE)}-01)</dd>`)
  }, 60_000)

  it("raising the limit in the console keeps what was used; at the month's rollover the allowance is whole again", async () => {
    const period = monthIn(ZONE)
    const saved = await consolePost(server.baseUrl, session, "/admin/rules", {
      csrf: session.csrf,
      sendingHours: "always",
      timezone: ZONE,
      aiCalls: "on",
      smsAllowance: "3",
      callAllowance: "1"
    })
    expect(saved.status).toBe(303)
    expect(await rulesPage()).toContain(`<dd id="usage-sms">used 2 of 3 this period (since ${period}-01)</dd>`)
    // The first of the month: everything used so far belongs to the month before.
    await server.db.query(`UPDATE allowance_usage SET period = ? WHERE org_id = ? AND period = ?`, [
      monthBefore(period),
      demo.orgId,
      period
    ])
    expect((await show()).allowances).toMatchObject({ period, sms: { used: 0, limit: 3 }, calls: { used: 0, limit: 1 } })
    expect(await rulesPage()).toContain(`<dd id="usage-sms">used 0 of 3 this period (since ${period}-01)</dd>`)
    const ids = [await accepted(await text()), await accepted(await text()), await accepted(await text())]
    await until(async () => ((await Promise.all(ids.map(statusOf))).every((s) => s === "Delivered") ? true : undefined), {
      what: "the month's three texts to be delivered"
    })
    await expectError(await text(), 403, "ALLOWANCE_EXHAUSTED")
    // Last month's usage stays, under its own period.
    const rows = await server.db.query<{ period: string; sms_used: number | string }>(
      `SELECT period, sms_used FROM allowance_usage WHERE org_id = ? ORDER BY period`,
      [demo.orgId]
    )
    expect(rows.map((r) => [r.period, Number(r.sms_used)])).toEqual([[monthBefore(period), 2], [period, 3]])
  }, 60_000)
})
