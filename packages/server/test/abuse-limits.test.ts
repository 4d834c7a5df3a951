/**
 * SMS pumping and toll-fraud limits, over HTTP on both stores: the
 * organisation's destination rules (regions, premium-rate numbers,
 * international networks) refuse the high-risk destinations of the attack
 * pass with 403 DESTINATION_NOT_ALLOWED for live and test keys, the operator
 * opens them with `parley orgs update`; a long text takes one unit of
 * allowance per SMS segment; `orgs create` makes finite allowances and
 * home-only destinations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError } from "./support/wire.js"
import { CLI_HEAVY } from "./support/demo.js"

/** The eleven destinations the attack pass tried, all accepted before the rules. */
const HIGH_RISK = [
  "+882123456789", // international network
  "+97912345678", // international premium rate
  "+19005551234", // US premium rate
  "+449012345678", // UK premium rate
  "+74951234567", // Russia
  "+252612345678", // Somalia
  "+5351234567", // Cuba
  "+8613812345678", // China
  "+2348012345678", // Nigeria
  "+88213456789", // satellite network
  "+883123456789" // international network
]

interface Organisation {
  readonly id: string
  readonly smsAllowance: number | null
  readonly callAllowance: number | null
  readonly destinationCountries: ReadonlyArray<string> | null
  readonly premiumNumbersAllowed: boolean
  readonly internationalNetworksAllowed: boolean
  readonly allowances: { readonly sms: { readonly used: number; readonly limit: number | null } }
}

describe("abuse limits: destinations and allowances", () => {
  let server: TestServer
  let demo: DemoSummary
  let counter = 0

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  const text = (to: string, key: string, body = "hello") =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key,
      headers: { "idempotency-key": `abuse-${++counter}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]?.sid, body })
    })
  const call = (to: string, key: string) =>
    server.fetch("/api/v1/ai-calls", {
      method: "POST",
      key,
      headers: { "idempotency-key": `abuse-${++counter}` },
      body: JSON.stringify({
        to,
        fromNumberSid: demo.numbers[0]?.sid,
        botId: demo.bots.find((b) => b.active)?.id,
        mode: "deliver_specific_message",
        purposeMessage: "hi"
      })
    })
  const org = async () =>
    (await server.adminJson<{ readonly items: ReadonlyArray<Organisation> }>(["orgs", "list"])).items
      .find((o) => o.id === demo.orgId)

  it("refuses every high-risk destination with 403 DESTINATION_NOT_ALLOWED, texts and calls, live and test keys", async () => {
    for (const to of HIGH_RISK) {
      for (const key of [demo.keys.live, demo.keys.test]) {
        const error = await expectError(await text(to, key), 403, "DESTINATION_NOT_ALLOWED")
        expect(error.message, to).toMatch(/^to: /)
      }
      await expectError(await call(to, demo.keys.live), 403, "DESTINATION_NOT_ALLOWED")
    }
    // The demo organisation's own regions still pass.
    for (const to of ["+14155550123", "+16135550123", "+447700900001"]) {
      expect((await text(to, demo.keys.live)).status, to).toBe(202)
    }
  })

  it("lets the operator open regions, premium-rate numbers and international networks with orgs update", async () => {
    const opened = await server.adminJson<Organisation>([
      "orgs", "update", demo.orgId, "--destinations", "US,CN", "--premium-numbers", "allow"
    ])
    expect(opened).toMatchObject({ destinationCountries: ["CN", "US"], premiumNumbersAllowed: true })
    expect((await text("+8613812345678", demo.keys.live)).status).toBe(202)
    expect((await text("+19005551234", demo.keys.live)).status).toBe(202)
    await expectError(await text("+447700900001", demo.keys.live), 403, "DESTINATION_NOT_ALLOWED")
    await expectError(await text("+882123456789", demo.keys.live), 403, "DESTINATION_NOT_ALLOWED")
    await server.adminJson(["orgs", "update", demo.orgId, "--destinations", "any", "--international-networks", "allow"])
    expect((await text("+882123456789", demo.keys.live)).status).toBe(202)
    expect((await text("+252612345678", demo.keys.live)).status).toBe(202)
    const bad = await server.admin(["orgs", "update", demo.orgId, "--destinations", "US,XX"])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/unknown region XX/)
    await server.adminJson([
      "orgs", "update", demo.orgId, "--destinations", "CA,GB,US", "--premium-numbers", "refuse",
      "--international-networks", "refuse"
    ])
  })

  it("takes one unit of the text allowance per SMS segment (GSM-7 and UCS-2)", async () => {
    // Everything sent so far is dispatched first, so the allowance moves only for the texts below.
    await until(async () => {
      const rows = await server.db.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM actions WHERE org_id = ? AND status IN ('Queued', 'Sending')",
        [demo.orgId]
      )
      return rows[0]?.n === 0 ? true : undefined
    }, { what: "the earlier texts to leave the queue" })
    // The allowance is per month: 5 segments left means a limit of what this month used so far plus 5.
    const usedBefore = (await org())?.allowances.sms.used ?? 0
    await server.adminJson(["orgs", "update", demo.orgId, "--sms-allowance", String(usedBefore + 5)])
    // 161 GSM-7 characters: two segments of 153; 71 characters with an emoji: UCS-2, two segments of 67.
    expect((await text("+14155550123", demo.keys.live, "a".repeat(161))).status).toBe(202)
    expect((await text("+14155550123", demo.keys.live, `${"b".repeat(69)}😀`)).status).toBe(202)
    await until(async () => ((await org())?.allowances.sms.used === usedBefore + 4 ? true : undefined), {
      what: "the allowance to drop by 4 units (2 texts of 2 segments)"
    })
    const error = await expectError(await text("+14155550123", demo.keys.live, "c".repeat(200)), 403, "ALLOWANCE_EXHAUSTED")
    expect(error.message).toMatch(/1 SMS segments left this month; this text needs 2/)
    expect((await text("+14155550123", demo.keys.live, "d".repeat(160))).status).toBe(202)
    await server.adminJson(["orgs", "update", demo.orgId, "--sms-allowance", "unlimited"])
  })

  it("orgs create makes finite allowances and home-only destinations, no premium or international networks", async () => {
    const created = await server.adminJson<Organisation>(["orgs", "create", "--name", "Fresh Ltd"])
    expect(created).toMatchObject({
      smsAllowance: 1000,
      callAllowance: 100,
      destinationCountries: null,
      premiumNumbersAllowed: false,
      internationalNetworksAllowed: false
    })
  })
})
