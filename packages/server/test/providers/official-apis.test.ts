/**
 * Parley's provider code against the providers' official definitions (issue 24): Vapi's endings from the
 * `@vapi-ai/server-sdk` list, answers decoded as loosely as the official schemas type them, WhatsApp
 * variables keyed as Twilio expects, Vapi's credential modes, and the fakes refusing what the real APIs
 * refuse. The callback gate's buckets are here too, as plain functions.
 */
import { createHmac } from "node:crypto"
import { createServer, type Server } from "node:http"
import { Vapi } from "@vapi-ai/server-sdk"
import { Effect, Either, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runWithLoopback } from "../support/loopbackProviders.js"
import { Buckets } from "../../src/providers/CallbackGate.js"
import { sendMessage, twilioContentVariables } from "../../src/providers/twilio/TwilioClient.js"
import { createCall, verifyVapiSecret } from "../../src/providers/vapi/VapiClient.js"
import { vapiNumberId } from "../../src/providers/vapi/VapiProvider.js"
import { callDetailsRecheck } from "../../src/providers/vapi/VapiReports.js"
import {
  VAPI_BUSY_REASONS,
  VAPI_COMPLETED_REASONS,
  VAPI_NO_ANSWER_REASONS,
  vapiEnding
} from "../../src/providers/vapi/VapiStatuses.js"
import { TwilioFake } from "../support/fakes/TwilioFake.js"
import { VAPI_ENDED_REASONS, VapiFake } from "../support/fakes/VapiFake.js"

describe("Vapi endedReason", () => {
  it("names only values of the SDK's list as successes, no answer or busy", () => {
    const known = new Set<string>(Object.values(Vapi.CallEndedReason))
    expect(known.size).toBe(597)
    for (const reason of [...VAPI_COMPLETED_REASONS, ...VAPI_NO_ANSWER_REASONS, ...VAPI_BUSY_REASONS]) {
      expect(known.has(reason), reason).toBe(true)
    }
  })

  it("maps every one of the SDK's 597 values, keeping Vapi's reason whenever the call did not take place", () => {
    for (const reason of VAPI_ENDED_REASONS) {
      const ending = vapiEnding(reason)
      expect(ending.errorMessage === null, reason).toBe(ending.status === "Completed")
      if (ending.status !== "Completed") expect(ending.errorMessage).toBe(reason)
    }
  })

  it.each([
    "assistant-not-valid",
    "manually-canceled",
    "worker-shutdown",
    "call-deleted",
    "call.forwarding.operator-busy",
    "vonage-disconnected",
    "scheduled-call-deleted",
    "a-reason-vapi-adds-next-year"
  ])("%s is not Completed: Failed, with the reason", (reason) => {
    expect(vapiEnding(reason)).toEqual({ status: "Failed", errorMessage: reason })
  })

  it.each([
    ["customer-ended-call", "Completed"],
    ["assistant-said-end-call-phrase", "Completed"],
    ["silence-timed-out", "Completed"],
    ["customer-did-not-answer", "No Answer"],
    ["voicemail", "No Answer"],
    ["customer-busy", "Busy"],
    ["twilio-failed-to-connect-call", "Failed"],
    // Vapi's SIP troubleshooting: 408 and 480 are the callee not answering or not reachable now.
    ["call.in-progress.error-providerfault-outbound-sip-408-request-timeout", "No Answer"],
    ["call.in-progress.error-providerfault-outbound-sip-480-temporarily-unavailable", "No Answer"],
    ["call.in-progress.error-providerfault-outbound-sip-503-service-unavailable", "Failed"]
  ])("%s is %s", (reason, status) => {
    expect(vapiEnding(reason).status).toBe(status)
  })
})

describe("a number's Vapi phone number id, under its own name", () => {
  const VAPI_ID = "3f8a1c2e-5b6d-4e7f-8a9b-0c1d2e3f4a5b"
  const PN = `PN${"a".repeat(32)}`

  it("is the id named vapi:, wherever it stands among the number's ids", () => {
    expect(vapiNumberId([PN, `vapi:${VAPI_ID}`])).toBe(VAPI_ID)
    expect(vapiNumberId(["twilio:PNsomething", `vapi:${VAPI_ID}`, "another-bare-id"])).toBe(VAPI_ID)
  })

  it("is no guess: another provider's id that does not start with PN is never taken for Vapi's", () => {
    // A bare id beside another one: which is Vapi's cannot be told (before: the first not starting with PN).
    expect(vapiNumberId(["carrier-number-7", VAPI_ID])).toBeUndefined()
    expect(vapiNumberId([PN, VAPI_ID])).toBeUndefined()
    expect(vapiNumberId(["twilio:PN123", "retell:+14155550100"])).toBeUndefined()
    // A lone bare id from before ids were named still works, beside ids named for other providers.
    expect(vapiNumberId([VAPI_ID])).toBe(VAPI_ID)
    expect(vapiNumberId([`twilio:${PN}`, VAPI_ID])).toBe(VAPI_ID)
  })
})

describe("a Vapi call read again (recheck)", () => {
  const call = (status: string | null, endedReason: string | null) =>
    ({ id: "call-1", status, endedReason, transcript: "AI: hello", recordingUrl: null })

  it("ended with no endedReason yet says nothing: it waits for the reason, as Retell's recheck does", () => {
    expect(Option.isNone(callDetailsRecheck(call("ended", null)))).toBe(true)
    expect(Option.isNone(callDetailsRecheck(call(null, null)))).toBe(true)
  })

  it("ended with a reason ends the call by it; a call under way keeps its status", () => {
    expect(callDetailsRecheck(call("ended", "customer-ended-call"))).toEqual(
      Option.some({ status: "Completed", providerStatus: "customer-ended-call", body: "AI: hello" })
    )
    const timeout = "call.in-progress.error-providerfault-outbound-sip-480-temporarily-unavailable"
    expect(callDetailsRecheck(call("ended", timeout))).toEqual(
      Option.some({ status: "No Answer", providerStatus: timeout, errorMessage: timeout })
    )
    expect(callDetailsRecheck(call("in-progress", null))).toEqual(
      Option.some({ status: "In Progress", providerStatus: "in-progress" })
    )
  })
})

describe("answers as the official schemas type them", () => {
  let server: Server
  let base = ""
  let answer: unknown = {}
  beforeAll(async () => {
    server = createServer((_request, response) => {
      response.writeHead(201, { "content-type": "application/json" })
      response.end(JSON.stringify(answer))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("a Twilio Message with a null sid and to is a sent message, not an unknown outcome", async () => {
    answer = { sid: null, to: null, status: "accepted", from: null, body: "Hi", date_created: null }
    const sent = await runWithLoopback(Effect.either(sendMessage(
      { apiBase: base, accountSid: `AC${"0".repeat(32)}`, authToken: "token" },
      { to: "+14155550100", messagingServiceSid: `MG${"0".repeat(32)}`, body: "Hi", statusCallback: "http://127.0.0.1/cb" }
    )))
    expect(Either.isRight(sent) ? sent.right : sent.left).toMatchObject({ sid: null, status: "accepted" })
  })

  it("a Vapi Call without status is a created call, not an unknown outcome", async () => {
    answer = { id: "call-1", orgId: "org-1", createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() }
    const created = await runWithLoopback(Effect.either(createCall(
      { apiBase: base, apiKey: "key" },
      { assistantId: "a", phoneNumberId: "p", customerNumber: "+14155550100", variableValues: {}, metadata: {} }
    )))
    expect(Either.isRight(created) ? created.right : created.left).toEqual({ id: "call-1", status: null, endedReason: null })
  })
})

describe("WhatsApp content variables", () => {
  it("are sent keyed as Twilio expects: {{1}} as 1, {{first_name}} as first_name", () => {
    expect(twilioContentVariables({ "{{1}}": "Ada", "{{first_name}}": "Grace" })).toEqual({ "1": "Ada", first_name: "Grace" })
  })
})

describe("Vapi server-message credentials", () => {
  const body = JSON.stringify({ message: { type: "status-update", status: "ringing", call: { id: "c" } } })
  const now = Date.now()
  const request = (headers: Record<string, string>, at = now) =>
    ({ headers, rawBody: body, method: "POST", url: "https://parley.example/providers/vapi/events?org=o", now: at })
  const hmac = (algorithm: string, encoding: "hex" | "base64", payload: string) =>
    createHmac(algorithm, "secret").update(payload).digest(encoding)

  it.each([
    ["sha256", "hex", ""],
    ["sha256", "base64", ""],
    ["sha512", "hex", "sha512="],
    ["sha512", "base64", ""]
  ] as const)("HMAC %s %s (prefix %j) with Vapi's default headers and payload", (algorithm, encoding, prefix) => {
    const timestamp = String(now)
    const signature = prefix + hmac(algorithm, encoding, `${timestamp}.${body}`)
    expect(verifyVapiSecret("secret", request({ "x-timestamp": timestamp, "x-signature": signature }))).toBe(true)
    expect(verifyVapiSecret("other", request({ "x-timestamp": timestamp, "x-signature": signature }))).toBe(false)
  })

  it("refuses a genuine signature more than 5 minutes old (or ahead), in seconds or milliseconds", () => {
    for (const at of [now - 6 * 60_000, now + 6 * 60_000, Date.parse("2001-09-09T01:46:40Z")]) {
      const signature = hmac("sha256", "hex", `${at}.${body}`)
      expect(verifyVapiSecret("secret", request({ "x-timestamp": String(at), "x-signature": signature }))).toBe(false)
    }
    const seconds = String(Math.floor(now / 1000))
    const signed = hmac("sha256", "hex", `${seconds}.${body}`)
    expect(verifyVapiSecret("secret", request({ "x-timestamp": seconds, "x-signature": signed }))).toBe(true)
  })

  it("reads configured header names and payload format, and a Bearer token in a custom header, prefix kept", () => {
    const timestamp = String(now)
    const auth = { signatureHeader: "x-sig", timestampHeader: "x-ts", payloadFormat: "{method} {url} {timestamp} {body}" }
    const payload = `POST https://parley.example/providers/vapi/events?org=o ${timestamp} ${body}`
    expect(verifyVapiSecret("secret", request({ "x-ts": timestamp, "x-sig": hmac("sha256", "hex", payload) }), auth)).toBe(true)
    expect(verifyVapiSecret("secret", request({ "x-token": "Bearer secret" }), { credentialHeader: "x-token" })).toBe(true)
    expect(verifyVapiSecret("secret", request({ "x-token": "secret" }), { credentialHeader: "x-token" })).toBe(true)
    expect(verifyVapiSecret("secret", request({ "x-token": "Bearer nope" }), { credentialHeader: "x-token" })).toBe(false)
  })
})

describe("the fakes refuse what the real APIs refuse", () => {
  let twilio: TwilioFake
  let vapi: VapiFake
  beforeAll(async () => {
    twilio = await TwilioFake.start()
    vapi = await VapiFake.start()
  })
  afterAll(async () => {
    await twilio.stop()
    await vapi.stop()
  })

  const twilioCreate = (fields: Record<string, string>) =>
    fetch(`${twilio.url}/2010-04-01/Accounts/${twilio.accountSid}/Messages.json`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded"
      },
      body: new URLSearchParams({ To: "+14155550100", From: "+15005550006", ...fields })
    }).then(async (r) => [r.status, ((await r.json()) as { code?: number }).code])

  it.each([
    [{ ContentSid: "HXnot-a-sid", Body: "x" }, 21655],
    [{ Body: "x", ContentVariables: "{\"1\": 2}" }, 21656],
    [{ Body: "x", MessagingServiceSid: "MG123" }, 21701],
    [{ Body: "x", StatusCallback: "not a url" }, 21609]
  ])("Twilio: %j → 400 %s", async (fields, code) => {
    expect(await twilioCreate(fields)).toEqual([400, code])
  })

  const vapiCreate = (body: Record<string, unknown>) =>
    fetch(`${vapi.url}/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${vapi.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ assistantId: "a", phoneNumberId: "p", customer: { number: "+14155550100" }, ...body })
    }).then(async (r) => [r.status, JSON.stringify(await r.json())] as const)

  it.each([
    [{ squadVersion: "1" }, "squadVersion"],
    [{ metadata: { parleyActionId: "1" } }, "metadata"],
    [{ assistantOverrides: { metadataa: {} } }, "metadataa"],
    [{ customer: { number: "+14155550100", phone: "x" } }, "phone"]
  ])("Vapi: %j → 400 naming %s", async (body, field) => {
    const [status, text] = await vapiCreate(body)
    expect(status).toBe(400)
    expect(text).toContain(field)
  })
})

describe("callback buckets", () => {
  it("let a burst through, then one per 1/rate seconds, per key", () => {
    const buckets = new Buckets({ perSecond: 10, burst: 3 })
    expect([1, 2, 3, 4].map(() => buckets.take("a", 0))).toEqual([true, true, true, false])
    expect(buckets.take("b", 0)).toBe(true)
    expect(buckets.take("a", 50)).toBe(false)
    expect(buckets.take("a", 100)).toBe(true)
  })
})
