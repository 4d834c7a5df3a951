/**
 * The Twilio client against the Twilio fake, over real HTTP on 127.0.0.1:
 * authentication, what each answer means (rejected, rate limited, auth failed,
 * unavailable, unknown outcome), WhatsApp fields, reconciliation after a send
 * whose answer was lost, and the status callbacks with their signatures.
 */
import { fc, test } from "@fast-check/vitest"
import { Effect, Either, Option } from "effect"
import twilioSdk from "twilio"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { runWithLoopback } from "../support/loopbackProviders.js"
import {
  classifyTwilioError,
  fetchMessage,
  findMessages,
  sendMessage,
  type TwilioAccount,
  type TwilioFindQuery,
  type TwilioSendRequest,
  twilioSignature,
  verifyTwilioSignature
} from "../../src/providers/twilio/TwilioClient.js"
import { checkTwilioSettings, readTwilioSettings } from "../../src/providers/twilio/TwilioSettings.js"
import { CallbackReceiver, type ReceivedCallback } from "../support/fakes/CallbackReceiver.js"
import { TwilioFake } from "../support/fakes/TwilioFake.js"

const API_KEY = { sid: "SK0123456789abcdef0123456789abcdef", secret: "key-secret-for-tests" }
const TEMPLATE = "HX0123456789abcdef0123456789abcdef"
const SERVICE = "MG0123456789abcdef0123456789abcdef"
const FROM = TwilioFake.magic.validFrom
const TO = "+447700900123"

let fake: TwilioFake
let receiver: CallbackReceiver
let account: TwilioAccount

beforeAll(async () => {
  fake = await TwilioFake.start({
    apiKeys: [API_KEY],
    messagingServices: { [SERVICE]: "+15005550020" },
    contentTemplates: { [TEMPLATE]: "Hello {{1}}, your order ships {{2}}." },
    stepMs: 5
  })
  receiver = await CallbackReceiver.start()
  account = { apiBase: fake.url, accountSid: fake.accountSid, authToken: fake.authToken }
})

afterEach(async () => {
  await fake.settled()
  await fake.up()
})

afterAll(async () => {
  await fake.stop()
  await receiver.stop()
})

const send = (request: Partial<TwilioSendRequest>, as: TwilioAccount = account, timeoutMs?: number) =>
  runWithLoopback(Effect.either(sendMessage(
    as,
    { to: TO, from: FROM, body: "Your order is ready.", statusCallback: receiver.at("/providers/twilio/status"), ...request },
    timeoutMs === undefined ? {} : { timeoutMs }
  )))

const sent = async (request: Partial<TwilioSendRequest>) => {
  const result = await send(request)
  if (Either.isLeft(result)) throw new Error(`send failed: ${result.left.reason} ${result.left.message}`)
  const { sid } = result.right
  // Twilio's schema lets sid be null; the fake always gives one, and these tests read it.
  if (sid === null) throw new Error("the fake answered without a sid")
  return { ...result.right, sid }
}

/** The error's fields as a plain object (the error itself is an Effect value, heavy to diff). */
const failure = async (request: Partial<TwilioSendRequest>, as?: TwilioAccount, timeoutMs?: number) => {
  const result = await send(request, as, timeoutMs)
  if (Either.isRight(result)) throw new Error(`expected a failure, got ${result.right.sid}`)
  const { reason, code, status, message, retryAfterMs } = result.left
  return { reason, code, status, message, retryAfterMs }
}

const find = (query: Partial<TwilioFindQuery> & { since: number }, as: TwilioAccount = account) =>
  runWithLoopback(Effect.either(findMessages(as, { to: TO, from: FROM, ...query })))

/** The callbacks received for one message, as [status, fields]. */
const callbacksFor = (sid: string) =>
  receiver.received
    .map((callback) => ({ callback, form: new Map(CallbackReceiver.form(callback)) }))
    .filter(({ form }) => form.get("MessageSid") === sid)

const signatureHolds = (callback: ReceivedCallback, token = fake.authToken) =>
  verifyTwilioSignature(
    token,
    callback.url,
    CallbackReceiver.form(callback),
    typeof callback.headers["x-twilio-signature"] === "string" ? callback.headers["x-twilio-signature"] : undefined
  )

describe("X-Twilio-Signature", () => {
  it("matches the worked example in Twilio's security documentation", () => {
    const params: ReadonlyArray<readonly [string, string]> = [
      ["CallSid", "CA1234567890ABCDE"],
      ["Caller", "+14158675309"],
      ["Digits", "1234"],
      ["From", "+14158675309"],
      ["To", "+18005551212"]
    ]
    const url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    expect(twilioSignature("12345", url, params)).toBe("RSOYDt4T1cUTdK1PDd93/VVr8B8=")
    expect(verifyTwilioSignature("12345", url, [...params].reverse(), "RSOYDt4T1cUTdK1PDd93/VVr8B8=")).toBe(true)
  })

  it("fails for a tampered field, another URL, another token, or no header", () => {
    const params: ReadonlyArray<readonly [string, string]> = [["MessageSid", "SM1"], ["MessageStatus", "delivered"]]
    const url = "https://parley.example/providers/twilio/status"
    const signature = twilioSignature("token-a", url, params)
    expect(verifyTwilioSignature("token-a", url, params, signature)).toBe(true)
    expect(verifyTwilioSignature("token-a", url, [["MessageSid", "SM1"], ["MessageStatus", "failed"]], signature))
      .toBe(false)
    expect(verifyTwilioSignature("token-a", `${url}?x=1`, params, signature)).toBe(false)
    expect(verifyTwilioSignature("token-b", url, params, signature)).toBe(false)
    expect(verifyTwilioSignature("token-a", url, params, undefined)).toBe(false)
    expect(verifyTwilioSignature("token-a", url, params, "")).toBe(false)
  })

  it("accepts the URL with or without its default port, as Twilio's helper libraries do", () => {
    const params: ReadonlyArray<readonly [string, string]> = [["MessageSid", "SM1"]]
    const signed = twilioSignature("t", "https://parley.example:443/providers/twilio/status", params)
    expect(verifyTwilioSignature("t", "https://parley.example/providers/twilio/status", params, signed)).toBe(true)
    const plain = twilioSignature("t", "https://parley.example/providers/twilio/status", params)
    expect(verifyTwilioSignature("t", "https://parley.example:443/providers/twilio/status", params, plain)).toBe(true)
    // A proxy that shows a port Twilio's URL did not have: Twilio signed the URL without it.
    expect(verifyTwilioSignature("t", "https://parley.example:8443/providers/twilio/status", params, plain)).toBe(true)
    // A port the URL Parley sees does not have cannot be guessed: only the scheme's default is tried.
    const other = twilioSignature("t", "https://parley.example:8443/providers/twilio/status", params)
    expect(verifyTwilioSignature("t", "https://parley.example/providers/twilio/status", params, other)).toBe(false)
  })
})

describe("X-Twilio-Signature against the official twilio package (validateRequest)", () => {
  /** The form as Express's urlencoded parser hands it to the SDK: a repeated name becomes an array of its values. */
  const sdkParams = (fields: ReadonlyArray<readonly [string, string]>): Record<string, string | Array<string>> => {
    const object: Record<string, string | Array<string>> = {}
    for (const [name, value] of fields) {
      const seen = object[name]
      object[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value]
    }
    return object
  }
  const signedBySdk = (token: string, url: string, fields: ReadonlyArray<readonly [string, string]>) =>
    twilioSdk.getExpectedTwilioSignature(token, url, sdkParams(fields))
  const sdkAccepts = (token: string, header: string, url: string, fields: ReadonlyArray<readonly [string, string]>) =>
    twilioSdk.validateRequest(token, header, url, sdkParams(fields))

  const cases: ReadonlyArray<{ name: string; signed: string; seen: string; fields: ReadonlyArray<readonly [string, string]> }> = [
    {
      name: "a non-default port the proxy shows and Twilio did not sign",
      signed: "https://parley.example/providers/twilio/inbound",
      seen: "https://parley.example:8443/providers/twilio/inbound",
      fields: [["Body", "hi"], ["From", "+447700900001"]]
    },
    {
      name: "the legacy %20 spelling of a query's space, seen as +",
      signed: "https://parley.example/providers/twilio/status?action=1&note=a%20b",
      seen: "https://parley.example/providers/twilio/status?action=1&note=a+b",
      fields: [["MessageSid", "SM1"], ["MessageStatus", "delivered"]]
    },
    {
      name: "a repeated form key, its values in another order and once repeated",
      signed: "https://parley.example/providers/twilio/inbound",
      seen: "https://parley.example/providers/twilio/inbound",
      fields: [["MediaUrl0", "https://b.example/2"], ["To", "+14155550100"], ["MediaUrl0", "https://a.example/1"], ["MediaUrl0", "https://b.example/2"]]
    }
  ]
  for (const { name, signed, seen, fields } of cases) {
    it(`accepts what the SDK accepts: ${name}`, () => {
      const header = signedBySdk("token-a", signed, fields)
      expect(sdkAccepts("token-a", header, seen, fields)).toBe(true)
      expect(verifyTwilioSignature("token-a", seen, fields, header)).toBe(true)
      // Still bound to the token and the fields.
      expect(verifyTwilioSignature("token-b", seen, fields, header)).toBe(false)
      expect(verifyTwilioSignature("token-a", seen, [...fields, ["Extra", "1"]], header)).toBe(false)
    })
  }

  const portSpelling = fc.constantFrom("", ":443", ":80", ":8443")
  const queryValue = fc.stringMatching(/^[a-zA-Z0-9 +%'~*!()é]{0,8}$/)
  const query = fc.array(fc.tuple(fc.constantFrom("a", "b", "note"), queryValue), { maxLength: 3 })
  const spellQuery = (pairs: ReadonlyArray<readonly [string, string]>, space: string) =>
    pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${k}=${v.replaceAll(" ", space)}`).join("&")}`
  const fields = fc.array(
    fc.tuple(fc.constantFrom("Body", "From", "MediaUrl0", "To", "body", "Ü"), fc.string({ maxLength: 6 })),
    { maxLength: 6 }
  )

  test.prop(
    {
      scheme: fc.constantFrom("https", "http"),
      signedPort: portSpelling,
      seenPort: portSpelling,
      pairs: query,
      signedSpace: fc.constantFrom("%20", "+"),
      seenSpace: fc.constantFrom("%20", "+"),
      fields,
      sentFields: fc.option(fields, { nil: undefined })
    },
    { numRuns: 400 }
  )("agrees with validateRequest on ports, query spellings and repeated keys", (input) => {
    const url = (port: string, space: string) =>
      `${input.scheme}://parley.example${port}/providers/twilio/inbound${spellQuery(input.pairs, space)}`
    const header = signedBySdk("token-a", url(input.signedPort, input.signedSpace), input.fields)
    const seen = url(input.seenPort, input.seenSpace)
    const received = input.sentFields ?? input.fields
    expect(verifyTwilioSignature("token-a", seen, received, header)).toBe(sdkAccepts("token-a", header, seen, received))
  })
})

describe("sending", () => {
  it("creates a queued message with the account's token, sending exactly the documented fields", async () => {
    const before = fake.requests.length
    const message = await sent({})
    expect(message.sid).toMatch(/^SM[0-9a-f]{32}$/)
    expect(message).toMatchObject({ status: "queued", to: TO, from: FROM, errorCode: null, errorMessage: null })
    expect(Date.parse(message.dateCreated ?? "")).toBeGreaterThan(Date.now() - 60_000)
    const request = fake.requests[before]!
    expect(request).toMatchObject({
      method: "POST",
      path: `/2010-04-01/Accounts/${fake.accountSid}/Messages.json`,
      principal: fake.accountSid,
      authenticated: true
    })
    expect(new Map(request.form)).toEqual(new Map([
      ["To", TO],
      ["From", FROM],
      ["Body", "Your order is ready."],
      ["StatusCallback", receiver.at("/providers/twilio/status")]
    ]))
  })

  it("authenticates with an API key pair instead of the auth token when one is given", async () => {
    const before = fake.requests.length
    const message = await send({}, { ...account, authToken: "not-used-for-auth", apiKeySid: API_KEY.sid, apiKeySecret: API_KEY.secret })
    expect(Either.isRight(message)).toBe(true)
    expect(fake.requests[before]).toMatchObject({ principal: API_KEY.sid, authenticated: true })
  })

  it("wrong credentials: auth_failed with Twilio's 20003, and the token appears nowhere in the error", async () => {
    const error = await failure({}, { ...account, authToken: "wrong-token-123" })
    expect(error).toMatchObject({ reason: "auth_failed", code: 20003, status: 401, message: "Authenticate", retryAfterMs: null })
    expect(JSON.stringify(error)).not.toContain("wrong-token-123")
    const keyError = await failure({}, { ...account, apiKeySid: API_KEY.sid, apiKeySecret: "wrong-secret" })
    expect(keyError).toMatchObject({ reason: "auth_failed", code: 20003 })
  })

  it.each([
    ["an invalid To", { to: TwilioFake.magic.invalidTo }, 21211],
    ["a region not permitted", { to: TwilioFake.magic.regionNotPermittedTo }, 21408],
    ["a To that is not a mobile", { to: TwilioFake.magic.notMobileTo }, 21614],
    ["an invalid From", { from: TwilioFake.magic.invalidFrom }, 21212],
    ["a From not on the account", { from: TwilioFake.magic.notOwnedFrom }, 21606],
    ["no body and no template", { body: "" }, 21602],
    ["no From and no Messaging Service", { from: "" }, 21603],
    ["a WhatsApp To from an SMS sender", { to: `whatsapp:${TO}` }, 21910]
  ])("%s is rejected with Twilio's code", async (_, request, code) => {
    const created = fake.messages.length
    const error = await failure(request)
    expect(error).toMatchObject({ reason: "rejected", code, status: 400, retryAfterMs: null })
    expect(error.message.length).toBeGreaterThan(0)
    expect(fake.messages.length).toBe(created)
  })

  it("an unsubscribed recipient (STOP, 21610) is its own refusal: unsubscribed, so the dispatcher records the opt-out", async () => {
    const error = await failure({ to: TwilioFake.magic.unsubscribedTo })
    expect(error).toMatchObject({ reason: "unsubscribed", code: 21610, status: 400, retryAfterMs: null })
  })

  it("a sender whose queue is full (21611) is rate limited, not rejected", async () => {
    expect(await failure({ from: TwilioFake.magic.queueFullFrom })).toMatchObject({ reason: "rate_limited", code: 21611 })
  })

  it("429 is rate_limited with Retry-After in ms; 503 and 500 are unavailable; nothing is created", async () => {
    const created = fake.messages.length
    fake.failNext(1, 429, "7")
    expect(await failure({})).toMatchObject({ reason: "rate_limited", code: 20429, status: 429, retryAfterMs: 7000 })
    fake.failNext(1, 503, "2")
    expect(await failure({})).toMatchObject({ reason: "unavailable", code: 20503, status: 503, retryAfterMs: 2000 })
    fake.failNext(1, 500)
    expect(await failure({})).toMatchObject({ reason: "unavailable", code: 20500, status: 500, retryAfterMs: null })
    expect(fake.messages.length).toBe(created)
    expect((await sent({})).status).toBe("queued")
  })

  it("Twilio down: unavailable (nothing could have been sent); back on the same port: sends again", async () => {
    await fake.down()
    const created = fake.messages.length
    expect(await failure({})).toMatchObject({ reason: "unavailable", status: null, code: null })
    expect(fake.messages.length).toBe(created)
    await fake.up()
    expect((await sent({})).status).toBe("queued")
  })

  it("no answer within the timeout: unknown_outcome", async () => {
    fake.hangNext()
    const error = await failure({}, account, 300)
    expect(error).toMatchObject({ reason: "unknown_outcome", status: null })
    expect(error.message).toContain("0.3 s")
  })
})

describe("reconciling an unknown outcome", () => {
  it("a send whose connection dropped after Twilio created it is unknown_outcome, then found by findMessages", async () => {
    const since = Date.now()
    const body = `Reconcile me ${since}`
    fake.dropNextAfterAccept()
    const error = await failure({ body })
    expect(error.reason).toBe("unknown_outcome")
    const created = fake.messages.at(-1)!
    expect(created.body).toBe(body)

    const found = await find({ since, body })
    expect(Either.isRight(found) ? found.right.map((f) => f.message.sid) : null).toEqual([created.sid])
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", authenticated: true })
    expect(new Map(fake.requests.at(-1)!.query)).toEqual(new Map([["To", TO], ["PageSize", "1000"], ["From", FROM]]))

    const otherBody = await find({ since, body: "something else" })
    expect(Either.isRight(otherBody) ? otherBody.right : null).toEqual([])
    const later = await find({ since: Date.now() + 5 * 60_000, body })
    expect(Either.isRight(later) ? later.right : null).toEqual([])
  })

  it("finds a message still queued, which a DateSent filter would hide", async () => {
    const slow = await TwilioFake.start({ stepMs: 60_000 })
    try {
      const slowAccount = { apiBase: slow.url, accountSid: slow.accountSid, authToken: slow.authToken }
      const since = Date.now()
      slow.dropNextAfterAccept()
      await runWithLoopback(Effect.either(sendMessage(slowAccount, {
        to: TO,
        from: FROM,
        body: "queued one",
        statusCallback: receiver.at("/slow")
      })))
      const today = new Date().toISOString().slice(0, 10)
      const filtered = await fetch(
        `${slow.url}/2010-04-01/Accounts/${slow.accountSid}/Messages.json?To=${encodeURIComponent(TO)}&DateSent%3E=${today}`,
        { headers: { authorization: `Basic ${Buffer.from(`${slow.accountSid}:${slow.authToken}`).toString("base64")}` } }
      )
      expect(((await filtered.json()) as { messages: ReadonlyArray<unknown> }).messages).toHaveLength(0)
      const found = await runWithLoopback(findMessages(slowAccount, { to: TO, from: FROM, since, body: "queued one" }))
      expect(found.map((f) => f.message.status)).toEqual(["queued"])
    } finally {
      await slow.stop()
    }
  })

  it("reads every page, following the PageToken cursor, and returns every identical message", async () => {
    // Twilio serves up to 1,000 a page; this fake two, so that six messages take three pages.
    const paged = await TwilioFake.start({ maxPageSize: 2, stepMs: 60_000 })
    try {
      const pagedAccount = { apiBase: paged.url, accountSid: paged.accountSid, authToken: paged.authToken }
      const since = Date.now()
      const confirm = (body: string) =>
        runWithLoopback(sendMessage(pagedAccount, { to: TO, from: FROM, body, statusCallback: receiver.at("/paged") }))
      const same: Array<string> = []
      for (let i = 0; i < 5; i++) same.push((await confirm("Your appointment is confirmed.")).sid ?? "")
      await confirm("Something else")
      const found = await runWithLoopback(
        findMessages(pagedAccount, { to: TO, from: FROM, since, body: "Your appointment is confirmed." })
      )
      expect(found.map((f) => f.message.sid).sort()).toEqual([...same].sort())
      const reads = paged.requests.filter((r) => r.method === "GET")
      expect(reads).toHaveLength(3)
      expect(reads.slice(1).every((r) => r.query.some(([k, v]) => k === "PageToken" && v.startsWith("PASM")))).toBe(true)

      // Past FIND_MAX_PAGES (20) pages nothing is concluded: an error, not a partial list.
      const single = await TwilioFake.start({ maxPageSize: 1, stepMs: 60_000 })
      try {
        const singleAccount = { apiBase: single.url, accountSid: single.accountSid, authToken: single.authToken }
        for (let i = 0; i < 21; i++) {
          await runWithLoopback(sendMessage(singleAccount, { to: TO, from: FROM, body: "x", statusCallback: receiver.at("/single") }))
        }
        const tooMany = await runWithLoopback(Effect.either(findMessages(singleAccount, { to: TO, from: FROM, since, body: "x" })))
        expect(Either.isLeft(tooMany) ? tooMany.left.reason : null).toBe("unavailable")
      } finally {
        await single.stop()
      }
    } finally {
      await paged.stop()
    }
  })

  it("findMessages through a Messaging Service matches the service, and a read failure is unavailable", async () => {
    const since = Date.now()
    const message = await sent({ from: undefined, messagingServiceSid: SERVICE, body: `via service ${since}` })
    expect(message).toMatchObject({ status: "accepted", from: null })
    const found = await runWithLoopback(findMessages(account, { to: TO, messagingServiceSid: SERVICE, since }))
    expect(found.map((f) => f.message.sid)).toEqual([message.sid])
    const wrongService = await runWithLoopback(
      findMessages(account, { to: TO, messagingServiceSid: "MG00000000000000000000000000000000", since })
    )
    expect(wrongService).toEqual([])

    await fake.down()
    const down = await find({ since })
    expect(Either.isLeft(down) ? down.left.reason : null).toBe("unavailable")
    await fake.up()
    const denied = await find({ since }, { ...account, authToken: "wrong" })
    expect(Either.isLeft(denied) ? [denied.left.reason, denied.left.code] : null).toEqual(["auth_failed", 20003])
  })
})

describe("WhatsApp", () => {
  it("sends a template with whatsapp: addresses and ContentVariables as one JSON string", async () => {
    const variables = { "1": "Ada", "2": "on Friday" }
    const message = await sent({
      to: `whatsapp:${TO}`,
      from: `whatsapp:${FROM}`,
      body: undefined,
      contentSid: TEMPLATE,
      contentVariables: variables
    })
    expect(message).toMatchObject({ to: `whatsapp:${TO}`, from: `whatsapp:${FROM}`, status: "queued" })
    const stored = fake.message(message.sid)!
    expect(stored.contentSid).toBe(TEMPLATE)
    expect(stored.contentVariables).toBe(JSON.stringify(variables))
    expect(stored.body).toBe("Hello Ada, your order ships on Friday.")
    await fake.settled()
    expect(callbacksFor(message.sid).map(({ form }) => form.get("MessageStatus"))).toEqual(["sent", "delivered", "read"])
    expect(callbacksFor(message.sid).every(({ form }) => form.get("To") === `whatsapp:${TO}`)).toBe(true)
  })

  it("free-form text outside the 24-hour session is accepted, then fails with 63016 in its callback", async () => {
    const outside = `whatsapp:${TwilioFake.magic.whatsAppOutsideSession}`
    const message = await sent({ to: outside, from: `whatsapp:${FROM}`, body: "Hi there" })
    expect(message.status).toBe("queued")
    await fake.settled()
    const callbacks = callbacksFor(message.sid)
    expect(callbacks.map(({ form }) => [form.get("MessageStatus"), form.get("ErrorCode")])).toEqual([["failed", "63016"]])
    expect(fake.message(message.sid)).toMatchObject({ status: "failed", errorCode: 63016 })
    const templated = await sent({ to: outside, from: `whatsapp:${FROM}`, body: undefined, contentSid: TEMPLATE })
    await fake.settled()
    expect(callbacksFor(templated.sid).map(({ form }) => form.get("MessageStatus")).at(-1)).toBe("read")
  })

  it("a synchronous 63016 would be a rejection; 20003 auth; 20429 rate limit; 5xx unavailable", () => {
    expect(classifyTwilioError(400, 63016)).toBe("rejected")
    expect(classifyTwilioError(400, 21610)).toBe("unsubscribed")
    expect(classifyTwilioError(401, 20003)).toBe("auth_failed")
    expect(classifyTwilioError(400, 20429)).toBe("rate_limited")
    expect(classifyTwilioError(503, null)).toBe("unavailable")
  })
})

describe("status callbacks", () => {
  it("an SMS reports sending, sent, delivered, each a signed form post with Twilio's fields", async () => {
    const message = await sent({})
    await fake.settled()
    const callbacks = callbacksFor(message.sid)
    expect(callbacks.map(({ form }) => form.get("MessageStatus"))).toEqual(["sending", "sent", "delivered"])
    for (const { callback, form } of callbacks) {
      expect(callback.url).toBe(receiver.at("/providers/twilio/status"))
      expect(callback.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(signatureHolds(callback)).toBe(true)
      expect(signatureHolds(callback, "another-token")).toBe(false)
      expect(form.get("SmsStatus")).toBe(form.get("MessageStatus"))
      expect(form.get("SmsSid")).toBe(message.sid)
      expect(form.get("AccountSid")).toBe(fake.accountSid)
      expect(form.get("ApiVersion")).toBe("2010-04-01")
      expect(form.get("From")).toBe(FROM)
      expect(form.get("To")).toBe(TO)
      expect(form.has("ErrorCode")).toBe(false)
    }
    expect(fake.message(message.sid)).toMatchObject({ status: "delivered", errorCode: null })
  })

  it("undelivered carries ErrorCode 30003 and failed 30008", async () => {
    const undelivered = await sent({ to: TwilioFake.magic.undeliveredTo })
    const failed = await sent({ to: TwilioFake.magic.failedTo })
    await fake.settled()
    expect(callbacksFor(undelivered.sid).map(({ form }) => [form.get("MessageStatus"), form.get("ErrorCode") ?? null]))
      .toEqual([["sending", null], ["sent", null], ["undelivered", "30003"]])
    expect(callbacksFor(failed.sid).map(({ form }) => [form.get("MessageStatus"), form.get("ErrorCode") ?? null]))
      .toEqual([["sending", null], ["failed", "30008"]])
    expect(fake.message(undelivered.sid)).toMatchObject({ errorCode: 30003, errorMessage: "Unreachable destination handset" })
  })

  it("a Messaging Service message reports queued first, with the sender it assigned", async () => {
    const message = await sent({ from: undefined, messagingServiceSid: SERVICE })
    await fake.settled()
    const callbacks = callbacksFor(message.sid)
    expect(callbacks.map(({ form }) => form.get("MessageStatus"))).toEqual(["queued", "sending", "sent", "delivered"])
    expect(callbacks.every(({ form }) => form.get("From") === "+15005550020" && form.get("MessagingServiceSid") === SERVICE))
      .toBe(true)
  })

  it("can be duplicated, reversed, unsigned or mis-signed on request", async () => {
    fake.tweakNextCallbacks({ duplicate: true })
    const duplicated = await sent({})
    await fake.settled()
    expect(callbacksFor(duplicated.sid).map(({ form }) => form.get("MessageStatus")))
      .toEqual(["sending", "sending", "sent", "sent", "delivered", "delivered"])

    fake.tweakNextCallbacks({ reverse: true })
    const reversed = await sent({})
    await fake.settled()
    expect(callbacksFor(reversed.sid).map(({ form }) => form.get("MessageStatus"))).toEqual(["delivered", "sent", "sending"])
    expect(callbacksFor(reversed.sid).every(({ callback }) => signatureHolds(callback))).toBe(true)

    fake.tweakNextCallbacks({ signature: "none" })
    const unsigned = await sent({})
    await fake.settled()
    expect(callbacksFor(unsigned.sid).every(({ callback }) => callback.headers["x-twilio-signature"] === undefined))
      .toBe(true)
    expect(callbacksFor(unsigned.sid).some(({ callback }) => signatureHolds(callback))).toBe(false)

    fake.tweakNextCallbacks({ signature: "wrong" })
    const misSigned = await sent({})
    await fake.settled()
    expect(callbacksFor(misSigned.sid)).toHaveLength(3)
    expect(callbacksFor(misSigned.sid).some(({ callback }) => signatureHolds(callback))).toBe(false)
  })
})

describe("fetching a message", () => {
  it("reads the resource as it is now (after its callbacks), and None for a sid Twilio does not have", async () => {
    const message = await sent({ to: TwilioFake.magic.undeliveredTo })
    await fake.settled()
    const now = await runWithLoopback(fetchMessage(account, message.sid))
    expect(Option.map(now, (m) => [m.sid, m.status, m.errorCode, m.errorMessage])).toEqual(
      Option.some([message.sid, "undelivered", 30003, "Unreachable destination handset"])
    )
    const missing = await runWithLoopback(fetchMessage(account, "SM00000000000000000000000000000000"))
    expect(Option.isNone(missing)).toBe(true)
    const denied = await runWithLoopback(Effect.either(fetchMessage({ ...account, authToken: "x" }, message.sid)))
    expect(Either.isLeft(denied) ? denied.left.reason : null).toBe("auth_failed")
  })
})

describe("the fake's message list", () => {
  it("pages newest first in Twilio's envelope", async () => {
    const to = "+447700900999"
    const first = await sent({ to, body: "one" })
    const second = await sent({ to, body: "two" })
    const third = await sent({ to, body: "three" })
    const auth = { authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString("base64")}` }
    const path = `/2010-04-01/Accounts/${fake.accountSid}/Messages.json`
    const page0 = (await (await fetch(`${fake.url}${path}?To=${encodeURIComponent(to)}&PageSize=2`, { headers: auth })).json()) as {
      messages: ReadonlyArray<{ sid: string }>
      next_page_uri: string | null
      page: number
      page_size: number
    }
    expect(page0.messages.map((m) => m.sid)).toEqual([third.sid, second.sid])
    expect(page0).toMatchObject({ page: 0, page_size: 2 })
    const page1 = (await (await fetch(`${fake.url}${page0.next_page_uri}`, { headers: auth })).json()) as {
      messages: ReadonlyArray<{ sid: string }>
      next_page_uri: string | null
    }
    expect(page1.messages.map((m) => m.sid)).toEqual([first.sid])
    expect(page1.next_page_uri).toBeNull()
  })
})

describe("the Content API base: its own setting, not the REST base", () => {
  const input = { accountSid: `AC${"0".repeat(32)}`, authToken: "token" }
  const edge = "https://api.dublin.ie1.twilio.com"

  it("stays Twilio's Content API (content.twilio.com) when only --api-base is given", () => {
    const checked = checkTwilioSettings({ ...input, apiBase: edge }, edge)
    expect(Either.isRight(checked) ? checked.right.contentApiBase : "refused").toBeUndefined()
    const own = checkTwilioSettings({ ...input, apiBase: edge, contentApiBase: "https://content.example/" }, edge)
    expect(Either.isRight(own) ? own.right.contentApiBase : "refused").toBe("https://content.example")
  })

  it("reads settings stored with the REST base copied into it as unset on Twilio's hosts, kept elsewhere", () => {
    const stored = (apiBase: string) => ({
      apiBase,
      accountId: input.accountSid,
      sealed: { authToken: "token", contentApiBase: apiBase }
    })
    expect(readTwilioSettings(stored(edge)).contentApiBase).toBeUndefined()
    expect(readTwilioSettings(stored("http://127.0.0.1:4010")).contentApiBase).toBe("http://127.0.0.1:4010")
  })
})
