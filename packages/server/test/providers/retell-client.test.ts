/**
 * The Retell client against the Retell fake, over real HTTP on 127.0.0.1: the
 * create-phone-call body Retell accepts, what each answer means,
 * reconciliation after a create whose answer was lost (every list page), the
 * webhook signature (checked against the official SDK's verifier too), the
 * webhooks decoded as Parley reads them, and the whole disconnection_reason
 * table against the SDK's list.
 */
import { Effect, Either, Option, Schema } from "effect"
import { verify as sdkVerify } from "retell-sdk"
import { symmetric } from "retell-sdk/lib/webhook_auth"
import type { CallCreatePhoneCallParams, CallListParams } from "retell-sdk/resources/call"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { runWithLoopback } from "../support/loopbackProviders.js"
import {
  createPhoneCall,
  findCalls,
  getCall,
  type RetellAccount,
  type RetellCallRequest,
  type RetellFindQuery
} from "../../src/providers/retell/RetellClient.js"
import { callDetailsReport, callMetadata, toCallReport } from "../../src/providers/retell/RetellReports.js"
import { RetellSettings, retellAccount } from "../../src/providers/retell/RetellSettings.js"
import {
  RETELL_DISCONNECTION_REASONS,
  type RetellDisconnectionReason as OurReason,
  retellCallStatus,
  retellEnding
} from "../../src/providers/retell/RetellStatuses.js"
import {
  decodeRetellWebhook,
  retellSignature,
  type RetellWebhook,
  verifyRetellSignature
} from "../../src/providers/retell/RetellWebhooks.js"
import { CallbackReceiver, type ReceivedCallback } from "../support/fakes/CallbackReceiver.js"
import { FakeServer, sendJson } from "../support/fakes/FakeServer.js"
import { RetellFake, type RetellDisconnectionReason as SdkReason } from "../support/fakes/RetellFake.js"

const FROM = "+14155550100"
const OTHER_FROM = "+14155550199"
const CUSTOMER = "+14155550123"
const AGENT = "agent_5b0a7d2e3f434c559a1e0c6f"
const OTHER_AGENT = "agent_9e1f0c2d8a7b4c6d9e0f1a2b"

// The table covers exactly the SDK's reasons: one the SDK adds (or one we list that it does not) fails the type check.
const sameReasons: [Exclude<SdkReason, OurReason>, Exclude<OurReason, SdkReason>] extends [never, never] ? true : false =
  true

let fake: RetellFake
let receiver: CallbackReceiver
let account: RetellAccount

beforeAll(async () => {
  fake = await RetellFake.start({
    stepMs: 5,
    agents: [AGENT, OTHER_AGENT],
    numbers: [{ number: FROM }, { number: OTHER_FROM, agentId: OTHER_AGENT }]
  })
  receiver = await CallbackReceiver.start()
  fake.setWebhook(receiver.at("/providers/retell/events"), AGENT)
  account = { apiBase: fake.url, apiKey: fake.apiKey }
})

afterEach(async () => {
  await fake.settled()
  await fake.up()
})

afterAll(async () => {
  await fake.stop()
  await receiver.stop()
})

let actions = 0
const request = (overrides: Partial<RetellCallRequest> = {}): RetellCallRequest => ({
  agentId: AGENT,
  fromNumber: FROM,
  toNumber: CUSTOMER,
  dynamicVariables: { mode: "reminder", purposeMessage: "Your delivery arrives tomorrow at 10." },
  metadata: { parleyActionId: `act_${Date.now()}_${actions++}`, parleyOrgId: "org_1" },
  ...overrides
})

const create = (req: RetellCallRequest, as: RetellAccount = account, timeoutMs?: number) =>
  runWithLoopback(Effect.either(createPhoneCall(as, req, timeoutMs === undefined ? {} : { timeoutMs })))

const created = async (req: RetellCallRequest) => {
  const result = await create(req)
  if (Either.isLeft(result)) throw new Error(`create failed: ${result.left.reason} ${result.left.message}`)
  return result.right
}

/** The error's fields as a plain object (the error itself is an Effect value, heavy to diff). */
const failure = async (req: RetellCallRequest, as?: RetellAccount, timeoutMs?: number) => {
  const result = await create(req, as, timeoutMs)
  if (Either.isRight(result)) throw new Error(`expected a failure, got ${result.right.id}`)
  const { reason, status, message, retryAfterMs } = result.left
  return { reason, status, message, retryAfterMs }
}

/** The action's own call among every candidate findCalls lists (the newest that names it), as the dispatcher adopts it. */
const find = (query: RetellFindQuery & { readonly parleyActionId: string }, as: RetellAccount = account) =>
  runWithLoopback(Effect.either(Effect.map(findCalls(as, query), (found) =>
    Option.fromNullable([...found].reverse().find((f) => f.parleyActionId === query.parleyActionId)?.call))))

const headersOf = (callback: ReceivedCallback): Record<string, string | undefined> =>
  Object.fromEntries(
    Object.entries(callback.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value])
  )

/** Webhooks received about one call, decoded. */
const webhooksFor = (callId: string) =>
  receiver.received.flatMap((callback) => {
    const decoded = decodeRetellWebhook(JSON.parse(callback.body))
    return Either.isRight(decoded) && decoded.right._tag === "CallEvent" && decoded.right.callId === callId
      ? [{ callback, webhook: decoded.right }]
      : []
  })

const verifies = (apiKey: string, headers: Readonly<Record<string, string | undefined>>, rawBody: string, now: number) =>
  verifyRetellSignature(apiKey, { headers, rawBody, now })

const events = (callId: string) => webhooksFor(callId).map(({ webhook }) => webhook.event)

describe("creating a call", () => {
  it("posts exactly the create-phone-call fields Retell accepts, with the Bearer API key", async () => {
    const req = request()
    const before = fake.requests.length
    const call = await created(req)
    expect(call.id).toMatch(/^call_/)
    expect(call).toEqual({ id: call.id, status: "registered", disconnectionReason: null })
    const expected: CallCreatePhoneCallParams = {
      from_number: FROM,
      to_number: CUSTOMER,
      override_agent_id: AGENT,
      retell_llm_dynamic_variables: { mode: "reminder", purposeMessage: "Your delivery arrives tomorrow at 10." },
      metadata: req.metadata
    }
    expect(fake.requests[before]).toEqual({ method: "POST", path: "/v2/create-phone-call", authenticated: true, body: expected })
    expect(fake.call(call.id)?.resource).toMatchObject({ agent_id: AGENT, metadata: req.metadata, call_type: "phone_call" })
  })

  it("a wrong key is auth_failed with Retell's message, and the key appears nowhere in the error", async () => {
    const error = await failure(request(), { ...account, apiKey: "key_wrong_42" })
    expect(error).toEqual({ reason: "auth_failed", status: 401, message: "API key is missing or invalid.", retryAfterMs: null })
    expect(JSON.stringify(error)).not.toContain("key_wrong_42")
  })

  it("Retell's validation errors are rejections: numbers not E.164 (400), an agent or number the key cannot see (422)", async () => {
    const calls = fake.calls.length
    const badNumber = await failure(request({ toNumber: "0415 555 0123" }))
    expect(badNumber).toMatchObject({ reason: "rejected", status: 400 })
    expect(badNumber.message).toContain("to_number")
    const unknownAgent = await failure(request({ agentId: "agent_nobody" }))
    expect(unknownAgent).toEqual({
      reason: "rejected",
      status: 422,
      message: "Cannot find requested asset under given api key.",
      retryAfterMs: null
    })
    const notOurNumber = await failure(request({ fromNumber: "+14155550111" }))
    expect(notOurNumber).toMatchObject({ reason: "rejected", status: 422 })
    expect(fake.calls.length).toBe(calls)
  })

  it("429 is rate_limited, 402 rejected, 500 and 503 unavailable, with Retry-After; nothing is created", async () => {
    const calls = fake.calls.length
    fake.failNext(1, 429, "5")
    expect(await failure(request())).toEqual({
      reason: "rate_limited",
      status: 429,
      message: "Account rate limited, please throttle your requests.",
      retryAfterMs: 5000
    })
    fake.failNext(1, 402)
    expect(await failure(request())).toMatchObject({ reason: "rejected", status: 402, message: "Trial has ended, please add payment method." })
    fake.failNext(1, 503, "3")
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: 503, retryAfterMs: 3000 })
    fake.failNext(1, 500)
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: 500, retryAfterMs: null })
    expect(fake.calls.length).toBe(calls)
  })

  it("Retell down: unavailable (nothing could have been sent); back on the same port: creates again", async () => {
    await fake.down()
    const calls = fake.calls.length
    expect(await failure(request())).toMatchObject({ reason: "unavailable", status: null })
    expect(fake.calls.length).toBe(calls)
    await fake.up()
    expect((await created(request())).status).toBe("registered")
  })

  it("no answer within the timeout: unknown_outcome", async () => {
    fake.hangNext()
    expect(await failure(request(), account, 300)).toMatchObject({ reason: "unknown_outcome", status: null })
  })

  it("over the concurrency limit Retell makes the call and ends it concurrency_limit_reached: not placed (to be placed again; Failed once the attempts run out)", async () => {
    fake.failNextWithConcurrencyLimit()
    const call = await created(request())
    await fake.settled()
    expect(events(call.id)).toEqual(["call_ended", "call_analyzed"])
    expect(toCallReport(webhooksFor(call.id)[0]!.webhook)).toEqual({
      status: "Failed",
      providerStatus: "concurrency_limit_reached",
      sid: call.id,
      errorMessage: "concurrency_limit_reached",
      notPlaced: true
    })
  })
})

describe("reconciling an unknown outcome", () => {
  it("a create whose connection dropped after Retell made the call is unknown_outcome, then found by findCalls", async () => {
    const since = Date.now()
    const req = request()
    const actionId = req.metadata["parleyActionId"]!
    fake.dropNextAfterAccept()
    expect((await failure(req)).reason).toBe("unknown_outcome")
    const made = fake.calls.at(-1)!.resource
    expect(made.metadata).toEqual(req.metadata)
    await fake.settled()

    const before = fake.requests.length
    const found = await find({ fromNumber: FROM, toNumber: CUSTOMER, since, parleyActionId: actionId })
    expect(found).toEqual(Either.right(Option.some({ id: made.call_id, status: "ended", disconnectionReason: "user_hangup" })))
    const asked: CallListParams = {
      filter_criteria: {
        from_number: { type: "string", op: "eq", value: FROM },
        to_number: { type: "string", op: "eq", value: CUSTOMER }
      },
      sort_order: "descending",
      limit: 1000
    }
    expect(fake.requests[before]).toEqual({ method: "POST", path: "/v3/list-calls", authenticated: true, body: asked })

    // Every candidate between the numbers is listed, another action's too: the dispatcher decides which is whose.
    const listed = await runWithLoopback(findCalls(account, { fromNumber: FROM, toNumber: CUSTOMER, since }))
    expect(listed.map((f) => [f.call.id, f.parleyActionId])).toContainEqual([made.call_id, actionId])

    const none = Either.right(Option.none())
    expect(await find({ fromNumber: FROM, toNumber: CUSTOMER, since, parleyActionId: "act_other" })).toEqual(none)
    expect(await find({ fromNumber: OTHER_FROM, toNumber: CUSTOMER, since, parleyActionId: actionId })).toEqual(none)
    expect(await find({ fromNumber: FROM, toNumber: "+14155550124", since, parleyActionId: actionId })).toEqual(none)
    // It started long before the window: it cannot be the call of an action sent later.
    expect(await find({ fromNumber: FROM, toNumber: CUSTOMER, since: Date.now() + 5 * 60_000, parleyActionId: actionId }))
      .toEqual(none)
  })

  it("finds a call still dialing (no start_timestamp, listed last) behind pages of newer calls, reading every page", async () => {
    const paged = await RetellFake.start({ stepMs: 60_000, agents: [AGENT], numbers: [{ number: FROM }], maxPageSize: 100 })
    try {
      const pagedAccount = { apiBase: paged.url, apiKey: paged.apiKey }
      const since = Date.now()
      const req = request({ toNumber: "+14155550177" })
      paged.dropNextAfterAccept()
      const lost = await runWithLoopback(Effect.either(createPhoneCall(pagedAccount, req)))
      expect(Either.isLeft(lost) ? lost.left.reason : null).toBe("unknown_outcome")
      const dialing = paged.calls.at(-1)!.resource
      expect(dialing.start_timestamp).toBeUndefined()
      paged.seed(250, FROM, "+14155550177")

      const found = await find(
        { fromNumber: FROM, toNumber: "+14155550177", since, parleyActionId: req.metadata["parleyActionId"]! },
        pagedAccount
      )
      expect(found).toEqual(Either.right(Option.some({ id: dialing.call_id, status: "registered", disconnectionReason: null })))
      const lists = paged.requests.filter((r) => r.path === "/v3/list-calls")
      expect(lists).toHaveLength(3)
      expect(lists.slice(1).every((r) => typeof r.body === "object" && r.body !== null && "pagination_key" in r.body)).toBe(true)
    } finally {
      await paged.stop()
    }
  })

  it("more candidates than it may read: an error (could not tell), never None", async () => {
    const crowded = await RetellFake.start({ stepMs: 5, agents: [AGENT], numbers: [{ number: FROM }], maxPageSize: 100 })
    try {
      crowded.seed(1001, FROM, CUSTOMER)
      const result = await find(
        { fromNumber: FROM, toNumber: CUSTOMER, since: Date.now(), parleyActionId: "act_missing" },
        { apiBase: crowded.url, apiKey: crowded.apiKey }
      )
      expect(Either.isLeft(result) ? [result.left.reason, result.left.status] : result).toEqual(["unavailable", null])
      crowded.calls.splice(1000)
      const all = await find(
        { fromNumber: FROM, toNumber: CUSTOMER, since: Date.now(), parleyActionId: "act_missing" },
        { apiBase: crowded.url, apiKey: crowded.apiKey }
      )
      expect(all).toEqual(Either.right(Option.none()))
    } finally {
      await crowded.stop()
    }
  })

  it("a list that says more follow but gives no way to read them: an error, never None", async () => {
    const broken = await FakeServer.start((_request, _body, response) =>
      sendJson(response, 200, { has_more: true, items: [] })
    )
    try {
      const result = await find(
        { fromNumber: FROM, toNumber: CUSTOMER, since: Date.now(), parleyActionId: "act_missing" },
        { apiBase: broken.url, apiKey: "key" }
      )
      expect(Either.isLeft(result) ? [result.left.reason, result.left.message] : result).toEqual([
        "unavailable",
        expect.stringContaining("no new pagination_key")
      ])
    } finally {
      await broken.stop()
    }
  })

  it("a list without has_more (required in Retell's reference): an error (could not tell), never None", async () => {
    for (const answer of [{ items: [] }, { items: [{ call_id: "call_other", call_type: "phone_call" }] }]) {
      const bare = await FakeServer.start((_request, _body, response) => sendJson(response, 200, answer))
      try {
        const result = await find(
          { fromNumber: FROM, toNumber: CUSTOMER, since: Date.now(), parleyActionId: "act_missing" },
          { apiBase: bare.url, apiKey: "key" }
        )
        expect(Either.isLeft(result) ? [result.left.reason, result.left.message] : result).toEqual([
          "unavailable",
          expect.stringContaining("has_more")
        ])
      } finally {
        await bare.stop()
      }
    }
  })

  it("a failed read is unavailable (safe to ask again); a wrong key is auth_failed", async () => {
    const query = { fromNumber: FROM, toNumber: CUSTOMER, since: Date.now(), parleyActionId: "act_x" }
    await fake.down()
    const down = await find(query)
    expect(Either.isLeft(down) ? down.left.reason : null).toBe("unavailable")
    await fake.up()
    const denied = await find(query, { ...account, apiKey: "nope" })
    expect(Either.isLeft(denied) ? [denied.left.reason, denied.left.status] : null).toEqual(["auth_failed", 401])
  })
})

describe("webhooks", () => {
  it("a completed call: call_started, call_ended, call_analyzed, signed with the API key, reporting transcript and recording", async () => {
    const req = request()
    const call = await created(req)
    await fake.settled()
    const webhooks = webhooksFor(call.id)
    expect(webhooks.map(({ webhook }) => webhook.event)).toEqual(["call_started", "call_ended", "call_analyzed"])
    for (const { callback, webhook } of webhooks) {
      expect(callback.url).toBe(receiver.at("/providers/retell/events"))
      const headers = headersOf(callback)
      expect(verifies(fake.apiKey, headers, callback.body, Date.now())).toBe(true)
      expect(verifies(`${fake.apiKey}x`, headers, callback.body, Date.now())).toBe(false)
      // The official verifier agrees.
      expect(await sdkVerify(callback.body, fake.apiKey, headers["x-retell-signature"]!)).toBe(true)
      expect(callMetadata(webhook)).toEqual(req.metadata)
    }
    const recording = fake.call(call.id)!.resource.recording_url!
    expect(toCallReport(webhooks[0]!.webhook)).toEqual({ status: "In Progress", providerStatus: "ongoing", sid: call.id })
    const ended = toCallReport(webhooks[1]!.webhook)
    expect(ended).toEqual({
      status: "Completed",
      providerStatus: "user_hangup",
      sid: call.id,
      body: expect.stringContaining("Agent: Your delivery arrives tomorrow at 10."),
      audioFileId: recording
    })
    // call_analyzed says the same again: a lost call_ended still ends the call.
    expect(toCallReport(webhooks[2]!.webhook)).toEqual(ended)
  })

  it.each([
    [RetellFake.magic.noAnswer, "dial_no_answer", "No Answer"],
    [RetellFake.magic.busy, "dial_busy", "Busy"],
    [RetellFake.magic.declined, "user_declined", "Busy"],
    [RetellFake.magic.dialFails, "dial_failed", "Failed"]
  ])("a call to %s never connects: no call_started, ends %s → %s with the reason, no transcript", async (number, reason, status) => {
    const call = await created(request({ toNumber: number }))
    await fake.settled()
    const webhooks = webhooksFor(call.id)
    expect(webhooks.map(({ webhook }) => webhook.event)).toEqual(["call_ended", "call_analyzed"])
    expect(webhooks[0]!.webhook).toMatchObject({ status: "not_connected", disconnectionReason: reason, transcript: null, recordingUrl: null })
    expect(toCallReport(webhooks[0]!.webhook)).toEqual({ status, providerStatus: reason, sid: call.id, errorMessage: reason })
  })

  it("voicemail connects (call_started) and is No Answer; an agent hang-up is Completed", async () => {
    const voicemail = await created(request({ toNumber: RetellFake.magic.voicemail }))
    const agentEnds = await created(request({ toNumber: RetellFake.magic.agentHangsUp }))
    await fake.settled()
    expect(events(voicemail.id)).toEqual(["call_started", "call_ended", "call_analyzed"])
    expect(toCallReport(webhooksFor(voicemail.id)[1]!.webhook)).toMatchObject({ status: "No Answer", errorMessage: "voicemail_reached" })
    expect(toCallReport(webhooksFor(agentEnds.id)[1]!.webhook)).toMatchObject({ status: "Completed", providerStatus: "agent_hangup" })
  })

  it("can arrive before the create's answer", async () => {
    fake.webhooksBeforeAnswerNext()
    const call = await created(request())
    expect(events(call.id)).toEqual(["call_started"])
    await fake.settled()
    expect(events(call.id)).toEqual(["call_started", "call_ended", "call_analyzed"])
  })

  it("a call that never connects can end before the create's answer", async () => {
    fake.webhooksBeforeAnswerNext()
    const call = await created(request({ toNumber: RetellFake.magic.busy }))
    expect(events(call.id)).toEqual(["call_ended"])
  })

  it("can be duplicated or delivered in reverse", async () => {
    fake.tweakNextCallbacks({ duplicate: true })
    const duplicated = await created(request())
    fake.tweakNextCallbacks({ reverse: true })
    const reversed = await created(request())
    await fake.settled()
    expect(events(duplicated.id)).toEqual(["call_started", "call_started", "call_ended", "call_ended", "call_analyzed", "call_analyzed"])
    expect(events(reversed.id)).toEqual(["call_analyzed", "call_ended", "call_started"])
  })

  it("go to the agent's webhook URL, the workspace's only for agents without one", async () => {
    const workspace = await CallbackReceiver.start()
    try {
      fake.setWebhook(workspace.at("/workspace"))
      const other = await created(request({ agentId: OTHER_AGENT }))
      const ours = await created(request())
      await fake.settled()
      expect(webhooksFor(other.id)).toHaveLength(0)
      expect(workspace.received.filter((callback) => callback.body.includes(other.id))).toHaveLength(3)
      expect(workspace.received.some((callback) => callback.body.includes(ours.id))).toBe(false)
      expect(webhooksFor(ours.id)).toHaveLength(3)
    } finally {
      await workspace.stop()
    }
  })

  it("refuses unsigned, mis-signed, tampered and stale webhooks, and signatures from too far ahead", async () => {
    fake.tweakNextCallbacks({ signature: "none" })
    const unsigned = await created(request())
    fake.tweakNextCallbacks({ signature: "wrong" })
    const misSigned = await created(request())
    fake.signNextWebhooksAt(-6 * 60_000)
    const stale = await created(request())
    fake.signNextWebhooksAt(6 * 60_000)
    const ahead = await created(request())
    fake.signNextWebhooksAt(-4 * 60_000)
    const late = await created(request())
    await fake.settled()
    const now = Date.now()
    const verified = (id: string) =>
      webhooksFor(id).map(({ callback }) => verifies(fake.apiKey, headersOf(callback), callback.body, now))
    expect(verified(unsigned.id)).toEqual([false, false, false])
    expect(verified(misSigned.id)).toEqual([false, false, false])
    expect(verified(stale.id)).toEqual([false, false, false])
    expect(verified(ahead.id)).toEqual([false, false, false])
    // Four minutes late is still within Retell's five.
    expect(verified(late.id)).toEqual([true, true, true])
    for (const { callback } of webhooksFor(stale.id)) {
      const signature = headersOf(callback)["x-retell-signature"]!
      expect(await sdkVerify(callback.body, fake.apiKey, signature)).toBe(false)
    }
    const { callback } = webhooksFor(late.id)[0]!
    const tampered = callback.body.replace("ongoing", "ended")
    expect(tampered).not.toBe(callback.body)
    expect(verifies(fake.apiKey, headersOf(callback), tampered, now)).toBe(false)
  })

  it("the signature is the SDK's construction, at the edges of the window, with any header case", async () => {
    const body = JSON.stringify({ event: "call_started", call: { call_id: "call_1", call_status: "ongoing" } })
    const at = 1_790_000_000_000
    const signed = await symmetric.sign(body, "key_abc", at)
    expect(retellSignature("key_abc", body, at)).toBe(signed)
    expect(verifies("key_abc", { "X-Retell-Signature": signed }, body, at + 5 * 60_000)).toBe(true)
    expect(verifies("key_abc", { "x-retell-signature": signed }, body, at + 5 * 60_000 + 1)).toBe(false)
    expect(verifies("key_abc", { "x-retell-signature": signed }, body, at - 5 * 60_000)).toBe(true)
    expect(verifies("key_abc", { "x-retell-signature": signed }, body, at - 5 * 60_000 - 1)).toBe(false)
    expect(verifies("key_abc", { "x-retell-signature": signed.toUpperCase().replace("V=", "v=").replace(",D=", ",d=") }, body, at))
      .toBe(true)
    expect(verifies("key_abc", { "x-retell-signature": signed.slice(0, -1) }, body, at)).toBe(false)
    expect(verifies("key_abc", { "x-retell-signature": "garbage" }, body, at)).toBe(false)
    expect(verifies("key_abc", {}, body, at)).toBe(false)
    // No key configured: nothing verifies, not even a signature made with the empty key.
    expect(verifies("", { "x-retell-signature": retellSignature("", body, at) }, body, at)).toBe(false)
  })
})

describe("the disconnection_reason table", () => {
  it("lists every reason of the SDK", () => {
    expect(sameReasons).toBe(true)
    expect(RETELL_DISCONNECTION_REASONS).toHaveLength(34)
  })

  it("maps each reason the fake can end a call with, as Retell's webhooks carry it", async () => {
    const ids = new Map<SdkReason, string>()
    for (const reason of RETELL_DISCONNECTION_REASONS) {
      fake.endNextWith(reason)
      ids.set(reason, (await created(request())).id)
    }
    await fake.settled()
    const reports = new Map(
      [...ids].map(([reason, id]) => {
        const ended = webhooksFor(id).find(({ webhook }) => webhook.event === "call_ended")
        if (ended === undefined) throw new Error(`no call_ended for ${reason}`)
        return [reason, toCallReport(ended.webhook)]
      })
    )
    // What the issue fixes; the rest of the table is RetellStatuses' explicit choice.
    expect(reports.get("user_hangup")?.status).toBe("Completed")
    expect(reports.get("agent_hangup")?.status).toBe("Completed")
    expect(reports.get("dial_no_answer")?.status).toBe("No Answer")
    expect(reports.get("voicemail_reached")?.status).toBe("No Answer")
    expect(reports.get("dial_busy")?.status).toBe("Busy")
    expect(reports.get("dial_failed")?.status).toBe("Failed")
    for (const [reason, report] of reports) {
      if (reason.startsWith("error_")) expect(report?.status).toBe("Failed")
      expect(report?.status).toBe(retellEnding(reason).status)
      expect(report?.providerStatus).toBe(reason)
      if (report?.status === "Completed") {
        expect(report.errorMessage).toBeUndefined()
        expect(report.body).toContain("Agent:")
      } else {
        expect(report?.errorMessage).toBe(reason)
        expect(report?.body).toBeUndefined()
      }
    }
    expect(new Set([...reports.values()].map((report) => report?.status))).toEqual(
      new Set(["Completed", "No Answer", "Busy", "Failed"])
    )
  })

  it("a reason Retell adds later is Failed, with the raw reason kept", () => {
    expect(retellEnding("teleported_away")).toEqual({ status: "Failed", errorMessage: "teleported_away" })
    expect(retellEnding("user_hangup")).toEqual({ status: "Completed", errorMessage: null })
    const webhook: RetellWebhook = {
      _tag: "CallEvent",
      event: "call_ended",
      callId: "call_new",
      status: "ended",
      disconnectionReason: "teleported_away",
      transcript: "Agent: hi",
      recordingUrl: null,
      metadata: {}
    }
    expect(toCallReport(webhook)).toEqual({
      status: "Failed",
      providerStatus: "teleported_away",
      sid: "call_new",
      errorMessage: "teleported_away"
    })
    expect(toCallReport({ ...webhook, disconnectionReason: null })).toMatchObject({ status: "Failed", providerStatus: "ended" })
  })

  it("call statuses before the end: registered is Queued, ongoing In Progress; the rest wait for the reason", () => {
    expect(retellCallStatus("registered")).toBe("Queued")
    expect(retellCallStatus("ongoing")).toBe("In Progress")
    for (const status of ["not_connected", "ended", "error", "warp"]) expect(retellCallStatus(status)).toBeNull()
  })
})

describe("getting a call", () => {
  it("reads the call as it is now, with transcript, recording and metadata; None for an id Retell does not have", async () => {
    const req = request()
    const call = await created(req)
    await fake.settled()
    const now = await runWithLoopback(getCall(account, call.id))
    if (Option.isNone(now)) throw new Error("the call should be found")
    expect(now.value).toMatchObject({ id: call.id, status: "ended", disconnectionReason: "user_hangup", metadata: req.metadata })
    expect(now.value.transcript).toContain("Your delivery arrives tomorrow at 10.")
    expect(now.value.recordingUrl).toBe(fake.call(call.id)!.resource.recording_url)
    expect(callDetailsReport(now.value)).toMatchObject({ status: "Completed", providerStatus: "user_hangup", sid: call.id })
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", path: `/v2/get-call/${call.id}`, authenticated: true })
    expect(Option.isNone(await runWithLoopback(getCall(account, "call_nobody")))).toBe(true)
  })

  it("a call still dialing reports nothing final; a wrong key is auth_failed", async () => {
    const slow = await RetellFake.start({ stepMs: 60_000, agents: [AGENT], numbers: [{ number: FROM }] })
    try {
      const slowAccount = { apiBase: slow.url, apiKey: slow.apiKey }
      const call = await runWithLoopback(createPhoneCall(slowAccount, request()))
      const now = await runWithLoopback(getCall(slowAccount, call.id))
      expect(Option.map(now, callDetailsReport)).toEqual(
        Option.some({ status: "Queued", providerStatus: "registered", sid: call.id })
      )
      const denied = await runWithLoopback(Effect.either(getCall({ ...slowAccount, apiKey: "nope" }, call.id)))
      expect(Either.isLeft(denied) ? [denied.left.reason, denied.left.status] : null).toEqual(["auth_failed", 401])
    } finally {
      await slow.stop()
    }
  })
})

describe("decodeRetellWebhook", () => {
  it("passes other events through as Other, and reads the deprecated `data` field", () => {
    expect(decodeRetellWebhook({ event: "transcript_updated", call: { call_id: "c1" } }))
      .toEqual(Either.right({ _tag: "Other", event: "transcript_updated", callId: "c1" }))
    expect(decodeRetellWebhook({ event: "call_ended" })).toEqual(Either.right({ _tag: "Other", event: "call_ended", callId: null }))
    expect(decodeRetellWebhook({ event: "call_ended", data: { call_id: "c2", call_status: "ended", disconnection_reason: "dial_busy" } }))
      .toEqual(Either.right({
        _tag: "CallEvent",
        event: "call_ended",
        callId: "c2",
        status: "ended",
        disconnectionReason: "dial_busy",
        transcript: null,
        recordingUrl: null,
        metadata: {}
      }))
  })

  it("keeps only string metadata values, and fails on a body that is not a Retell webhook", () => {
    const decoded = decodeRetellWebhook({
      event: "call_started",
      call: { call_id: "c3", call_status: "ongoing", metadata: { parleyActionId: "act_1", attempt: 2, nested: { a: 1 } } }
    })
    expect(Either.map(decoded, callMetadata)).toEqual(Either.right({ parleyActionId: "act_1" }))
    expect(Either.isLeft(decodeRetellWebhook({ call: { call_id: "c4" } }))).toBe(true)
    expect(Either.isLeft(decodeRetellWebhook("call_ended"))).toBe(true)
  })
})

describe("settings", () => {
  const decode = Schema.decodeUnknownEither(RetellSettings)

  it("an API key, and the API base defaulting to Retell's", () => {
    expect(Either.map(decode({ apiKey: "key_1" }), retellAccount))
      .toEqual(Either.right({ apiKey: "key_1", apiBase: "https://api.retellai.com" }))
    expect(Either.map(decode({ apiKey: "key_1", apiBase: "http://127.0.0.1:4010" }), retellAccount))
      .toEqual(Either.right({ apiKey: "key_1", apiBase: "http://127.0.0.1:4010" }))
  })

  it("refuses an empty key and an API base that is not an http(s) URL", () => {
    expect(Either.isLeft(decode({ apiKey: "" }))).toBe(true)
    expect(Either.isLeft(decode({}))).toBe(true)
    expect(Either.isLeft(decode({ apiKey: "key_1", apiBase: "api.retellai.com" }))).toBe(true)
    expect(Either.isLeft(decode({ apiKey: "key_1", apiBase: "ftp://api.retellai.com" }))).toBe(true)
  })
})
