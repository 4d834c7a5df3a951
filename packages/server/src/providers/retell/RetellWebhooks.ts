/**
 * What Retell posts to an agent's webhook URL, and how Parley knows Retell sent it.
 *
 * Retell signs every webhook with the workspace's API key:
 * `x-retell-signature: v=<ms since the epoch>,d=<hex HMAC-SHA256 of the raw
 * body followed by that timestamp>` (the construction of the `verify` helper of
 * the official `retell-sdk`). A signature more than 5 minutes away from Parley's
 * clock, either way, is refused, as the SDK refuses it.
 *
 * The body is `{ event, call }`, `call` being the call object get-call returns
 * (older payloads named it `data`). Parley reads `call_started`, `call_ended`
 * and `call_analyzed`; the other events an agent can subscribe to pass through
 * as Other.
 */
import { createHmac } from "node:crypto"
import { Either, Option, type ParseResult, Schema } from "effect"
import { constantTimeEqual } from "../ProviderExchange.js"
import { metadataStrings, RetellCallJson } from "./RetellClient.js"

/** How far a signature's timestamp may be from Parley's clock (retell-sdk's FIVE_MINUTES). */
export const RETELL_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000
export const RETELL_SIGNATURE_HEADER = "x-retell-signature"

const SIGNATURE = /^v=(\d+),d=([0-9a-f]{64})$/i

/** The header Retell would send for this body at this time (for the tests' fake, and to document the construction). */
export const retellSignature = (apiKey: string, rawBody: string, timestamp: number): string =>
  `v=${timestamp},d=${createHmac("sha256", apiKey).update(`${rawBody}${timestamp}`).digest("hex")}`

const header = (headers: Readonly<Record<string, string | undefined>>, name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value
  return undefined
}

/** The request a webhook arrived with, as far as its signature is concerned. */
export interface RetellSignedRequest {
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The body exactly as received: the signature covers its bytes. */
  readonly rawBody: string
  /** Now, ms since the epoch. */
  readonly now: number
}

/**
 * Whether a webhook comes from Retell: its `x-retell-signature` is the HMAC of
 * this raw body and the signature's timestamp, keyed by the organisation's API
 * key, and that timestamp is within 5 minutes of now. The comparison takes
 * constant time.
 */
export const verifyRetellSignature = (apiKey: string, request: RetellSignedRequest): boolean => {
  if (apiKey === "") return false
  const match = SIGNATURE.exec((header(request.headers, RETELL_SIGNATURE_HEADER) ?? "").trim())
  if (match?.[1] === undefined || match[2] === undefined) return false
  const timestamp = Number(match[1])
  if (!Number.isSafeInteger(timestamp) || Math.abs(request.now - timestamp) > RETELL_SIGNATURE_TOLERANCE_MS) return false
  return constantTimeEqual(
    retellSignature(apiKey, request.rawBody, timestamp),
    `v=${match[1]},d=${match[2].toLowerCase()}`
  )
}

/** The events Parley reads; Retell sends call_started only for a call that connected. */
export const RETELL_CALL_EVENTS = ["call_started", "call_ended", "call_analyzed"] as const
export type RetellCallEvent = (typeof RETELL_CALL_EVENTS)[number]

/** A webhook as Parley uses it. */
export type RetellWebhook =
  | {
    readonly _tag: "CallEvent"
    readonly event: RetellCallEvent
    readonly callId: string
    /** call_status at the time of the event, when the call carries it. */
    readonly status: string | null
    /** On call_ended and call_analyzed. */
    readonly disconnectionReason: string | null
    readonly transcript: string | null
    readonly recordingUrl: string | null
    /** The call's metadata string values (parleyActionId). */
    readonly metadata: Readonly<Record<string, string>>
  }
  | { readonly _tag: "Other"; readonly event: string; readonly callId: string | null }

const CallEventJson = Schema.Struct({
  event: Schema.Literal(...RETELL_CALL_EVENTS),
  call: Schema.optional(RetellCallJson),
  data: Schema.optional(RetellCallJson)
})
const OtherJson = Schema.Struct({
  event: Schema.String,
  call: Schema.optional(Schema.Struct({ call_id: Schema.String })),
  data: Schema.optional(Schema.Struct({ call_id: Schema.String }))
})

const decodeCallEvent = Schema.decodeUnknownOption(CallEventJson)
const decodeOther = Schema.decodeUnknownEither(OtherJson)

const nonEmpty = (value: string | null): string | null => (value === null || value === "" ? null : value)

/** Decodes a webhook body already parsed from JSON; only a body that is not a Retell webhook at all is an error. */
export const decodeRetellWebhook = (json: unknown): Either.Either<RetellWebhook, ParseResult.ParseError> => {
  const decoded = decodeCallEvent(json)
  if (Option.isSome(decoded)) {
    const call = decoded.value.call ?? decoded.value.data
    if (call !== undefined) {
      return Either.right({
        _tag: "CallEvent",
        event: decoded.value.event,
        callId: call.call_id,
        status: call.call_status,
        disconnectionReason: nonEmpty(call.disconnection_reason),
        transcript: nonEmpty(call.transcript),
        recordingUrl: nonEmpty(call.recording_url),
        metadata: metadataStrings(call.metadata)
      })
    }
  }
  // A call event without a call we can read passes as Other rather than failing.
  return Either.map(decodeOther(json), (other): RetellWebhook => ({
    _tag: "Other",
    event: other.event,
    callId: other.call?.call_id ?? other.data?.call_id ?? null
  }))
}
