/**
 * Vapi (AI phone calls): create an outbound call, find a call again when a
 * create's outcome is unknown, and read what Vapi posts to Parley's server URL.
 * Plain Effect over `fetch`, with no retries of its own (Vapi's create-call
 * takes no idempotency key; the dispatcher decides, after `findCalls` has looked).
 *
 * The call carries `parleyActionId` in `assistantOverrides.metadata`: Vapi's
 * create-call DTO has no top-level `metadata` (its validation refuses unknown
 * properties), but assistant overrides do, and the Call resource returns them,
 * so list results and server messages can be matched to the action.
 *
 * Failures are `VapiCallError`s whose `reason` means what it means for every
 * provider client (providers/Provider.ts, ProviderFailure): rejected,
 * auth_failed, rate_limited, unavailable, unknown_outcome. Messages are Vapi's own, never the key.
 */
import { createHmac } from "node:crypto"
import { Clock, Data, Effect, Either, Option, type ParseResult, Schema } from "effect"
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
import { constantTimeEqual, exchange, parseJson } from "../ProviderExchange.js"

export const VAPI_API_BASE = "https://api.vapi.ai"
export const VAPI_TIMEOUT_MS = 15_000
/** How far before `since` findCalls still looks (Parley's clock against Vapi's). */
export const VAPI_CLOCK_SKEW_MS = 60_000
/** The page size findCalls asks for (Vapi's default is 100). */
const FIND_LIMIT = 100
/** Lists findCalls reads at most before giving up with an error (each window halved holds fewer calls than a page). */
const FIND_MAX_PAGES = 40

export interface VapiAccount {
  /** Default VAPI_API_BASE; a local fake otherwise. */
  readonly apiBase: string
  /** The organisation's private key, sent as a Bearer token. */
  readonly apiKey: string
}

export interface VapiCallRequest {
  /** The Vapi assistant (Parley's bot). */
  readonly assistantId: string
  /** The Vapi id of the number the call comes from. */
  readonly phoneNumberId: string
  /** E.164. */
  readonly customerNumber: string
  /** assistantOverrides.variableValues: the assistant's template variables (mode, purposeMessage). */
  readonly variableValues: Readonly<Record<string, string>>
  /** assistantOverrides.metadata, e.g. { parleyActionId }. */
  readonly metadata: Readonly<Record<string, string>>
}

export interface VapiCall {
  readonly id: string
  /** Optional in Vapi's `Call` schema (@vapi-ai/server-sdk): a create answer without it is still a call. */
  readonly status: string | null
  readonly endedReason: string | null
}

/** A call as GET /call/{id} has it, with what the end-of-call report would have carried. */
export interface VapiCallDetails extends VapiCall {
  readonly transcript: string | null
  readonly recordingUrl: string | null
}

export type VapiFailureReason = ProviderFailureReason

/** Its message is Vapi's own (or ours when Vapi gave none); never the key. */
export class VapiCallError extends Data.TaggedError("VapiCallError")<ProviderFailureFields<VapiFailureReason>> {}

export interface VapiCallOptions {
  /** Default VAPI_TIMEOUT_MS. */
  readonly timeoutMs?: number | undefined
}

/**
 * What a Vapi error answer means. Vapi refuses a call over the organisation's
 * concurrency limit with a 400 ("Over Concurrency Limit"): that one passes
 * when other calls end, so it is rate limiting, not a rejection.
 */
export const classifyVapiError = (status: number, message: string): VapiFailureReason => {
  if (status === 401 || status === 403) return "auth_failed"
  if (status === 429 || /concurrency limit/i.test(message)) return "rate_limited"
  if (status >= 500) return "unavailable"
  return "rejected"
}

const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })

// As loose as Vapi's own `Call` type where Parley reads it: a valid answer must never become "not a call".
const CallJson = Schema.Struct({
  id: Schema.String,
  status: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  endedReason: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  createdAt: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  phoneNumberId: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  customer: Schema.optional(Schema.NullOr(Schema.Struct({ number: Schema.optional(Schema.NullOr(Schema.String)) }))),
  assistantOverrides: Schema.optional(Schema.NullOr(Schema.Struct({ metadata: Schema.optional(Schema.NullOr(Metadata)) }))),
  artifact: Schema.optional(Schema.NullOr(Schema.Struct({
    transcript: Schema.optional(Schema.NullOr(Schema.String)),
    recordingUrl: Schema.optional(Schema.NullOr(Schema.String)),
    recording: Schema.optional(Schema.NullOr(Schema.Struct({
      mono: Schema.optional(Schema.NullOr(Schema.Struct({ combinedUrl: Schema.optional(Schema.NullOr(Schema.String)) })))
    })))
  })))
})
type CallJson = typeof CallJson.Type

// Vapi's errors are NestJS-shaped: { message: string | string[], error?: string, statusCode }.
const ErrorJson = Schema.Struct({
  message: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  error: Schema.optional(Schema.String)
})

const decodeCall = Schema.decodeUnknownOption(CallJson)
const decodeCalls = Schema.decodeUnknownOption(Schema.Array(CallJson))
const decodeError = Schema.decodeUnknownOption(ErrorJson)

/** The first non-empty string: Vapi has moved fields (top level → artifact → artifact.recording). */
const firstOf = (...values: ReadonlyArray<string | null | undefined>): string | null =>
  values.find((value): value is string => typeof value === "string" && value !== "") ?? null

const toCall = (json: CallJson): VapiCall => ({ id: json.id, status: json.status, endedReason: json.endedReason })

const endpoint = (account: VapiAccount, path: string) => apiUrl(account.apiBase, path)

const errorMessage = (body: string, status: number): string =>
  Option.match(decodeError(parseJson(body)), {
    onNone: () => `Vapi answered HTTP ${status}.`,
    onSome: (json) => {
      const message = json.message === undefined ? [] : typeof json.message === "string" ? [json.message] : json.message
      const parts = message.length > 0 ? message : json.error === undefined ? [] : [json.error]
      return parts.length > 0 ? parts.join("; ") : `Vapi answered HTTP ${status}.`
    }
  })

const answeredError = (answer: Answered, now: number): VapiCallError => {
  const message = errorMessage(answer.body, answer.status)
  return new VapiCallError({
    reason: classifyVapiError(answer.status, message),
    status: answer.status,
    message,
    retryAfterMs: retryAdvice(answer, now)
  })
}

const connectionError = (reason: VapiFailureReason, detail: string) =>
  new VapiCallError({ reason, status: null, message: `Vapi: ${detail}.`, retryAfterMs: null })

const failures: ClientFailures<VapiCallError> = { connection: connectionError, answered: answeredError }

/** POST /call: Vapi answers 201 with the call queued, then reports through server messages. */
export const createCall = Effect.fn("VapiClient.createCall")(function*(
  account: VapiAccount,
  request: VapiCallRequest,
  options: VapiCallOptions = {}
) {
  const answer = yield* exchange({
    method: "POST",
    url: endpoint(account, "/call"),
    headers: {
      authorization: `Bearer ${account.apiKey}`,
      "content-type": "application/json",
      accept: "application/json"
    },
    body: JSON.stringify({
      assistantId: request.assistantId,
      phoneNumberId: request.phoneNumberId,
      customer: { number: request.customerNumber },
      assistantOverrides: { variableValues: request.variableValues, metadata: request.metadata }
    }),
    timeoutMs: options.timeoutMs ?? VAPI_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => createdAnswer(exchanged, failures)))
  const call = decodeCall(parseJson(answer.body))
  if (Option.isNone(call)) {
    // A success we cannot read: the call may be ringing, but we do not know its id.
    return yield* new VapiCallError({
      reason: "unknown_outcome",
      status: answer.status,
      message: `Vapi answered HTTP ${answer.status} with a body that is not a call.`,
      retryAfterMs: null
    })
  }
  return toCall(call.value)
})

/**
 * The call as Vapi has it now (GET /call/{id}): for a call whose server
 * messages Parley may have missed (it was down while Vapi posted them). None
 * when Vapi has no such call (404).
 */
export const getCall = Effect.fn("VapiClient.getCall")(function*(
  account: VapiAccount,
  id: string,
  options: VapiCallOptions = {}
) {
  const found = yield* exchange({
    method: "GET",
    url: endpoint(account, `/call/${encodeURIComponent(id)}`),
    headers: { authorization: `Bearer ${account.apiKey}`, accept: "application/json" },
    timeoutMs: options.timeoutMs ?? VAPI_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => foundAnswer(exchanged, failures, [404])))
  if (Option.isNone(found)) return Option.none<VapiCallDetails>()
  const answer = found.value
  const call = decodeCall(parseJson(answer.body))
  if (Option.isNone(call)) {
    return yield* new VapiCallError({
      reason: "unavailable",
      status: answer.status,
      message: "Vapi answered with a body that is not a call.",
      retryAfterMs: null
    })
  }
  const artifact = call.value.artifact ?? undefined
  return Option.some<VapiCallDetails>({
    ...toCall(call.value),
    transcript: firstOf(artifact?.transcript),
    recordingUrl: firstOf(artifact?.recordingUrl, artifact?.recording?.mono?.combinedUrl)
  })
})

export interface VapiFindQuery {
  readonly phoneNumberId: string
  /** E.164: the number called. */
  readonly customerNumber: string
  /** ms since the epoch: the call was created at or after this (less VAPI_CLOCK_SKEW_MS). */
  readonly since: number
}

/** A call findCalls found: when Vapi created it, and the Parley action its metadata names (null when none). */
export interface VapiFoundCall {
  readonly call: VapiCall
  readonly createdAt: number
  readonly parleyActionId: string | null
}

const createdAt = (json: CallJson) => (json.createdAt === null ? NaN : Date.parse(json.createdAt))

/**
 * Reconciles a create whose outcome is unknown: every call from the number to
 * the customer created in the window (GET /call filtered by phoneNumberId and
 * createdAtGe), oldest first, each with the `parleyActionId` of its
 * assistantOverrides.metadata. Which is the action's is the caller's decision.
 *
 * GET /call answers a plain array of at most `limit` calls and takes no sort
 * order: Vapi's reference promises none, so nothing here assumes which calls a
 * full page left out. A window whose answer is short holds no more calls; a
 * full one is halved by creation time (createdAtGe/createdAtLe, both ends
 * inclusive, in milliseconds) and both halves read, until every window read
 * was short. Past FIND_MAX_PAGES lists, or a single millisecond with a full
 * page, the answer is an error, never a partial list that could miss the call.
 */
export const findCalls = Effect.fn("VapiClient.findCalls")(function*(
  account: VapiAccount,
  query: VapiFindQuery,
  options: VapiCallOptions = {}
) {
  const seen = new Map<string, CallJson>()
  let reads = 0
  const read = (from: number, to: number | null) =>
    Effect.gen(function*() {
      reads++
      const params = new URLSearchParams({
        phoneNumberId: query.phoneNumberId,
        createdAtGe: new Date(from).toISOString(),
        limit: String(FIND_LIMIT),
        ...(to === null ? {} : { createdAtLe: new Date(to).toISOString() })
      })
      const answer = yield* exchange({
        method: "GET",
        url: endpoint(account, `/call?${params.toString()}`),
        headers: { authorization: `Bearer ${account.apiKey}`, accept: "application/json" },
        timeoutMs: options.timeoutMs ?? VAPI_TIMEOUT_MS
      }).pipe(Effect.flatMap((exchanged) => readAnswer(exchanged, failures)))
      const calls = decodeCalls(parseJson(answer.body))
      if (Option.isNone(calls)) {
        return yield* new VapiCallError({
          reason: "unavailable",
          status: answer.status,
          message: "Vapi answered the call list with a body that is not a list of calls.",
          retryAfterMs: null
        })
      }
      for (const json of calls.value) seen.set(json.id, json)
      return calls.value.length >= FIND_LIMIT
    })
  const since = query.since - VAPI_CLOCK_SKEW_MS
  // The first read is open-ended; when it is full, the window closes at the newest a call can be (Vapi's clock).
  const windows: Array<readonly [number, number]> = []
  if (yield* read(since, null)) windows.push([since, (yield* Clock.currentTimeMillis) + VAPI_CLOCK_SKEW_MS])
  while (windows.length > 0) {
    if (reads + 2 > FIND_MAX_PAGES) {
      return yield* connectionError("unavailable", `more than ${FIND_MAX_PAGES} pages of calls from the number`)
    }
    const [from, to] = windows.pop() ?? [since, since]
    if (from >= to) return yield* connectionError("unavailable", `more than ${FIND_LIMIT} calls from the number in one millisecond`)
    const middle = Math.floor((from + to) / 2)
    if (yield* read(from, middle)) windows.push([from, middle])
    if (yield* read(middle + 1, to)) windows.push([middle + 1, to])
  }
  return [...seen.values()]
    .filter((json) =>
      (json.phoneNumberId === null || json.phoneNumberId === query.phoneNumberId) &&
      // A call whose customer is not given is kept: better a candidate too many than one missed.
      (json.customer?.number === undefined || json.customer.number === null ||
        json.customer.number === query.customerNumber)
    )
    .map((json): VapiFoundCall => {
      const owner = json.assistantOverrides?.metadata?.["parleyActionId"]
      return { call: toCall(json), createdAt: createdAt(json), parleyActionId: typeof owner === "string" ? owner : null }
    })
    .sort((a, b) => (a.createdAt || 0) - (b.createdAt || 0))
})

const header = (headers: Readonly<Record<string, string | undefined>>, name: string): string | undefined => {
  const wanted = name.toLowerCase()
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value
  return undefined
}

/**
 * How Vapi authenticates the server messages it posts, beyond the secret itself: the header names and
 * payload format of an HMAC credential and the header of a Bearer credential, when the organisation's
 * Vapi credential does not use Vapi's defaults (`parley providers set --kind vapi --signature-header …`).
 */
export interface VapiServerAuth {
  /** HMAC: the header carrying the signature. Default `x-signature`. */
  readonly signatureHeader?: string | undefined
  /** HMAC: the header carrying the timestamp. Default `x-timestamp`. */
  readonly timestampHeader?: string | undefined
  /** HMAC: what is signed, from `{timestamp}`, `{body}`, `{method}`, `{url}`, `{svix-id}`. Default `{timestamp}.{body}`. */
  readonly payloadFormat?: string | undefined
  /** HMAC: the header carrying the message id that `{svix-id}` stands for. Default `svix-id`. */
  readonly messageIdHeader?: string | undefined
  /** HMAC: what precedes the signature (`sha256=`, `v1,`); when not given, any `name=`, `name:` or `name,` is. */
  readonly signaturePrefix?: string | undefined
  /** Bearer credential: the header carrying the token. Default `Authorization`. */
  readonly credentialHeader?: string | undefined
}

/** The headers a server message carries its secret or signature in under Vapi's defaults (see VapiServerAuth). */
export const DEFAULT_SECRET_HEADERS: ReadonlyArray<string> = ["x-vapi-secret", "authorization", "x-signature"]

/** How old (or how far ahead) a signed timestamp may be: Standard Webhooks' 5 minutes. */
export const VAPI_SIGNATURE_TOLERANCE_MS = 5 * 60_000

/** The request a server message arrived with, as far as its authentication is concerned. */
export interface VapiSignedRequest {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly rawBody: string
  readonly method: string
  /** The URL Vapi posted to, as Vapi saw it. */
  readonly url: string
  /** Now, ms since the epoch. */
  readonly now: number
}

/** A timestamp in seconds or milliseconds since the epoch (or an ISO date), as ms; NaN when unreadable. */
const timestampMillis = (value: string): number => {
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    const number = Number(trimmed)
    return number < 1e12 ? number * 1000 : number
  }
  return Date.parse(trimmed)
}

/** The algorithms of the SDK's `HmacAuthenticationPlanAlgorithm`, and its `HmacAuthenticationPlanSignatureEncoding`s. */
const HMAC_ALGORITHMS = ["sha1", "sha256", "sha512"] as const
const HMAC_ENCODINGS = ["hex", "base64"] as const

/**
 * Whether a server message comes from Vapi, by the secret configured for Parley's server URL, in any of
 * the ways Vapi documents sending it:
 * - `x-vapi-secret: <secret>`: the server URL's secret;
 * - a Bearer credential: `Bearer <secret>` (or the bare secret, prefix disabled) in `Authorization` or the
 *   credential's configured header;
 * - an HMAC credential (the SDK's `HmacAuthenticationPlan`): the signature header holds HMAC-SHA1, -SHA256
 *   or -SHA512, hex or base64, optionally prefixed (`sha256=`, `sha256:`, Svix's `v1,`; several
 *   space-separated signatures, as Svix sends while rotating, are each tried), keyed with the secret — or
 *   with the bytes it encodes when it is base64 (`secretIsBase64`; a Svix `whsec_` prefix is not part of
 *   them) — of the payload format (`{timestamp}.{body}` by default; `{svix-id}` is the message id header's
 *   value); the timestamp must be within VAPI_SIGNATURE_TOLERANCE_MS of now, so a captured message cannot
 *   be replayed later.
 * Every candidate is compared in constant time, whichever matched.
 */
export const verifyVapiSecret = (
  secret: string,
  request: VapiSignedRequest,
  auth: VapiServerAuth = {}
): boolean => {
  if (secret === "") return false
  const { headers } = request
  const plain = header(headers, "x-vapi-secret")
  const credentialHeader = auth.credentialHeader ?? "authorization"
  const bearer = header(headers, credentialHeader)
  const byHeader = plain !== undefined && constantTimeEqual(plain, secret)
  const byBearer = bearer !== undefined &&
    [constantTimeEqual(bearer, `Bearer ${secret}`), constantTimeEqual(bearer, secret)].some((matched) => matched)
  return byHeader || byBearer || verifyVapiHmac(secret, request, auth)
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** The keys a secret may sign with: itself, and the bytes it spells in base64 (Vapi's `secretIsBase64`). */
const hmacKeys = (secret: string): ReadonlyArray<string | Buffer> => {
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret
  return encoded !== "" && BASE64.test(encoded) ? [secret, Buffer.from(encoded, "base64")] : [secret]
}

/**
 * What may be the signature itself in a header value: each space-separated entry, as given and without
 * its prefix — the configured one, else a leading `name=` (not base64 padding), `name:` or `name,`
 * (neither `:` nor `,` occurs in hex or base64).
 */
const signatureCandidates = (value: string, prefix: string | undefined): ReadonlyArray<string> =>
  value.split(" ").filter((entry) => entry !== "").flatMap((entry) => {
    if (prefix !== undefined) return entry.startsWith(prefix) ? [entry.slice(prefix.length)] : []
    const bare = entry.replace(/^[A-Za-z0-9_.-]+[:,]/, "").replace(/^[A-Za-z0-9_-]+=(?!=*$)/, "")
    return bare === entry ? [entry] : [entry, bare]
  })

const verifyVapiHmac = (secret: string, request: VapiSignedRequest, auth: VapiServerAuth): boolean => {
  const signature = header(request.headers, auth.signatureHeader ?? "x-signature")
  if (signature === undefined || signature === "") return false
  const format = auth.payloadFormat ?? "{timestamp}.{body}"
  const timestamp = header(request.headers, auth.timestampHeader ?? "x-timestamp")
  if (format.includes("{timestamp}") && timestamp === undefined) return false
  if (timestamp !== undefined) {
    const at = timestampMillis(timestamp)
    if (!Number.isFinite(at) || Math.abs(request.now - at) > VAPI_SIGNATURE_TOLERANCE_MS) return false
  }
  const messageId = header(request.headers, auth.messageIdHeader ?? "svix-id")
  if (format.includes("{svix-id}") && (messageId === undefined || messageId === "")) return false
  const payload = format.replace(/\{(timestamp|body|method|url|svix-id)\}/g, (_, name: string) =>
    name === "timestamp"
      ? timestamp ?? ""
      : name === "body"
      ? request.rawBody
      : name === "method"
      ? request.method
      : name === "url"
      ? request.url
      : messageId ?? ""
  )
  const expected = hmacKeys(secret).flatMap((key) =>
    HMAC_ALGORITHMS.flatMap((algorithm) => {
      const mac = createHmac(algorithm, key).update(payload).digest()
      return HMAC_ENCODINGS.map((encoding) => mac.toString(encoding))
    })
  )
  const given = signatureCandidates(signature, auth.signaturePrefix)
  return expected
    .flatMap((candidate) => given.map((entry) => constantTimeEqual(entry, candidate)))
    .reduce((matched, next) => matched || next, false)
}

/** Vapi's call statuses (status-update messages and Call.status). */
export const VAPI_CALL_STATUSES = ["queued", "ringing", "in-progress", "forwarding", "ended"] as const
export type VapiCallStatus = (typeof VAPI_CALL_STATUSES)[number]

/** A server message as Parley uses it; other message types pass through as Other. */
export type VapiServerMessage =
  | {
    readonly _tag: "StatusUpdate"
    readonly callId: string
    readonly status: VapiCallStatus
    /** Only on "ended". */
    readonly endedReason: string | null
    /** The call's assistantOverrides.metadata string values (parleyActionId). */
    readonly metadata: Readonly<Record<string, string>>
    /** ms since the epoch, when Vapi gave one. */
    readonly timestamp: number | null
  }
  | {
    readonly _tag: "EndOfCallReport"
    readonly callId: string
    readonly endedReason: string
    readonly transcript: string | null
    readonly recordingUrl: string | null
    readonly summary: string | null
    readonly metadata: Readonly<Record<string, string>>
    readonly timestamp: number | null
  }
  | { readonly _tag: "Other"; readonly type: string; readonly callId: string | null }

const CallRef = Schema.Struct({
  id: Schema.String,
  assistantOverrides: Schema.optional(Schema.NullOr(Schema.Struct({ metadata: Schema.optional(Schema.NullOr(Metadata)) })))
})
const Timestamp = Schema.optional(Schema.NullOr(Schema.Union(Schema.Number, Schema.String)))
const OptionalString = Schema.optional(Schema.NullOr(Schema.String))

const StatusUpdateJson = Schema.Struct({
  type: Schema.Literal("status-update"),
  status: Schema.Literal(...VAPI_CALL_STATUSES),
  endedReason: OptionalString,
  call: CallRef,
  timestamp: Timestamp
})

const EndOfCallReportJson = Schema.Struct({
  type: Schema.Literal("end-of-call-report"),
  endedReason: Schema.String,
  call: CallRef,
  artifact: Schema.optional(Schema.NullOr(Schema.Struct({
    transcript: OptionalString,
    recordingUrl: OptionalString,
    stereoRecordingUrl: OptionalString,
    recording: Schema.optional(Schema.NullOr(Schema.Struct({
      stereoUrl: OptionalString,
      mono: Schema.optional(Schema.NullOr(Schema.Struct({ combinedUrl: OptionalString })))
    })))
  }))),
  analysis: Schema.optional(Schema.NullOr(Schema.Struct({ summary: OptionalString }))),
  // Older messages carried these at the top level; artifact.* is where Vapi documents them now.
  transcript: OptionalString,
  recordingUrl: OptionalString,
  summary: OptionalString,
  timestamp: Timestamp
})

const OtherJson = Schema.Struct({
  type: Schema.String,
  call: Schema.optional(Schema.NullOr(Schema.Struct({ id: Schema.String })))
})

const decodeStatusUpdate = Schema.decodeUnknownOption(Schema.Struct({ message: StatusUpdateJson }))
const decodeEndOfCallReport = Schema.decodeUnknownOption(Schema.Struct({ message: EndOfCallReportJson }))
const decodeOther = Schema.decodeUnknownEither(Schema.Struct({ message: OtherJson }))

const stringValues = (metadata: Readonly<Record<string, unknown>> | null | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(metadata ?? {}).flatMap(([key, value]) => (typeof value === "string" ? [[key, value]] : []))
  )

const toMillis = (value: number | string | null | undefined): number | null => {
  if (value === null || value === undefined) return null
  const millis = typeof value === "number" ? value : Date.parse(value)
  return Number.isFinite(millis) ? millis : null
}

const statusUpdate = (message: typeof StatusUpdateJson.Type): VapiServerMessage => ({
  _tag: "StatusUpdate",
  callId: message.call.id,
  status: message.status,
  endedReason: message.endedReason ?? null,
  metadata: stringValues(message.call.assistantOverrides?.metadata),
  timestamp: toMillis(message.timestamp)
})

const endOfCallReport = (message: typeof EndOfCallReportJson.Type): VapiServerMessage => {
  const artifact = message.artifact ?? undefined
  return {
    _tag: "EndOfCallReport",
    callId: message.call.id,
    endedReason: message.endedReason,
    transcript: firstOf(artifact?.transcript, message.transcript),
    recordingUrl: firstOf(
      artifact?.recordingUrl,
      artifact?.recording?.mono?.combinedUrl,
      artifact?.recording?.stereoUrl,
      artifact?.stereoRecordingUrl,
      message.recordingUrl
    ),
    summary: firstOf(message.analysis?.summary, message.summary),
    metadata: stringValues(message.call.assistantOverrides?.metadata),
    timestamp: toMillis(message.timestamp)
  }
}

/** Decodes a server message body (`{ message: { type, … } }`) already parsed from JSON. */
export const decodeServerMessage = (json: unknown): Either.Either<VapiServerMessage, ParseResult.ParseError> => {
  const status = decodeStatusUpdate(json)
  if (Option.isSome(status)) return Either.right(statusUpdate(status.value.message))
  const report = decodeEndOfCallReport(json)
  if (Option.isSome(report)) return Either.right(endOfCallReport(report.value.message))
  // A status-update or end-of-call-report that does not fit (an unknown status,
  // no call id) passes as Other rather than failing: only a body that is not a
  // server message at all is an error.
  return Either.map(decodeOther(json), ({ message }): VapiServerMessage => ({
    _tag: "Other",
    type: message.type,
    callId: message.call?.id ?? null
  }))
}
