/**
 * Real sending through Twilio (issue 16), end to end without the internet: a
 * live key of an organisation connected (`parley providers set --kind twilio
 * --api-base …`) to a local fake of Twilio's Messages API, written from its
 * documentation. Texts reach Delivered through Twilio's signed status
 * callbacks; Twilio's errors at send fail the action with Twilio's code, rate
 * limits and outages are retried without sending twice, refused credentials
 * fail at once, an answer lost on the wire is reconciled, and callbacks that
 * are duplicated, reordered, unsigned or mis-signed change nothing they
 * should not. Another organisation keeps the simulator.
 */
import twilioSdk from "twilio"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"
import { PN1 } from "./support/demo.js"

const HEAVY = 180_000
const WHATSAPP_SID = "PN00000000000000000000000000000003"
const TEMPLATE = `HX${"a1".repeat(16)}`
const NAMED_TEMPLATE = `HX${"b2".repeat(16)}`
const MISSING_TEMPLATE = `HX${"c3".repeat(16)}`
const SERVICE = `MG${"d4".repeat(16)}`

interface ActionRecord {
  readonly id: string
  readonly status?: string | null
  readonly sid?: string | null
  readonly errorMessage?: string | null
  readonly from?: string | null
}

let counter = 0
const idem = () => `twilio-${Date.now()}-${++counter}`

const FINAL = new Set(["Delivered", "Undelivered", "Failed"])

describe("Twilio", () => {
  let twilio: TwilioFake
  /** Twilio's Content API, on its own host as content.twilio.com is (the REST fake does not serve it). */
  let content: TwilioFake
  let server: TestServer
  let demo: DemoSummary

  const connect = (authToken = twilio.authToken) =>
    server.adminOk([
      "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", authToken, "--api-base", twilio.url, "--content-api-base", content.url
    ])
  const send = async (payload: Record<string, unknown>): Promise<string> => {
    const response = await server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ fromNumberSid: PN1, body: "Your order has shipped", ...payload })
    })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    return (JSON.parse(text) as { id: string }).id
  }
  const read = (id: string) =>
    server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }).then((r) => r.json() as Promise<ActionRecord>)
  const settle = (id: string) => readUntil(() => read(id), (r) => FINAL.has(r.status ?? ""))
  /** A status callback as Twilio would sign it with the organisation's token (the official package's signer). */
  const statusCallback = (actionId: string, fields: Record<string, string>, orgId = demo.orgId, token = twilio.authToken) => {
    const url = `${server.baseUrl}/providers/twilio/status?org=${orgId}&action=${actionId}`
    return fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": twilioSdk.getExpectedTwilioSignature(token, url, fields)
      },
      body: new URLSearchParams(fields)
    })
  }
  const createsFor = (to: string) =>
    twilio.requests.filter((r) => r.method === "POST" && r.form.some(([k, v]) => k === "To" && v.endsWith(to)))

  beforeAll(async () => {
    const templates = {
      contentTemplates: {
        [TEMPLATE]: "Hello {{1}}, your order ships {{2}}.",
        [NAMED_TEMPLATE]: "Hi {{first_name}}, see you at {{time}}."
      },
      contentDefaults: { [NAMED_TEMPLATE]: { time: "noon" } }
    }
    twilio = await TwilioFake.start({ stepMs: 30, ...templates })
    content = await TwilioFake.start({ ...templates, contentApi: true, accountSid: twilio.accountSid, authToken: twilio.authToken })
    // Polling many records a second would meet the per-key rate limit; it is not under test here.
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "5000" }
    })
    demo = await server.demo()
    await connect()
  }, HEAVY)
  afterAll(async () => {
    await server?.dispose()
    await twilio?.stop()
    await content?.stop()
  })

  it("sends a live text through Twilio and follows its signed callbacks to Delivered", async () => {
    const id = await send({ to: "+14155550123" })
    const record = await settle(id)
    expect(record.status).toBe("Delivered")
    const [created] = createsFor("+14155550123")
    expect(created?.authenticated).toBe(true)
    const form = new Map(created?.form ?? [])
    expect(form.get("From")).toBe("+14155550100")
    expect(form.get("Body")).toBe("Your order has shipped")
    expect(form.get("StatusCallback")).toContain(`/providers/twilio/status?org=${demo.orgId}&action=${id}`)
    const message = twilio.messages.find((m) => m.to === "+14155550123")
    expect(record.sid).toBe(message?.sid)
    // Parley answered every callback
    expect(twilio.callbacksFor(message?.sid ?? "").every((c) => c.answered === 204)).toBe(true)
    // events: queued, sent, delivered, in that order of status
    const events = await server.db.query<{ type: string; payload: string }>(
      "SELECT type, payload FROM events WHERE payload LIKE ? ORDER BY seq",
      [`%"id":"${id}"%`]
    )
    expect(events.map((e) => e.type)).toEqual(["message.queued", "message.sent", "message.delivered"])
  }, HEAVY)

  it.each([
    [TwilioFake.magic.invalidTo, "21211"],
    [TwilioFake.magic.unsubscribedTo, "21610"],
    [TwilioFake.magic.regionNotPermittedTo, "21408"]
  ])("fails a text to %s with Twilio's %s at send, without retrying", async (to, code) => {
    const id = await send({ to })
    const record = await settle(id)
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toContain(code)
    expect(createsFor(to)).toHaveLength(1)
  }, HEAVY)

  it("reports Undelivered with Twilio's error code from its callback", async () => {
    const id = await send({ to: TwilioFake.magic.undeliveredTo })
    const record = await settle(id)
    expect(record.status).toBe("Undelivered")
    expect(record.errorMessage).toContain("30003")
  }, HEAVY)

  it("fails a free-form WhatsApp message Twilio refuses outside the 24-hour session (63016)", async () => {
    const customer = TwilioFake.magic.whatsAppOutsideSession
    // Parley's own session check needs an inbound WhatsApp message first; Twilio's fake thinks the session is closed.
    const url = `${server.baseUrl}/providers/twilio/inbound`
    const fields = { From: `whatsapp:${customer}`, To: "whatsapp:+14155550199", Body: "Hi", MessageSid: `SM${"7".repeat(32)}` }
    const inbound = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": twilioSignature(twilio.authToken, url, Object.entries(fields))
      },
      body: new URLSearchParams(fields)
    })
    expect(inbound.status).toBe(200)
    const id = await send({ to: customer, fromNumberSid: WHATSAPP_SID, channel: "WhatsApp", body: "Free-form" })
    const record = await settle(id)
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toContain("63016")
    const [created] = createsFor(customer)
    expect(new Map(created?.form ?? []).get("From")).toBe("whatsapp:+14155550199")
  }, HEAVY)

  it("refuses inbound messages to a Twilio-connected organisation unless signed with its auth token", async () => {
    const url = `${server.baseUrl}/providers/twilio/inbound`
    const fields = { From: "+447700900555", To: "+14155550100", Body: "spoofed", MessageSid: `SM${"8".repeat(32)}` }
    const forged = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": twilioSignature("not-the-token", url, Object.entries(fields))
      },
      body: new URLSearchParams(fields)
    })
    expect(forged.status).toBe(401)
    const unsigned = await fetch(`${server.baseUrl}/carrier/inbound`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields)
    })
    expect(unsigned.status).toBe(401)
  })

  it("retries a rate-limited send (429 with Retry-After) and a 5xx, sending once", async () => {
    twilio.failNext(2, 429, "1")
    twilio.failNext(1, 500)
    const to = "+14155550131"
    const id = await send({ to })
    const record = await settle(id)
    expect(record.status).toBe("Delivered")
    expect(createsFor(to)).toHaveLength(4)
    expect(twilio.messages.filter((m) => m.to === to)).toHaveLength(1)
  }, HEAVY)

  it("reconciles an answer lost on the wire instead of sending again", async () => {
    // The answer is lost and the callbacks do not get through either: only asking Twilio can tell it was sent.
    twilio.dropNextAfterAccept()
    twilio.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550132"
    const id = await send({ to })
    const record = await settle(id)
    expect(record.status).toBe("Delivered")
    expect(twilio.messages.filter((m) => m.to === to)).toHaveLength(1)
    // the retry looked first (a GET of the message list) and did not create another
    expect(twilio.requests.some((r) => r.method === "GET" && r.query.some(([k, v]) => k === "To" && v === to))).toBe(true)
    expect(createsFor(to)).toHaveLength(1)
    expect(record.sid).toBe(twilio.messages.find((m) => m.to === to)?.sid)
  }, HEAVY)

  it("loses nothing and sends nothing twice when Parley is killed (-9) between Twilio's accepting and its answer", async () => {
    twilio.dropNextAfterAccept()
    twilio.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550139"
    const id = await send({ to })
    await readUntil(async () => twilio.messages.filter((m) => m.to === to).length, (n) => n > 0)
    // Killed once it has met the lost answer (its outcome journalled as unknown), so that this test covers
    // the unknown outcome; a kill while the request is out, or right after the answer, is crash-twilio.test.ts.
    await readUntil(async () =>
      (await server.db.query<{ last_outcome: string }>(
        "SELECT last_outcome FROM provider_submissions WHERE action_id = ?",
        [id]
      ))[0]?.last_outcome, (outcome) => outcome !== undefined && outcome !== "pending")
    await server.restart("SIGKILL")
    // then the action is reconciled (Twilio asked), not resent
    const record = await readUntil(() => read(id), (r) => FINAL.has(r.status ?? ""), 60_000)
    expect(record.status).toBe("Delivered")
    expect(twilio.messages.filter((m) => m.to === to)).toHaveLength(1)
    expect(createsFor(to)).toHaveLength(1)
  }, HEAVY)

  it("loses nothing when the callbacks are lost while Parley is down (-9): it asks Twilio itself", async () => {
    twilio.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550140"
    const id = await send({ to })
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await server.restart("SIGKILL")
    await twilio.settled()
    const record = await readUntil(() => read(id), (r) => FINAL.has(r.status ?? ""), 60_000)
    expect(record.status).toBe("Delivered")
    const sid = twilio.messages.find((m) => m.to === to)?.sid ?? ""
    expect(twilio.callbacksFor(sid).every((c) => c.answered !== 204)).toBe(true)
    expect(twilio.requests.some((r) => r.method === "GET" && r.path.endsWith(`/Messages/${sid}.json`))).toBe(true)
    expect(createsFor(to)).toHaveLength(1)
  }, HEAVY)

  it.each([
    [429, "+14155550141"],
    [500, "+14155550142"]
  ])("after a %s, never takes another action's identical message for this one", async (status, to) => {
    // An earlier text with the same words to the same person, already delivered.
    const first = await send({ to, body: "Same words" })
    expect((await settle(first)).status).toBe("Delivered")
    twilio.failNext(1, status, "1")
    const second = await send({ to, body: "Same words" })
    const record = await settle(second)
    expect(record.status).toBe("Delivered")
    const messages = twilio.messages.filter((m) => m.to === to)
    expect(messages).toHaveLength(2)
    expect(record.sid).not.toBe((await read(first)).sid)
    expect(messages.map((m) => m.sid)).toContain(record.sid)
  }, HEAVY)

  it("waits out Twilio being down and sends once when it is back", async () => {
    await twilio.down()
    const to = "+14155550133"
    let id = ""
    try {
      id = await send({ to })
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect((await read(id)).status).toBe("Sending")
    } finally {
      await twilio.up()
    }
    const record = await settle(id)
    expect(record.status).toBe("Delivered")
    expect(twilio.messages.filter((m) => m.to === to)).toHaveLength(1)
  }, HEAVY)

  it("ignores duplicated and reordered callbacks: a delivered text never goes back to sent", async () => {
    twilio.tweakNextCallbacks({ duplicate: true, reverse: true })
    const to = "+14155550134"
    const id = await send({ to })
    await readUntil(() => read(id), (r) => r.status === "Delivered")
    await twilio.settled()
    expect((await read(id)).status).toBe("Delivered")
    const events = await server.db.query<{ type: string }>(
      "SELECT type FROM events WHERE payload LIKE ? ORDER BY seq",
      [`%"id":"${id}"%`]
    )
    expect(events.map((e) => e.type)).toEqual(["message.queued", "message.delivered"])
  }, HEAVY)

  it.each(["none", "wrong"] as const)("refuses callbacks with signature %s, changing nothing", async (signature) => {
    twilio.tweakNextCallbacks({ signature })
    const to = signature === "none" ? "+14155550135" : "+14155550136"
    const id = await send({ to })
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await twilio.settled()
    const message = twilio.messages.find((m) => m.to === to)
    expect(twilio.callbacksFor(message?.sid ?? "").length).toBeGreaterThan(0)
    expect(twilio.callbacksFor(message?.sid ?? "").every((c) => c.answered === 401)).toBe(true)
    expect((await read(id)).status).toBe("Sending")
  }, HEAVY)

  it("fails at once, saying what to fix, when Twilio refuses the organisation's credentials", async () => {
    await connect("wrong-token-00000000000000000000")
    try {
      const to = "+14155550137"
      const id = await send({ to })
      const record = await settle(id)
      expect(record.status).toBe("Failed")
      expect(record.errorMessage).toContain("20003")
      expect(record.errorMessage).toContain("parley providers set")
      expect(record.errorMessage).not.toContain("wrong-token")
      expect(createsFor(to)).toHaveLength(1)
    } finally {
      await connect()
    }
  }, HEAVY)

  it("never shows the credentials again; clearing returns the organisation to the simulator", async () => {
    // The real process: what `providers show` prints is under test.
    const shown = await server.cli(["providers", "show", "--org", demo.orgId, "--json"])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toContain(twilio.accountSid)
    expect(shown.stdout).not.toContain(twilio.authToken)
    const [row] = await server.db.query<{ secrets: string }>("SELECT secrets FROM provider_accounts WHERE org_id = ?", [
      demo.orgId
    ])
    expect(row?.secrets).toMatch(/^enc:v1:/)
    expect(row?.secrets).not.toContain(twilio.authToken)
    await server.adminOk(["providers", "clear", "--org", demo.orgId, "--kind", "twilio"])
    try {
      const to = "+14155550138"
      const id = await send({ to })
      expect((await settle(id)).status).toBe("Delivered")
      expect(createsFor(to)).toHaveLength(0)
    } finally {
      await connect()
    }
  }, HEAVY)
  describe("against Twilio's official API (issue 24)", () => {
    const template = async (contentSid: string, variables: Record<string, string>, to: string) => {
      const id = await send({
        to,
        fromNumberSid: WHATSAPP_SID,
        channel: "WhatsApp",
        body: "Text the recipient never sees",
        whatsAppContentSid: contentSid,
        whatsAppContentVariables: variables
      })
      return { id, record: await settle(id) }
    }

    it("sends a template's {{1}} variables keyed as Twilio expects, and records the text the recipient saw", async () => {
      const to = "+14155550151"
      const { record } = await template(TEMPLATE, { "{{1}}": "Ada", "{{2}}": "on Friday" }, to)
      expect(record.status).toBe("Delivered")
      const [created] = createsFor(to)
      expect(JSON.parse(new Map(created?.form ?? []).get("ContentVariables") ?? "{}")).toEqual({ "1": "Ada", "2": "on Friday" })
      expect(twilio.messages.find((m) => m.to === `whatsapp:${to}`)?.body).toBe("Hello Ada, your order ships on Friday.")
      expect((await read(record.id) as ActionRecord & { body?: string }).body).toBe("Hello Ada, your order ships on Friday.")
      // Read from the Content API's own base (--content-api-base), never from the REST base.
      expect(content.contentReads).toContain(TEMPLATE)
      expect(twilio.requests.filter((r) => r.path.startsWith("/v1/Content"))).toEqual([])
    }, HEAVY)

    it("takes a template's named variables ({{first_name}}), the template's defaults filling the rest", async () => {
      const to = "+14155550152"
      const { record } = await template(NAMED_TEMPLATE, { "{{first_name}}": "Grace" }, to)
      expect(record.status).toBe("Delivered")
      expect(JSON.parse(new Map(createsFor(to)[0]?.form ?? []).get("ContentVariables") ?? "{}")).toEqual({ first_name: "Grace" })
      expect((await read(record.id) as ActionRecord & { body?: string }).body).toBe("Hi Grace, see you at noon.")
    }, HEAVY)

    it("records the template's text even when Twilio's callbacks finished the message before its answer", async () => {
      twilio.tweakNextCallbacks({ beforeAnswer: true })
      const to = "+14155550158"
      const { record } = await template(TEMPLATE, { "{{1}}": "Alan", "{{2}}": "today" }, to)
      expect(record.status).toBe("Delivered")
      const body = await readUntil(
        async () => (await read(record.id) as ActionRecord & { body?: string }).body,
        (text) => text !== "Text the recipient never sees",
        10_000
      )
      expect(body).toBe("Hello Alan, your order ships today.")
    }, HEAVY)

    it("records a placeholder naming the template and its variables when the Content API cannot say", async () => {
      const to = "+14155550153"
      const { record } = await template(MISSING_TEMPLATE, { "{{1}}": "Ada" }, to)
      expect(record.status).toBe("Delivered")
      const body = (await read(record.id) as ActionRecord & { body?: string }).body
      expect(body).toContain(MISSING_TEMPLATE)
      expect(body).toContain("Ada")
      expect(body).not.toContain("never sees")
    }, HEAVY)

    it("keeps the chosen number through a Messaging Service: From is sent with MessagingServiceSid", async () => {
      await server.adminOk([
        "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
        "--auth-token", twilio.authToken, "--api-base", twilio.url, "--messaging-service-sid", SERVICE
      ])
      try {
        const to = "+14155550154"
        const id = await send({ to })
        expect((await settle(id)).status).toBe("Delivered")
        const form = new Map(createsFor(to)[0]?.form ?? [])
        expect(form.get("MessagingServiceSid")).toBe(SERVICE)
        expect(form.get("From")).toBe("+14155550100")
        expect(twilio.messages.find((m) => m.to === to)?.from).toBe("+14155550100")
      } finally {
        await connect()
      }
    }, HEAVY)

    it("follows callbacks that arrive before Twilio's answer to the create", async () => {
      twilio.tweakNextCallbacks({ beforeAnswer: true })
      const to = "+14155550155"
      const id = await send({ to })
      const record = await settle(id)
      expect(record.status).toBe("Delivered")
      const message = twilio.messages.find((m) => m.to === to)
      expect(record.sid).toBe(message?.sid)
      expect(twilio.callbacksFor(message?.sid ?? "").every((c) => c.answered === 204)).toBe(true)
      expect(createsFor(to)).toHaveLength(1)
    }, HEAVY)
  })

  describe("forged callbacks (issue 22)", () => {
    it("a signed report moves no action Twilio never got: a scheduled text stays Queued", async () => {
      const id = await send({ to: "+14155550156", scheduledFor: new Date(Date.now() + 3_600_000).toISOString() })
      const answer = await statusCallback(id, { MessageSid: "SMforged", MessageStatus: "delivered" })
      expect(answer.status).toBe(204)
      const record = await read(id)
      expect(record.status).toBe("Queued")
      expect(record.sid ?? null).toBeNull()
    }, HEAVY)

    it("a signed report under another MessageSid changes nothing", async () => {
      twilio.tweakNextCallbacks({ signature: "none" })
      const to = "+14155550157"
      const id = await send({ to })
      await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
      const answer = await statusCallback(id, { MessageSid: `SM${"0".repeat(32)}`, MessageStatus: "undelivered", ErrorCode: "30003" })
      expect(answer.status).toBe(204)
      expect((await read(id)).status).toBe("Sending")
    }, HEAVY)

    it("answers the same 401 for an organisation without Twilio, an unknown one, and a wrong signature", async () => {
      const answers = await Promise.all([
        statusCallback("1", { MessageSid: "SM1", MessageStatus: "sent" }, "org_does_not_exist"),
        statusCallback("1", { MessageSid: "SM1", MessageStatus: "sent" }, demo.orgId, "not-the-token"),
        fetch(`${server.baseUrl}/providers/twilio/status?action=1`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "MessageSid=SM1&MessageStatus=sent"
        })
      ])
      const bodies = await Promise.all(answers.map(async (a) => {
        const json = await a.json() as { error: { code: string; message: string } }
        return [a.status, json.error.code, json.error.message]
      }))
      expect(bodies).toEqual([bodies[0], bodies[0], bodies[0]])
      expect(bodies[0]?.[0]).toBe(401)
    }, HEAVY)
  })
})
