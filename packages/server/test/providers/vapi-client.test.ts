/**
 * The Vapi client against the Vapi fake, over real HTTP on 127.0.0.1: the
 * create-call body Vapi's validation accepts, what each answer means,
 * reconciliation after a create whose answer was lost, the server secret in
 * each documented form, and the server messages decoded as Parley reads them.
 */
import { Effect, Either, Option } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { runWithLoopback } from "../support/loopbackProviders.js"
import {
  createCall,
  decodeServerMessage,
  findCalls,
  getCall,
  type VapiAccount,
  type VapiCallRequest,
  type VapiServerAuth,
  type VapiServerMessage,
  verifyVapiSecret
} from "../../src/providers/vapi/VapiClient.js"
import { CallbackReceiver, type ReceivedCallback } from "../support/fakes/CallbackReceiver.js"
import { VapiFake, type VapiSigning } from "../support/fakes/VapiFake.js"

const SECRET = "vapi-server-secret-for-tests"
const ASSISTANT = "5b0a7d2e-3f43-4c55-9a1e-0c6f7a1b2c3d"
const PHONE_NUMBER = "9e1f0c2d-8a7b-4c6d-9e0f-1a2b3c4d5e6f"
const CUSTOMER = "+447700900555"

let fake: VapiFake
let receiver: CallbackReceiver
let account: VapiAccount

beforeAll(async () => {
  fake = await VapiFake.start({ stepMs: 5 })
  receiver = await CallbackReceiver.start()
  fake.setServer(receiver.at("/providers/vapi/events"), SECRET)
  account = { apiBase: fake.url, apiKey: fake.apiKey }
})

afterEach(async () => {
  await fake.settled()
  await fake.up()
  fake.setServer(receiver.at("/providers/vapi/events"), SECRET)
})

afterAll(async () => {
  await fake.stop()
  await receiver.stop()
})

let actions = 0
const request = (overrides: Partial<VapiCallRequest> = {}): VapiCallRequest => ({
  assistantId: ASSISTANT,
  phoneNumberId: PHONE_NUMBER,
  customerNumber: CUSTOMER,
  variableValues: { mode: "reminder", purposeMessage: "Your delivery arrives tomorrow at 10." },
  metadata: { parleyActionId: `act_${Date.now()}_${actions++}` },
  ...overrides
})

const create = (req: VapiCallRequest, as: VapiAccount = account, timeoutMs?: number) =>
  runWithLoopback(Effect.either(createCall(as, req, timeoutMs === undefined ? {} : { timeoutMs })))

const created = async (req: VapiCallRequest) => {
  const result = await create(req)
  if (Either.isLeft(result)) throw new Error(`create failed: ${result.left.reason} ${result.left.message}`)
  return result.right
}

/** The error's fields as a plain object (the error itself is an Effect value, heavy to diff). */
const failure = async (req: VapiCallRequest, as?: VapiAccount, timeoutMs?: number) => {
  const result = await create(req, as, timeoutMs)
  if (Either.isRight(result)) throw new Error(`expected a failure, got ${result.right.id}`)
  const { reason, status, message, retryAfterMs } = result.left
  return { reason, status, message, retryAfterMs }
}

/** A server message as Parley's route hands it to verifyVapiSecret. */
const signed = (headers: Readonly<Record<string, string | undefined>>, rawBody: string) =>
  ({ headers, rawBody, method: "POST", url: "http://127.0.0.1/providers/vapi/events", now: Date.now() })

const headersOf = (callback: ReceivedCallback): Record<string, string | undefined> =>
  Object.fromEntries(
    Object.entries(callback.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value])
  )

/** Server messages received about one call, decoded. */
const messagesFor = (callId: string) =>
  receiver.received
    .map((callback) => {
      const json: unknown = JSON.parse(callback.body)
      return { callback, decoded: decodeServerMessage(json) }
    })
    .flatMap(({ callback, decoded }) =>
      Either.isRight(decoded) && decoded.right._tag !== "Other" && decoded.right.callId === callId
        ? [{ callback, message: decoded.right }]
        : []
    )

const summary = (message: VapiServerMessage) =>
  message._tag === "StatusUpdate"
    ? `status-update:${message.status}`
    : message._tag === "EndOfCallReport"
    ? `end-of-call-report:${message.endedReason}`
    : `other:${message.type}`

describe("creating a call", () => {
  it("posts exactly the create-call fields Vapi accepts, with the Bearer private key", async () => {
    const req = request()
    const before = fake.requests.length
    const call = await created(req)
    expect(call.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(call).toMatchObject({ status: "queued", endedReason: null })
    expect(fake.requests[before]).toMatchObject({
      method: "POST",
      path: "/call",
      authenticated: true,
      body: {
        assistantId: ASSISTANT,
        phoneNumberId: PHONE_NUMBER,
        customer: { number: CUSTOMER },
        assistantOverrides: { variableValues: req.variableValues, metadata: req.metadata }
      }
    })
    const body = fake.requests[before]!.body
    expect(typeof body === "object" && body !== null ? Object.keys(body).sort() : [])
      .toEqual(["assistantId", "assistantOverrides", "customer", "phoneNumberId"])
  })

  it("a wrong key is auth_failed with Vapi's message, and the key appears nowhere in the error", async () => {
    const error = await failure(request(), { ...account, apiKey: "wrong-private-key-42" })
    expect(error).toMatchObject({ reason: "auth_failed", status: 401, retryAfterMs: null })
    expect(error.message).toContain("Invalid Key")
    expect(JSON.stringify(error)).not.toContain("wrong-private-key-42")
  })

  it("Vapi's validation errors are rejections, with every message joined", async () => {
    const calls = fake.calls.length
    const badNumber = await failure(request({ customerNumber: "07700 900555" }))
    expect(badNumber).toMatchObject({
      reason: "rejected",
      status: 400,
      message: "customer.number must be a valid phone number in E.164 format"
    })
    const nothing = await failure(request({ assistantId: "", phoneNumberId: "" }))
    expect(nothing.message.split("; ")).toHaveLength(2)
    expect(fake.calls.length).toBe(calls)
  })

  it("429 and the concurrency limit are rate_limited; 503 and 500 unavailable; nothing is created", async () => {
    const calls = fake.calls.length
    fake.failNext(1, 429, "5")
    expect(await failure(request())).toMatchObject({ reason: "rate_limited", status: 429, retryAfterMs: 5000 })
    fake.failNextWithConcurrencyLimit()
    expect(await failure(request())).toMatchObject({
      reason: "rate_limited",
      status: 400,
      message: "Over Concurrency Limit",
      retryAfterMs: null
    })
    fake.failNext(1, 503, "3")
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: 503, retryAfterMs: 3000 })
    fake.failNext(1, 500)
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: 500, retryAfterMs: null })
    expect(fake.calls.length).toBe(calls)
  })

  it("Vapi down: unavailable (nothing could have been sent); back on the same port: creates again", async () => {
    await fake.down()
    const calls = fake.calls.length
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: null })
    expect(fake.calls.length).toBe(calls)
    await fake.up()
    expect((await created(request())).status).toBe("queued")
  })

  it("no answer within the timeout: unknown_outcome", async () => {
    fake.hangNext()
    expect(await failure(request(), account, 300)).toMatchObject({ reason: "unknown_outcome", status: null })
  })
})

describe("reconciling an unknown outcome", () => {
  const find = (query: { readonly phoneNumberId?: string; readonly customerNumber?: string; readonly since: number }) =>
    runWithLoopback(findCalls(account, { phoneNumberId: PHONE_NUMBER, customerNumber: CUSTOMER, ...query }))

  it("a create whose connection dropped after Vapi made the call is unknown_outcome, then found by findCalls", async () => {
    const since = Date.now()
    const req = request()
    const actionId = req.metadata["parleyActionId"]!
    fake.dropNextAfterAccept()
    expect((await failure(req)).reason).toBe("unknown_outcome")
    const made = fake.calls.at(-1)!
    expect(made.assistantOverrides).toMatchObject({ metadata: { parleyActionId: actionId } })

    // (with the calls of the tests before, still in the window)
    const found = await find({ since })
    expect(found.filter((f) => f.parleyActionId === actionId).map((f) => f.call.id)).toEqual([made.id])
    const query = new Map(fake.requests.at(-1)!.query)
    expect(query.get("phoneNumberId")).toBe(PHONE_NUMBER)
    expect(query.get("limit")).toBe("100")
    expect(Date.parse(query.get("createdAtGe") ?? "")).toBeLessThanOrEqual(since)

    expect(await find({ since, customerNumber: "+447700900999" })).toEqual([])
    expect(await find({ since, phoneNumberId: "00000000-0000-4000-8000-000000000000" })).toEqual([])
    expect(await find({ since: Date.now() + 5 * 60_000 })).toEqual([])
  })

  it("finds the call behind more than a page of newer calls from the same number, and lists each call once", async () => {
    const since = Date.now()
    const req = request()
    const actionId = req.metadata["parleyActionId"]!
    fake.dropNextAfterAccept()
    expect((await failure(req)).reason).toBe("unknown_outcome")
    const made = fake.calls.at(-1)!
    for (let i = 0; i < 120; i++) await created(request())
    const found = await find({ since })
    expect(found.filter((f) => f.parleyActionId === actionId).map((f) => f.call.id)).toEqual([made.id])
    // (with any calls of the tests before still in the window)
    expect(found.length).toBeGreaterThanOrEqual(121)
    expect(new Set(found.map((f) => f.call.id)).size).toBe(found.length)
    expect(fake.requests.filter((r) => r.method === "GET" && r.path === "/call").length).toBeGreaterThan(1)
  })

  it("finds the newest call when Vapi lists oldest first: no order is assumed (Vapi's GET /call promises none)", async () => {
    fake.listOrder = "oldest-first"
    try {
      const since = Date.now()
      for (let i = 0; i < 120; i++) await created(request())
      const req = request()
      const actionId = req.metadata["parleyActionId"]!
      fake.dropNextAfterAccept()
      expect((await failure(req)).reason).toBe("unknown_outcome")
      const made = fake.calls.at(-1)!
      const found = await find({ since })
      expect(found.filter((f) => f.parleyActionId === actionId).map((f) => f.call.id)).toEqual([made.id])
      expect(found.length).toBeGreaterThanOrEqual(121)
      expect(new Set(found.map((f) => f.call.id)).size).toBe(found.length)
      // Oldest first, as findCalls promises, whatever order Vapi listed them in.
      expect(found.map((f) => f.createdAt)).toEqual([...found.map((f) => f.createdAt)].sort((a, b) => a - b))
    } finally {
      fake.listOrder = "newest-first"
    }
  })

  it("a failed read is unavailable (safe to ask again); a wrong key is auth_failed", async () => {
    const query = { phoneNumberId: PHONE_NUMBER, customerNumber: CUSTOMER, since: Date.now() }
    await fake.down()
    const down = await runWithLoopback(Effect.either(findCalls(account, query)))
    expect(Either.isLeft(down) ? down.left.reason : null).toBe("unavailable")
    await fake.up()
    const denied = await runWithLoopback(Effect.either(findCalls({ ...account, apiKey: "nope" }, query)))
    expect(Either.isLeft(denied) ? [denied.left.reason, denied.left.status] : null).toEqual(["auth_failed", 401])
  })
})

describe("server messages", () => {
  it("a completed call: ringing, in-progress, ended, then the report with transcript and recording", async () => {
    const req = request()
    const call = await created(req)
    await fake.settled()
    const messages = messagesFor(call.id)
    expect(messages.map(({ message }) => summary(message))).toEqual([
      "status-update:ringing",
      "status-update:in-progress",
      "status-update:ended",
      "end-of-call-report:customer-ended-call"
    ])
    for (const { callback, message } of messages) {
      expect(verifyVapiSecret(SECRET, signed(headersOf(callback), callback.body))).toBe(true)
      expect(verifyVapiSecret("another-secret", signed(headersOf(callback), callback.body))).toBe(false)
      expect(message.metadata).toEqual(req.metadata)
    }
    const ended = messages[2]!.message
    expect(ended._tag === "StatusUpdate" ? ended.endedReason : null).toBe("customer-ended-call")
    const report = messages[3]!.message
    if (report._tag !== "EndOfCallReport") throw new Error("expected the end-of-call report last")
    expect(report.transcript).toContain("AI: Your delivery arrives tomorrow at 10.")
    expect(report.recordingUrl).toBe(fake.call(call.id)!.recordingUrl)
    expect(report.recordingUrl).toMatch(/^https:\/\//)
    expect(report.timestamp).toBeGreaterThan(Date.now() - 60_000)
  })

  it.each([
    [VapiFake.magic.noAnswer, ["ringing", "ended"], "customer-did-not-answer"],
    [VapiFake.magic.busy, ["ringing", "ended"], "customer-busy"],
    [VapiFake.magic.failsToConnect, ["ended"], "twilio-failed-to-connect-call"]
  ])("a call to %s that is never answered ends %s with %s, no transcript, no recording", async (number, statuses, reason) => {
    const call = await created(request({ customerNumber: number }))
    await fake.settled()
    const messages = messagesFor(call.id).map(({ message }) => message)
    expect(messages.map(summary)).toEqual([...statuses.map((s) => `status-update:${s}`), `end-of-call-report:${reason}`])
    const report = messages.at(-1)!
    expect(report._tag === "EndOfCallReport" ? [report.transcript, report.recordingUrl] : null).toEqual([null, null])
  })

  it("an assistant hang-up ends with assistant-ended-call and a transcript", async () => {
    const call = await created(request({ customerNumber: VapiFake.magic.assistantEnds }))
    await fake.settled()
    const report = messagesFor(call.id).at(-1)!.message
    expect(report._tag === "EndOfCallReport" ? report.endedReason : null).toBe("assistant-ended-call")
    expect(report._tag === "EndOfCallReport" ? report.transcript : null).toContain("Thanks")
  })

  it.each(["bearer", "hmac"] as const)("verifies a %s credential, and refuses a tampered body or another secret", async (auth) => {
    fake.setServer(receiver.at("/providers/vapi/events"), SECRET, auth)
    const call = await created(request())
    await fake.settled()
    const messages = messagesFor(call.id)
    expect(messages).toHaveLength(4)
    for (const { callback } of messages) {
      const headers = headersOf(callback)
      expect(headers["x-vapi-secret"]).toBeUndefined()
      expect(verifyVapiSecret(SECRET, signed(headers, callback.body))).toBe(true)
      expect(verifyVapiSecret(`${SECRET}x`, signed(headers, callback.body))).toBe(false)
    }
    const { callback } = messages[0]!
    const tampered = callback.body.replace("ringing", "ended")
    expect(verifyVapiSecret(SECRET, signed(headersOf(callback), tampered))).toBe(auth === "bearer")
  })

  describe("HMAC credentials in every mode of the SDK's HmacAuthenticationPlan", () => {
    /** A base64 secret, as a Svix-style credential has one (`secretIsBase64`). */
    const BASE64_SECRET = Buffer.from("svix-style-secret-bytes-for-tests").toString("base64")
    const svix = {
      algorithm: "sha256",
      signatureEncoding: "base64",
      signaturePrefix: "v1,",
      signatureHeader: "svix-signature",
      timestampHeader: "svix-timestamp",
      messageIdHeader: "svix-id",
      payloadFormat: "{svix-id}.{timestamp}.{body}",
      secretIsBase64: true
    } as const
    const modes: ReadonlyArray<readonly [string, string, VapiSigning, VapiServerAuth]> = [
      ["sha1, hex", SECRET, { algorithm: "sha1" }, {}],
      ["sha256, prefix sha256:", SECRET, { algorithm: "sha256", signaturePrefix: "sha256:" }, {}],
      ["sha512, base64, prefix v1,", SECRET, { algorithm: "sha512", signatureEncoding: "base64", signaturePrefix: "v1," }, {}],
      ["a base64 secret (secretIsBase64)", BASE64_SECRET, { secretIsBase64: true }, {}],
      ["Svix: {svix-id}.{timestamp}.{body} with messageIdHeader, v1, base64, secretIsBase64", BASE64_SECRET, svix, {
        signatureHeader: "svix-signature",
        timestampHeader: "svix-timestamp",
        messageIdHeader: "svix-id",
        payloadFormat: "{svix-id}.{timestamp}.{body}"
      }],
      ["a prefix set for the organisation (sig-)", SECRET, { signaturePrefix: "sig-" }, { signaturePrefix: "sig-" }]
    ]
    it.each(modes)("verifies %s, and refuses a tampered body, another secret or another message id", async (_mode, secret, plan, auth) => {
      fake.setServer(receiver.at("/providers/vapi/events"), secret, "hmac", plan)
      const call = await created(request())
      await fake.settled()
      const messages = messagesFor(call.id)
      expect(messages).toHaveLength(4)
      for (const { callback } of messages) {
        const headers = headersOf(callback)
        expect(verifyVapiSecret(secret, signed(headers, callback.body), auth)).toBe(true)
        expect(verifyVapiSecret(`${secret}x`, signed(headers, callback.body), auth)).toBe(false)
        expect(verifyVapiSecret(secret, signed(headers, callback.body.replace("}", ',"x":1}')), auth)).toBe(false)
        if (plan.messageIdHeader !== undefined) {
          expect(verifyVapiSecret(secret, signed({ ...headers, "svix-id": "msg_other" }, callback.body), auth)).toBe(false)
        }
      }
    })

    it("the fake refuses a plan Vapi would not take", () => {
      const url = receiver.at("/providers/vapi/events")
      expect(() => fake.setServer(url, SECRET, "hmac", { payloadFormat: "{nonce}.{body}" })).toThrow(/placeholder/)
      expect(() => fake.setServer(url, "not base64!", "hmac", { secretIsBase64: true })).toThrow(/base64/)
    })
  })

  it("refuses unsigned and mis-signed messages, and an empty configured secret", async () => {
    fake.tweakNextCallbacks({ signature: "none" })
    const unsigned = await created(request())
    fake.tweakNextCallbacks({ signature: "wrong" })
    const misSigned = await created(request())
    await fake.settled()
    for (const id of [unsigned.id, misSigned.id]) {
      const messages = messagesFor(id)
      expect(messages).toHaveLength(4)
      expect(messages.some(({ callback }) => verifyVapiSecret(SECRET, signed(headersOf(callback), callback.body)))).toBe(false)
    }
    expect(verifyVapiSecret("", signed({ "x-vapi-secret": "" }, "{}"))).toBe(false)
  })

  it("can be duplicated or delivered in reverse", async () => {
    fake.tweakNextCallbacks({ duplicate: true })
    const duplicated = await created(request())
    fake.tweakNextCallbacks({ reverse: true })
    const reversed = await created(request())
    await fake.settled()
    expect(messagesFor(duplicated.id).map(({ message }) => summary(message))).toEqual([
      "status-update:ringing",
      "status-update:ringing",
      "status-update:in-progress",
      "status-update:in-progress",
      "status-update:ended",
      "status-update:ended",
      "end-of-call-report:customer-ended-call",
      "end-of-call-report:customer-ended-call"
    ])
    expect(messagesFor(reversed.id).map(({ message }) => summary(message))).toEqual([
      "end-of-call-report:customer-ended-call",
      "status-update:ended",
      "status-update:in-progress",
      "status-update:ringing"
    ])
  })
})

describe("getting a call", () => {
  it("reads the call as it is now, with transcript and recording, and None for an id Vapi does not have", async () => {
    const call = await created(request())
    await fake.settled()
    const now = await runWithLoopback(getCall(account, call.id))
    if (Option.isNone(now)) throw new Error("the call should be found")
    expect(now.value).toMatchObject({ id: call.id, status: "ended", endedReason: "customer-ended-call" })
    expect(now.value.transcript).toContain("Your delivery arrives tomorrow at 10.")
    expect(now.value.recordingUrl).toBe(fake.call(call.id)!.recordingUrl)
    expect(Option.isNone(await runWithLoopback(getCall(account, "00000000-0000-4000-8000-000000000001")))).toBe(true)
  })
})

describe("decodeServerMessage", () => {
  it("passes other types, and status updates it does not know, through as Other", () => {
    expect(decodeServerMessage({ message: { type: "transcript", call: { id: "c1" }, transcript: "hi" } }))
      .toEqual(Either.right({ _tag: "Other", type: "transcript", callId: "c1" }))
    expect(decodeServerMessage({ message: { type: "status-update", status: "teleporting", call: { id: "c2" } } }))
      .toEqual(Either.right({ _tag: "Other", type: "status-update", callId: "c2" }))
    expect(decodeServerMessage({ message: { type: "hang" } })).toEqual(Either.right({ _tag: "Other", type: "hang", callId: null }))
  })

  it("reads the transcript and recording from the top level of older reports", () => {
    const decoded = decodeServerMessage({
      message: {
        type: "end-of-call-report",
        endedReason: "customer-ended-call",
        call: { id: "c3" },
        transcript: "AI: hello",
        recordingUrl: "https://example.invalid/r.wav",
        timestamp: "2026-11-22T10:00:00.000Z"
      }
    })
    expect(decoded).toEqual(Either.right({
      _tag: "EndOfCallReport",
      callId: "c3",
      endedReason: "customer-ended-call",
      transcript: "AI: hello",
      recordingUrl: "https://example.invalid/r.wav",
      summary: null,
      metadata: {},
      timestamp: Date.parse("2026-11-22T10:00:00.000Z")
    }))
  })

  it("fails on a body that is not a server message", () => {
    expect(Either.isLeft(decodeServerMessage({ type: "status-update" }))).toBe(true)
    expect(Either.isLeft(decodeServerMessage("status-update"))).toBe(true)
    expect(Either.isLeft(decodeServerMessage({ message: { status: "ended" } }))).toBe(true)
  })
})
