/**
 * Keyword replies and opt-out events on a real server, on both stores (issue 32):
 * - with `--keyword-replies parley`, a STOP through the signed Twilio webhook gets exactly one confirmation at
 *   Twilio (the fake), sent though the number has just opted out, outside the sending hours and with no
 *   allowance left; a carrier's retry of the same message gets none; HELP and START get theirs, the
 *   organisation's own text where it wrote one;
 * - with `provider` (the default) and `off`, none is queued or sent;
 * - `optout.created` and `optout.deleted` reach a signed webhook endpoint for API PUT/DELETE and for keyword
 *   STOP/START, verified with the `standardwebhooks` package, the entry as data.
 */
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { CallbackReceiver } from "./support/fakes/CallbackReceiver.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"

interface OptOutEvent {
  readonly type: string
  readonly timestamp: string
  readonly data: { readonly phone: string; readonly channels: ReadonlyArray<string>; readonly source: string; readonly cause: string | null }
}

describe("keyword replies and opt-out events", () => {
  let twilio: TwilioFake
  let server: TestServer
  let demo: DemoSummary
  let receiver: CallbackReceiver
  let secret: string
  let line: string
  let n = 0

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 10 })
    receiver = await CallbackReceiver.start()
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    demo = await server.demo()
    line = demo.numbers[0]!.phoneNumber
    await server.adminJson([
      "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", twilio.authToken, "--api-base", twilio.url
    ])
    secret = (await server.adminJson<{ secret: string }>([
      "webhooks", "add", "--org", demo.orgId, "--url", receiver.at("/events"), "--events", "optout.created,optout.deleted"
    ])).secret
  }, 300_000)
  afterAll(async () => {
    await server?.dispose()
    await twilio?.stop()
    await receiver?.stop()
  })

  /** An inbound text through Twilio's webhook, signed with the organisation's Twilio auth token. */
  const inbound = async (from: string, body: string, sid = `SMkeyword${++n}${Date.now()}`) => {
    const fields = { From: from, To: line, Body: body, MessageSid: sid }
    const url = `${server.baseUrl}/providers/twilio/inbound`
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": twilioSignature(twilio.authToken, url, Object.entries(fields))
      },
      body: new URLSearchParams(fields).toString()
    })
    expect(response.status).toBe(200)
    return sid
  }
  const outboundTo = (to: string) =>
    server.db.query<{ status: string; body: string }>(
      "SELECT status, body FROM actions WHERE org_id = ? AND counterpart = ? AND direction = 'Outbound' ORDER BY id",
      [demo.orgId, to]
    )
  const delivered = (to: string, count: number) =>
    until(async () => {
      const rows = await outboundTo(to)
      return rows.length === count && rows.every((r) => r.status === "Delivered") ? rows : undefined
    }, { timeoutMs: 60_000, what: `${count} answer(s) to ${to} delivered` })
  const atTwilio = (to: string) => twilio.messages.filter((m) => m.to === to).map((m) => m.body)

  it("parley: one confirmation of a STOP at Twilio, past the opt-out, the sending hours, the recipient's hours and an empty allowance; none for a retry", async () => {
    await server.adminJson([
      "orgs", "update", demo.orgId, "--keyword-replies", "parley", "--sms-allowance", "0",
      "--sending-hours", "Sun 03:00-03:01", "--recipient-hours", "Sun 03:00-03:01", "--timezone", "Pacific/Kiritimati"
    ])
    const customer = "+14155550141"
    const sid = await inbound(customer, "Stop.")
    const [answer] = await delivered(customer, 1)
    const organisation = await server.adminJson<{ name: string }>(["orgs", "show", demo.orgId])
    const confirmation = `${organisation.name}: You will receive no more messages. Reply START to opt back in.`
    expect(answer?.body).toBe(confirmation)
    expect(atTwilio(customer)).toEqual([confirmation])
    // The opt-out stands: the API refuses the next text.
    await expectError(
      await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `keyword-${++n}` },
        body: JSON.stringify({ to: customer, fromNumberSid: demo.numbers[0]!.sid, body: "Still there?" })
      }),
      403,
      "RECIPIENT_OPTED_OUT"
    )
    // Twilio retries the webhook (it thought the first failed): the message is stored once and answered once.
    await inbound(customer, "Stop.", sid)
    expect(await outboundTo(customer)).toHaveLength(1)
    await server.adminJson(["orgs", "update", demo.orgId, "--sms-allowance", "unlimited", "--sending-hours", "always", "--recipient-hours", "off"])
  })

  it("parley: HELP gets the organisation's own text, START the default, each once", async () => {
    await server.adminJson(["orgs", "update", demo.orgId, "--keyword-replies", "parley", "--help-text", "Acme: call 555 0100 for help."])
    const customer = "+14155550142"
    await inbound(customer, "help")
    await delivered(customer, 1)
    await inbound(customer, "STOP")
    await delivered(customer, 2)
    await inbound(customer, "start")
    const answers = (await delivered(customer, 3)).map((r) => r.body)
    expect(answers[0]).toBe("Acme: call 555 0100 for help.")
    expect(answers[1]).toMatch(/: You will receive no more messages\. Reply START to opt back in\.$/)
    expect(answers[2]).toMatch(/: You will receive messages again\. Reply STOP to opt out\.$/)
    expect(atTwilio(customer)).toEqual(answers)
    // An ordinary reply is no keyword: nothing is answered.
    await inbound(customer, "See you on Friday")
    expect(await outboundTo(customer)).toHaveLength(3)
    await server.adminJson(["orgs", "update", demo.orgId, "--help-text", ""])
  })

  for (const mode of ["provider", "off"] as const) {
    it(`${mode}: a STOP is recorded and Parley queues and sends no answer`, async () => {
      await server.adminJson(["orgs", "update", demo.orgId, "--keyword-replies", mode])
      const customer = mode === "provider" ? "+14155550143" : "+14155550144"
      // The answer would be queued in the webhook's own transaction: once it has answered, there is none.
      await inbound(customer, "STOP")
      await inbound(customer, "HELP")
      const optOut = await readJson<{ source: string }>(
        await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(customer)}`, { key: demo.keys.live }),
        200
      )
      expect(optOut.source).toBe("keyword")
      expect(await outboundTo(customer)).toEqual([])
      expect(atTwilio(customer)).toEqual([])
    })
  }

  it("optout.created and optout.deleted reach the signed endpoint for API PUT/DELETE and keyword STOP/START", async () => {
    const verifier = new Webhook(secret)
    const eventsFor = (phone: string) =>
      receiver.received.flatMap((r) => {
        const headers = Object.fromEntries(Object.entries(r.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])))
        const event = verifier.verify(r.body, headers) as OptOutEvent
        return event.data.phone === phone ? [event] : []
      })
    const waitFor = (phone: string, count: number) =>
      until(async () => {
        const events = eventsFor(phone)
        return events.length >= count ? events : undefined
      }, { timeoutMs: 30_000, what: `${count} event(s) for ${phone}` })

    const byApi = "+14155550145"
    const put = () =>
      server.fetch(`/api/v1/opt-outs/${encodeURIComponent(byApi)}`, {
        method: "PUT",
        key: demo.keys.live,
        body: JSON.stringify({ channels: ["SMS"], reason: "Asked by email" })
      })
    await readJson(await put(), 200)
    await readJson(await put(), 200) // The same again changes nothing, and says nothing.
    const removed = await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(byApi)}`, { method: "DELETE", key: demo.keys.live })
    expect(removed.status).toBe(204)
    // Deliveries are concurrent (their order is not promised): compared by type.
    const byType = (events: ReadonlyArray<OptOutEvent>) => [...events].sort((a, b) => a.type.localeCompare(b.type))
    const api = byType(await waitFor(byApi, 2))
    expect(api.map((e) => [e.type, e.data.source, e.data.channels])).toEqual([
      ["optout.created", "api", ["SMS"]],
      ["optout.deleted", "api", ["SMS"]]
    ])

    const byKeyword = "+14155550146"
    await inbound(byKeyword, "UNSUBSCRIBE")
    await inbound(byKeyword, "START")
    const keyword = byType(await waitFor(byKeyword, 2))
    expect(keyword.map((e) => [e.type, e.data.source])).toEqual([["optout.created", "keyword"], ["optout.deleted", "keyword"]])
    expect(keyword[0]?.data.cause).toMatch(/^inbound message /)
    expect(keyword[0]?.data.channels).toEqual(["SMS", "WhatsApp", "Call"])
    // Nothing else was posted to an endpoint that asked only for opt-out events.
    expect(receiver.received.map((r) => (JSON.parse(r.body) as { type: string }).type).filter((t) => !t.startsWith("optout."))).toEqual([])
  })
})
