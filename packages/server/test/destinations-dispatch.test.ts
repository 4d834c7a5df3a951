/**
 * Destination rules at dispatch, over HTTP on both stores: a text or AI call
 * accepted while its recipient was allowed, then scheduled, fails when it
 * comes due if an operator has narrowed the organisation's destination rules
 * meanwhile (`parley orgs update --destinations … --premium-numbers …`). It
 * becomes Failed with an errorMessage naming the rule, its failed event is
 * written, and no provider hears of it: not the simulator, not Twilio, not
 * Vapi (local fakes). Actions to recipients the narrowed rules still allow go
 * out as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { VapiFake } from "./support/fakes/VapiFake.js"
import { TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"
import { PN1 } from "./support/demo.js"

const HEAVY = 180_000
const PN9 = "PN00000000000000000000000000000009"
const VAPI_PHONE = "3f1c9a2e-5b7d-4e61-9c3a-0d2b8e7f6a51"
const ASSISTANT = "a1b2c3d4-0000-4000-8000-00000000a551"
const SECRET = "vapi-server-secret-for-destinations"
/**
 * How far ahead the actions are scheduled: well past the contract's 30 s minimum, so that a slow set-up on a
 * loaded machine cannot make a request too late to schedule; the test makes them due itself once the rules change.
 */
const LEAD_MS = 600_000
const FINAL = new Set(["Delivered", "Undelivered", "Failed", "Completed", "No Answer", "Busy"])

const UK = "+447700900123"
const UK_CALL = "+447700900456"
const US_PREMIUM = "+19005551234"
const US = "+14155550177"

interface ActionRecord {
  readonly id: string
  readonly status?: string | null
  readonly errorMessage?: string | null
}

/** An organisation, a live key of it and its US sending line. */
interface Org {
  readonly orgId: string
  readonly key: string
  readonly sid: string
  readonly phone: string
}

let counter = 0
const idem = () => `destinations-${Date.now()}-${++counter}`

describe("destination rules at dispatch", () => {
  let server: TestServer
  let twilio: TwilioFake
  let vapi: VapiFake
  /** Texts and calls through the simulator. */
  let simulated: Org
  /** Texts through Twilio, calls through Vapi. */
  let real: Org

  const create = async (org: Org, path: "messages" | "ai-calls", payload: Record<string, unknown>, scheduledFor: string) => {
    const response = await server.fetch(`/api/v1/${path}`, {
      key: org.key,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ fromNumberSid: org.sid, scheduledFor, ...payload })
    })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    return (JSON.parse(text) as { id: string }).id
  }
  const text = (org: Org, to: string, at: string) => create(org, "messages", { to, body: "See you tomorrow" }, at)
  const call = (org: Org, to: string, at: string) =>
    create(org, "ai-calls", { to, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Confirm" }, at)
  const read = (org: Org, path: "messages" | "ai-calls", id: string) =>
    server.fetch(`/api/v1/${path}/${id}`, { key: org.key }).then((r) => r.json() as Promise<ActionRecord>)
  const settle = (org: Org, path: "messages" | "ai-calls", id: string) =>
    readUntil(() => read(org, path, id), (r) => FINAL.has(r.status ?? ""), 60_000)
  const eventsOf = async (id: string) =>
    (await server.db.query<{ type: string }>("SELECT type FROM events WHERE payload LIKE ? ORDER BY seq", [
      `%"id":"${id}"%`
    ])).map((e) => e.type)

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 30 })
    vapi = await VapiFake.start({ stepMs: 30 })
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "5000" }
    })
    const demo = await server.demo()
    simulated = { orgId: demo.orgId, key: demo.keys.live, sid: PN1, phone: "+14155550100" }
    const created = await server.adminJson<{ readonly id: string }>(["orgs", "create", "--name", "Providers Ltd"])
    await server.adminOk(["crm", "connect", created.id, "--account", "Pat Providers"])
    const minted = await server.adminJson<{ readonly key: string }>(
      ["keys", "create", "--org", created.id, "--name", "live", "--scopes", "all", "--mode", "live"]
    )
    real = { orgId: created.id, key: minted.key, sid: PN9, phone: "+14155550109" }
    await server.adminOk([
      "providers", "set", "--org", real.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", twilio.authToken, "--api-base", twilio.url
    ])
    await server.adminOk([
      "providers", "set", "--org", real.orgId, "--kind", "vapi", "--api-key", vapi.apiKey, "--webhook-secret", SECRET,
      "--api-base", vapi.url
    ])
    for (const org of [simulated, real]) {
      await server.adminOk(["bots", "add", "--org", org.orgId, "--id", "bot_sales", "--name", "Sales", "--provider-id", ASSISTANT])
      await server.adminOk([
        "numbers", "add", "--org", org.orgId, "--sid", org.sid, "--phone", org.phone, "--name", "Sales line",
        "--voice-bot", "bot_sales", "--provider-id", VAPI_PHONE
      ])
    }
    vapi.setServer(`${server.baseUrl}/providers/vapi/events?org=${real.orgId}`, SECRET)
  }, HEAVY)
  afterAll(async () => {
    await server?.dispose()
    await twilio?.stop()
    await vapi?.stop()
  })

  it("fails a scheduled text or call whose recipient the narrowed rules refuse, on every provider, and sends the rest", async () => {
    for (const org of [simulated, real]) {
      await server.adminOk(["orgs", "update", org.orgId, "--destinations", "US,GB", "--premium-numbers", "allow"])
    }
    const at = new Date(Date.now() + LEAD_MS).toISOString()
    const scheduled = []
    for (const org of [simulated, real]) {
      scheduled.push({
        org,
        ukText: await text(org, UK, at),
        premiumText: await text(org, US_PREMIUM, at),
        ukCall: await call(org, UK_CALL, at),
        usText: await text(org, US, at)
      })
    }
    // The operator narrows the rules while everything waits: the UK and premium-rate numbers are now refused.
    for (const org of [simulated, real]) {
      await server.adminOk(["orgs", "update", org.orgId, "--destinations", "US", "--premium-numbers", "refuse"])
    }
    // Their time comes now rather than in 30 s (as dispatch.test.ts makes its allowance texts due): what is
    // under test is what the dispatcher does then; the wait for a scheduled time is dispatch.test.ts's own.
    await server.db.query("UPDATE actions SET work_at = ? WHERE org_id IN (?, ?) AND status = 'Queued'", [
      Date.now(),
      simulated.orgId,
      real.orgId
    ])

    for (const { org, ukText, premiumText, ukCall, usText } of scheduled) {
      const label = org === real ? "Twilio and Vapi" : "simulator"
      const uk = await settle(org, "messages", ukText)
      expect(uk.status, label).toBe("Failed")
      expect(uk.errorMessage, label).toBe(
        `The organisation's destination rules no longer allow this recipient: ${UK} is in GB; the organisation sends only to US.`
      )
      const premium = await settle(org, "messages", premiumText)
      expect(premium.status, label).toBe("Failed")
      expect(premium.errorMessage, label).toContain(`${US_PREMIUM} is a premium-rate number`)
      const ukCalled = await settle(org, "ai-calls", ukCall)
      expect(ukCalled.status, label).toBe("Failed")
      expect(ukCalled.errorMessage, label).toContain(`${UK_CALL} is in GB; the organisation sends only to US`)
      expect(await eventsOf(ukText), label).toEqual(["message.queued", "message.failed"])
      expect(await eventsOf(premiumText), label).toEqual(["message.queued", "message.failed"])
      expect(await eventsOf(ukCall), label).toEqual(["ai_call.queued", "ai_call.failed"])
      // What the narrowed rules still allow goes out as before.
      expect((await settle(org, "messages", usText)).status, label).toBe("Delivered")
    }
    // No provider heard of the refused ones; Twilio got the allowed text.
    const to = (form: ReadonlyArray<readonly [string, string]>) => new Map(form).get("To")
    const twilioSends = twilio.requests.filter((r) => r.method === "POST").map((r) => to(r.form))
    expect(twilioSends).toEqual([US])
    expect(vapi.calls).toEqual([])
  }, HEAVY)
})
