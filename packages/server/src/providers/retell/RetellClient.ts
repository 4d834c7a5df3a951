/**
 * Retell AI (AI phone calls): create an outbound phone call, read one call
 * again, and find a call when a create's outcome is unknown. Plain Effect over
 * `fetch`, with no retries of its own (Retell's create-phone-call takes no
 * idempotency key; the dispatcher decides, after `findCalls` has looked).
 *
 * The call carries `parleyActionId` in its top-level `metadata`, which Retell
 * stores untouched and returns on the call (get-call, list-calls, webhooks), so
 * a listed call or a webhook can be matched to the action.
 *
 * Failures are `RetellCallError`s whose `reason` means what it means for
 * every provider client (providers/Provider.ts, ProviderFailure): rejected,
 * auth_failed, rate_limited, unavailable, unknown_outcome. Messages are Retell's own, never the key.
 */
import { Data, Effect, Option, Schema } from "effect"
import {
  type Answered,
  apiUrl,
  type ClientFailures,
  createdAnswer,
  foundAnswer,
  type ProviderFailureFields,
  type ProviderFailureReason,
  readAnswer,
  retryAdvice
} from "../ProviderAnswers.js"
import { exchange, parseJson } from "../ProviderExchange.js"

export const RETELL_API_BASE = "https://api.retellai.com"
export const RETELL_TIMEOUT_MS = 15_000
/** How far before `since` findCalls still counts a call as a candidate (Parley's clock against Retell's). */
export const RETELL_CLOCK_SKEW_MS = 60_000
/** list-calls' largest page (Retell's API reference: `limit` maximum 1000). */
const FIND_LIMIT = 1000
/**
 * Pages findCalls reads at most: 10,000 calls between the same two numbers. Past
 * that it answers "could not tell" rather than "not there", so a call it did
 * not get to see is never placed a second time.
 */
const FIND_MAX_PAGES = 10

export interface RetellAccount {
  /** Default RETELL_API_BASE; a local fake otherwise. */
  readonly apiBase: string
  /** The workspace's API key: sent as a Bearer token, and the key Retell signs webhooks with. */
  readonly apiKey: string
}

export interface RetellCallRequest {
  /** The Retell agent (Parley's bot), sent as override_agent_id. */
  readonly agentId: string
  /** E.164: a number bought from or imported into Retell (Retell numbers need no provider id). */
  readonly fromNumber: string
  /** E.164. */
  readonly toNumber: string
  /** retell_llm_dynamic_variables: the agent's prompt variables (mode, purposeMessage); strings only. */
  readonly dynamicVariables: Readonly<Record<string, string>>
  /** metadata, e.g. { parleyActionId }. */
  readonly metadata: Readonly<Record<string, string>>
}

export interface RetellCall {
  readonly id: string
  /** call_status: registered, not_connected, ongoing, ended, error; null when an answer lacks it. */
  readonly status: string | null
  readonly disconnectionReason: string | null
}

/** A call as get-call has it, with what the call_ended webhook would have carried. */
export interface RetellCallDetails extends RetellCall {
  readonly transcript: string | null
  readonly recordingUrl: string | null
  /** The call's metadata string values (parleyActionId). */
  readonly metadata: Readonly<Record<string, string>>
}

export type RetellFailureReason = ProviderFailureReason

/** Its message is Retell's own (or ours when Retell gave none); never the key. */
export class RetellCallError extends Data.TaggedError("RetellCallError")<ProviderFailureFields<RetellFailureReason>> {}

export interface RetellCallOptions {
  /** Default RETELL_TIMEOUT_MS. */
  readonly timeoutMs?: number | undefined
}

/**
 * What a Retell error answer means. Retell documents 400 (bad request), 401,
 * 402 ("Trial has ended, please add payment method"), 422 (an agent or number
 * the key cannot see), 429 and 500 for create-phone-call: 402 does not pass by
 * itself, so it is a rejection like the other 4xx.
 */
export const classifyRetellError = (status: number): RetellFailureReason => {
  if (status === 401 || status === 403) return "auth_failed"
  if (status === 429) return "rate_limited"
  if (status >= 500) return "unavailable"
  return "rejected"
}

const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const OptionalString = Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })

/**
 * The fields of Retell's call object Parley reads (create-phone-call's 201,
 * get-call, list-calls items, webhooks' `call`). Only `call_id` is insisted
 * on: a 201 that names the call is a call made, whatever else it lacks.
 */
export const RetellCallJson = Schema.Struct({
  call_id: Schema.String,
  call_status: OptionalString,
  from_number: OptionalString,
  to_number: OptionalString,
  disconnection_reason: OptionalString,
  transcript: OptionalString,
  recording_url: OptionalString,
  start_timestamp: Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => null }),
  metadata: Schema.optional(Schema.NullOr(Schema.Unknown))
})
export type RetellCallJson = typeof RetellCallJson.Type

// Retell's errors: { status: "error", message: string }.
const ErrorJson = Schema.Struct({ message: Schema.String })

const ListJson = Schema.Struct({
  items: Schema.Array(Schema.Unknown),
  // Required in Retell's reference; a list without it cannot say it is the last page (findCalls).
  has_more: Schema.optional(Schema.Boolean),
  pagination_key: Schema.optional(Schema.NullOr(Schema.String))
})

const decodeCall = Schema.decodeUnknownOption(RetellCallJson)
const decodeList = Schema.decodeUnknownOption(ListJson)
const decodeError = Schema.decodeUnknownOption(ErrorJson)
const decodeMetadata = Schema.decodeUnknownOption(Metadata)

/** The string values of a call's metadata (Retell stores any object; Parley only puts strings there). */
export const metadataStrings = (metadata: unknown): Readonly<Record<string, string>> =>
  Option.match(decodeMetadata(metadata), {
    onNone: () => ({}),
    onSome: (record) =>
      Object.fromEntries(Object.entries(record).flatMap(([key, value]) => (typeof value === "string" ? [[key, value]] : [])))
  })

const nonEmpty = (value: string | null): string | null => (value === null || value === "" ? null : value)

export const toCall = (json: RetellCallJson): RetellCall => ({
  id: json.call_id,
  status: json.call_status,
  disconnectionReason: nonEmpty(json.disconnection_reason)
})

export const toCallDetails = (json: RetellCallJson): RetellCallDetails => ({
  ...toCall(json),
  transcript: nonEmpty(json.transcript),
  recordingUrl: nonEmpty(json.recording_url),
  metadata: metadataStrings(json.metadata)
})

const endpoint = (account: RetellAccount, path: string) => apiUrl(account.apiBase, path)

const errorMessage = (body: string, status: number): string =>
  Option.match(decodeError(parseJson(body)), {
    onNone: () => `Retell answered HTTP ${status}.`,
    onSome: (json) => (json.message === "" ? `Retell answered HTTP ${status}.` : json.message)
  })

const answeredError = (answer: Answered, now: number): RetellCallError =>
  new RetellCallError({
    reason: classifyRetellError(answer.status),
    status: answer.status,
    message: errorMessage(answer.body, answer.status),
    retryAfterMs: retryAdvice(answer, now)
  })

const connectionError = (reason: RetellFailureReason, detail: string) =>
  new RetellCallError({ reason, status: null, message: `Retell: ${detail}.`, retryAfterMs: null })

const failures: ClientFailures<RetellCallError> = { connection: connectionError, answered: answeredError }

const notACall = (status: number, what: string) =>
  new RetellCallError({ reason: "unavailable", status, message: `Retell answered ${what} with a body that is not a call.`, retryAfterMs: null })

const headers = (account: RetellAccount, json: boolean): Readonly<Record<string, string>> => ({
  authorization: `Bearer ${account.apiKey}`,
  accept: "application/json",
  ...(json ? { "content-type": "application/json" } : {})
})

/** POST /v2/create-phone-call: Retell answers 201 with the call registered, then reports through webhooks. */
export const createPhoneCall = Effect.fn("RetellClient.createPhoneCall")(function*(
  account: RetellAccount,
  request: RetellCallRequest,
  options: RetellCallOptions = {}
) {
  const answer = yield* exchange({
    method: "POST",
    url: endpoint(account, "/v2/create-phone-call"),
    headers: headers(account, true),
    body: JSON.stringify({
      from_number: request.fromNumber,
      to_number: request.toNumber,
      override_agent_id: request.agentId,
      retell_llm_dynamic_variables: request.dynamicVariables,
      metadata: request.metadata
    }),
    timeoutMs: options.timeoutMs ?? RETELL_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => createdAnswer(exchanged, failures)))
  const call = decodeCall(parseJson(answer.body))
  if (Option.isNone(call)) {
    // A success we cannot read: the phone may be ringing, but we do not know the call's id.
    return yield* new RetellCallError({
      reason: "unknown_outcome",
      status: answer.status,
      message: `Retell answered HTTP ${answer.status} with a body that is not a call.`,
      retryAfterMs: null
    })
  }
  return toCall(call.value)
})

/**
 * The call as Retell has it now (GET /v2/get-call/{call_id}): for a call whose
 * webhooks Parley may have missed. None when Retell has no such call: Retell's
 * API reference gives get-call no 404 but a 422 ("Cannot find requested asset
 * under given api key"); both read as "no such call".
 */
export const getCall = Effect.fn("RetellClient.getCall")(function*(
  account: RetellAccount,
  id: string,
  options: RetellCallOptions = {}
) {
  const found = yield* exchange({
    method: "GET",
    url: endpoint(account, `/v2/get-call/${encodeURIComponent(id)}`),
    headers: headers(account, false),
    timeoutMs: options.timeoutMs ?? RETELL_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => foundAnswer(exchanged, failures, [404, 422])))
  if (Option.isNone(found)) return Option.none<RetellCallDetails>()
  const answer = found.value
  const call = decodeCall(parseJson(answer.body))
  if (Option.isNone(call)) return yield* notACall(answer.status, "get-call")
  return Option.some(toCallDetails(call.value))
})

export interface RetellFindQuery {
  /** The number the call was placed from, E.164. */
  readonly fromNumber: string
  /** The number called, E.164. */
  readonly toNumber: string
  /** ms since the epoch: the create was sent at or after this (less RETELL_CLOCK_SKEW_MS). */
  readonly since: number
}

/** A call findCalls found: when it started (null while it has not), and the Parley action its metadata names. */
export interface RetellFoundCall {
  readonly call: RetellCall
  readonly startedAt: number | null
  readonly parleyActionId: string | null
}

/**
 * Reconciles a create whose outcome is unknown: every call between the two
 * numbers that may have been created in the window (POST /v3/list-calls, every
 * page: `pagination_key` until `has_more` is false; a page without `has_more`
 * is not taken for the last), oldest first, each with the
 * `parleyActionId` of its metadata. Which is the action's is the caller's
 * decision. Past FIND_MAX_PAGES, or when Retell says more follow without a way
 * to read them, the answer is an error ("could not tell"), never a partial list
 * that could miss the call.
 *
 * The time window is applied here, not in the filter: Retell filters and sorts
 * by `start_timestamp`, which a call has only once it started, so a filter on
 * it would hide a call still dialing, exactly the one a resend would duplicate.
 * A call without `start_timestamp` is always a candidate (listed last); one that
 * started before the window cannot be this action's.
 */
export const findCalls = Effect.fn("RetellClient.findCalls")(function*(
  account: RetellAccount,
  query: RetellFindQuery,
  options: RetellCallOptions = {}
) {
  const windowStart = query.since - RETELL_CLOCK_SKEW_MS
  let paginationKey: string | null = null
  const seen = new Map<string, RetellCallJson>()
  for (let page = 0;; page++) {
    if (page === FIND_MAX_PAGES) return yield* inconclusive(`more than ${FIND_MAX_PAGES} pages of calls between these numbers`)
    const answer = yield* exchange({
      method: "POST",
      url: endpoint(account, "/v3/list-calls"),
      headers: headers(account, true),
      body: JSON.stringify({
        filter_criteria: {
          from_number: { type: "string", op: "eq", value: query.fromNumber },
          to_number: { type: "string", op: "eq", value: query.toNumber }
        },
        sort_order: "descending",
        limit: FIND_LIMIT,
        ...(paginationKey === null ? {} : { pagination_key: paginationKey })
      }),
      timeoutMs: options.timeoutMs ?? RETELL_TIMEOUT_MS
    }).pipe(Effect.flatMap((exchanged) => readAnswer(exchanged, failures)))
    const list = decodeList(parseJson(answer.body))
    if (Option.isNone(list)) {
      return yield* new RetellCallError({
        reason: "unavailable",
        status: answer.status,
        message: "Retell answered list-calls with a body that is not a list of calls.",
        retryAfterMs: null
      })
    }
    for (const item of list.value.items) {
      // A web call in the list (no numbers) or an item we cannot read is not a phone call between them.
      const call = decodeCall(item)
      if (Option.isNone(call)) continue
      const json = call.value
      if (json.from_number !== null && json.from_number !== query.fromNumber) continue
      if (json.to_number !== null && json.to_number !== query.toNumber) continue
      if (json.start_timestamp !== null && json.start_timestamp < windowStart) continue
      seen.set(json.call_id, json)
    }
    const next = list.value.pagination_key ?? null
    if (list.value.has_more === false) break
    // Without `has_more` the page may or may not be the last: read on when Retell gave the way, else could not tell.
    if (list.value.has_more === undefined && (next === null || next === paginationKey)) {
      return yield* inconclusive("Retell's list of calls did not say whether more follow (no has_more)")
    }
    if (next === null || next === paginationKey) {
      return yield* inconclusive("Retell said more calls follow but gave no new pagination_key to read them")
    }
    paginationKey = next
  }
  return [...seen.values()]
    .map((json): RetellFoundCall => ({
      call: toCall(json),
      startedAt: json.start_timestamp,
      parleyActionId: metadataStrings(json.metadata)["parleyActionId"] ?? null
    }))
    .sort((a, b) => (a.startedAt ?? Number.MAX_SAFE_INTEGER) - (b.startedAt ?? Number.MAX_SAFE_INTEGER))
})

/** findCalls could not see every candidate: not "no such call", which would let the action be sent again. */
const inconclusive = (why: string) =>
  new RetellCallError({
    reason: "unavailable",
    status: null,
    message: `Retell: ${why}; the call could not be looked for in all of them.`,
    retryAfterMs: null
  })
