/**
 * Consent on a real server, on both stores: a STOP through the signed Twilio webhook or `parley inbound`
 * refuses the very next POST /messages (and /ai-calls) with 403 RECIPIENT_OPTED_OUT, for live and test keys;
 * a text accepted before the STOP and not yet handed to the carrier fails at dispatch; START lifts it; the
 * administrator's `parley optouts` and the organisation's settings (`--opt-out-calls`, `--opt-out-words`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson, readUntil } from "./support/wire.js"

const TOKEN = "consent-carrier-token"
const LINE = "+14155550100"

describe("consent: STOP means stop", () => {
  let server: TestServer
  let demo: DemoSummary
  let n = 0

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_CARRIER_AUTH_TOKEN: TOKEN, PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  })
  afterAll(async () => {
    await server.dispose()
  })

  const text = (to: string, key = demo.keys.live) =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key,
      headers: { "idempotency-key": `consent-${++n}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: "Your appointment is tomorrow at 10" })
    })
  const call = (to: string, key = demo.keys.live) =>
    server.fetch("/api/v1/ai-calls", {
      method: "POST",
      key,
      headers: { "idempotency-key": `consent-${++n}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Hi" })
    })
  const twilioInbound = (from: string, body: string) => {
    const fields = { From: from, To: LINE, Body: body, MessageSid: `SMconsent${++n}` }
    const url = `${server.baseUrl}/carrier/inbound`
    return fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(TOKEN, url, Object.entries(fields)) },
      body: new URLSearchParams(fields).toString()
    })
  }
  const cliInbound = (from: string, body: string) =>
    server.adminJson(["inbound", "--org", demo.orgId, "--from", from, "--to", LINE, "--body", body])

  it("a STOP through the signed Twilio webhook refuses the next text and call, for live and test keys; START lifts it", async () => {
    const customer = "+14155550131"
    await readJson(await text(customer), 202)
    expect((await twilioInbound(customer, "Stop")).status).toBe(200)
    const refused = await expectError(await text(customer), 403, "RECIPIENT_OPTED_OUT")
    expect(refused.message).toMatch(/^to: \+14155550131 opted out of SMS texts on .* by replying with an opt-out keyword/)
    await expectError(await text(customer, demo.keys.test), 403, "RECIPIENT_OPTED_OUT")
    await expectError(await call(customer), 403, "RECIPIENT_OPTED_OUT")
    await expectError(await call(customer, demo.keys.test), 403, "RECIPIENT_OPTED_OUT")
    // Nobody else is affected.
    await readJson(await text("+14155550132"), 202)
    expect((await twilioInbound(customer, "START")).status).toBe(200)
    await readJson(await text(customer), 202)
    await readJson(await call(customer), 202)
  })

  it("a STOP through `parley inbound` refuses the next text at once", async () => {
    const customer = "+14155550133"
    await cliInbound(customer, "unsubscribe!")
    await expectError(await text(customer), 403, "RECIPIENT_OPTED_OUT")
  })

  it("a text accepted before the STOP and not yet handed over fails at dispatch, naming the opt-out", async () => {
    const customer = "+14155550134"
    // Held by a sending window that is closed now (it opens in the next hour of a far-away zone's night).
    await server.adminJson(["orgs", "update", demo.orgId, "--sending-hours", "Sun 03:00-03:01", "--timezone", "Pacific/Kiritimati"])
    const { id } = await readJson<{ id: string }>(await text(customer), 202)
    await cliInbound(customer, "STOP")
    await server.adminJson(["orgs", "update", demo.orgId, "--sending-hours", "always"])
    const record = await readUntil(
      async () => readJson<{ status: string; errorMessage: string | null }>(await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }), 200),
      (r) => r.status !== "Queued"
    )
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toMatch(/^Not sent: \+14155550134 opted out of SMS texts on /)
  })

  it("`parley optouts add|list|remove`: an administrator's opt-out of calls only, its history, and lifting it", async () => {
    const customer = "+14155550135"
    const added = await server.adminJson<{ channels: ReadonlyArray<string>; source: string }>(
      ["optouts", "add", "--org", demo.orgId, "--phone", customer, "--channels", "Call", "--reason", "asked on the phone"]
    )
    expect(added).toMatchObject({ channels: ["Call"], source: "cli" })
    await expectError(await call(customer), 403, "RECIPIENT_OPTED_OUT")
    await readJson(await text(customer), 202)
    const listed = await server.adminJson<{ items: ReadonlyArray<{ phone: string; reason: string }>; history: ReadonlyArray<{ change: string }> }>(
      ["optouts", "list", "--org", demo.orgId, "--phone", customer]
    )
    expect(listed.items).toMatchObject([{ phone: customer, reason: "asked on the phone" }])
    expect(listed.history.map((h) => h.change)).toEqual(["added"])
    await server.adminJson(["optouts", "remove", "--org", demo.orgId, "--phone", customer])
    await readJson(await call(customer), 202)
    const after = await server.adminJson<{ items: ReadonlyArray<unknown>; history: ReadonlyArray<{ change: string }> }>(
      ["optouts", "list", "--org", demo.orgId, "--phone", customer]
    )
    expect(after.items).toEqual([])
    expect(after.history.map((h) => h.change)).toEqual(["removed", "added"])
    const missing = await server.admin(["optouts", "remove", "--org", demo.orgId, "--phone", customer])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain("has not opted out")
  })

  it("the organisation's own words opt out, and with --opt-out-calls off a STOP leaves calls alone", async () => {
    await server.adminJson(["orgs", "update", demo.orgId, "--opt-out-words", "ARRET,Baja", "--opt-out-calls", "off"])
    const customer = "+14155550136"
    await cliInbound(customer, "baja.")
    await expectError(await text(customer), 403, "RECIPIENT_OPTED_OUT")
    await readJson(await call(customer), 202)
    await server.adminJson(["orgs", "update", demo.orgId, "--opt-out-words", "", "--opt-out-calls", "on"])
  })
})
