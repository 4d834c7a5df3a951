/**
 * Every failure a client can cause, as a tagged error class with its HTTP
 * status and stable `code`. The domain fails with these classes; the contract
 * encodes them on the wire as the spec's error body
 * `{ "error": { "code", "message", "requestId" } }`.
 */
import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"
import { CurrentRequestId } from "./RequestId.js"

const fields = {
  message: Schema.String,
  /** Filled from the request context when encoded; decoded from the body by clients. */
  requestId: Schema.optional(Schema.String)
}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", fields) {}
export class IdempotencyKeyRequired
  extends Schema.TaggedError<IdempotencyKeyRequired>()("IdempotencyKeyRequired", fields)
{}
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", fields) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {}
export class ScopeMissing extends Schema.TaggedError<ScopeMissing>()("ScopeMissing", fields) {}
export class ResourceDenied extends Schema.TaggedError<ResourceDenied>()("ResourceDenied", fields) {}
export class SubscriptionInactive
  extends Schema.TaggedError<SubscriptionInactive>()("SubscriptionInactive", fields)
{}
export class SeatInactive extends Schema.TaggedError<SeatInactive>()("SeatInactive", fields) {}
export class OAuthRequired extends Schema.TaggedError<OAuthRequired>()("OAuthRequired", fields) {}
export class IdentityChanged extends Schema.TaggedError<IdentityChanged>()("IdentityChanged", fields) {}
export class CrmPermissionDenied extends Schema.TaggedError<CrmPermissionDenied>()("CrmPermissionDenied", fields) {}
export class AllowanceExhausted extends Schema.TaggedError<AllowanceExhausted>()("AllowanceExhausted", fields) {}
export class DestinationNotAllowed
  extends Schema.TaggedError<DestinationNotAllowed>()("DestinationNotAllowed", fields)
{}
export class RecipientOptedOut extends Schema.TaggedError<RecipientOptedOut>()("RecipientOptedOut", fields) {}
export class AiCallsDisabled extends Schema.TaggedError<AiCallsDisabled>()("AiCallsDisabled", fields) {}
export class OutsideSendingHours extends Schema.TaggedError<OutsideSendingHours>()("OutsideSendingHours", fields) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {}
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", fields) {}
export class ActionProcessing extends Schema.TaggedError<ActionProcessing>()("ActionProcessing", fields) {}
export class OptOutNotRemovable extends Schema.TaggedError<OptOutNotRemovable>()("OptOutNotRemovable", fields) {}
export class ActionNotCancellable
  extends Schema.TaggedError<ActionNotCancellable>()("ActionNotCancellable", fields)
{}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {}
export class UnsupportedMediaType
  extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", fields)
{}
/** Raised by the HTTP layer itself, before a request reaches the contract (Node's parser or timers). */
export class HeadersTooLarge extends Schema.TaggedError<HeadersTooLarge>()("HeadersTooLarge", fields) {}
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", fields) {}
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...fields,
  /** Seconds until the next request is allowed; the server sends it as `Retry-After`. */
  retryAfterSeconds: Schema.optional(Schema.Int)
}) {}
export class Internal extends Schema.TaggedError<Internal>()("Internal", fields) {}
export class CrmUnavailable extends Schema.TaggedError<CrmUnavailable>()("CrmUnavailable", fields) {}
export class PilotPending extends Schema.TaggedError<PilotPending>()("PilotPending", fields) {}
export class SetupUnavailable extends Schema.TaggedError<SetupUnavailable>()("SetupUnavailable", fields) {}
export class CrmRejected extends Schema.TaggedError<CrmRejected>()("CrmRejected", fields) {}
export class SetupRequired extends Schema.TaggedError<SetupRequired>()("SetupRequired", fields) {}
export class CrmRateLimited extends Schema.TaggedError<CrmRateLimited>()("CrmRateLimited", fields) {}

type ErrorClass<E, I> = Schema.Schema<E, I> & {
  new(props: { readonly message: string; readonly requestId?: string | undefined }): E
}

/**
 * The wire form of one error class: `{error: {code, message, requestId}}` on
 * the outside, the class instance on the inside, annotated with its status.
 */
const wire = <E extends { readonly message: string; readonly requestId?: string | undefined }, I, Code extends string>(
  { errorClass, code, status, description }: {
    readonly errorClass: ErrorClass<E, I>
    readonly code: Code
    readonly status: number
    readonly description: string
  }
) => {
  const body = Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      requestId: Schema.String
    })
  })
  return Schema.transformOrFail(body, Schema.typeSchema(errorClass), {
    strict: true,
    decode: (wireBody) =>
      ParseResult.succeed(new errorClass({ message: wireBody.error.message, requestId: wireBody.error.requestId })),
    encode: (error) =>
      Effect.map(FiberRef.get(CurrentRequestId), (current) => ({
        error: { code, message: error.message, requestId: error.requestId ?? current }
      }))
  }).annotations({
    ...HttpApiSchema.annotations({ status }),
    identifier: `Error_${code}`,
    title: code,
    description
  })
}

/**
 * The catalogue: every error of /api/v1 with its stable code, HTTP status and
 * meaning. Everything else (wire schemas, status lookup, OpenAPI text) derives
 * from this one table.
 */
const catalog = {
  InvalidRequest: { errorClass: InvalidRequest, code: "INVALID_REQUEST", status: 400, description: "The request is invalid; the message names the offending field (path, query, header or body)." },
  IdempotencyKeyRequired: { errorClass: IdempotencyKeyRequired, code: "IDEMPOTENCY_KEY_REQUIRED", status: 400, description: "POST /messages and POST /ai-calls need an Idempotency-Key header." },
  IdempotencyKeyReused: { errorClass: IdempotencyKeyReused, code: "IDEMPOTENCY_KEY_REUSED", status: 400, description: "The Idempotency-Key was already used with a different payload; use a new key for a changed request." },
  Unauthorized: { errorClass: Unauthorized, code: "UNAUTHORIZED", status: 401, description: "The API key is missing, malformed, unknown, revoked or expired." },
  ScopeMissing: { errorClass: ScopeMissing, code: "SCOPE_MISSING", status: 403, description: "The API key lacks the scope this endpoint requires." },
  ResourceDenied: { errorClass: ResourceDenied, code: "RESOURCE_DENIED", status: 403, description: "The number or bot exists but the API key's restrictions exclude it." },
  SubscriptionInactive: { errorClass: SubscriptionInactive, code: "SUBSCRIPTION_INACTIVE", status: 403, description: "The organisation's subscription is not active." },
  SeatInactive: { errorClass: SeatInactive, code: "SEAT_INACTIVE", status: 403, description: "The connected CRM account's seat is not enabled." },
  OAuthRequired: { errorClass: OAuthRequired, code: "OAUTH_REQUIRED", status: 403, description: "No CRM account is connected; reconnect in the CRM OAuth setup." },
  IdentityChanged: { errorClass: IdentityChanged, code: "IDENTITY_CHANGED", status: 403, description: "The connected CRM account's identity changed; reconnect in the CRM OAuth setup." },
  CrmPermissionDenied: { errorClass: CrmPermissionDenied, code: "CRM_PERMISSION_DENIED", status: 403, description: "The connected CRM account lacks the CRM permission this request needs." },
  AllowanceExhausted: { errorClass: AllowanceExhausted, code: "ALLOWANCE_EXHAUSTED", status: 403, description: "The organisation's allowance for this kind of action is used up." },
  DestinationNotAllowed: { errorClass: DestinationNotAllowed, code: "DESTINATION_NOT_ALLOWED", status: 403, description: "The organisation's destination rules refuse this recipient: a country it does not send to, a premium-rate number or an international network (SMS pumping and toll-fraud protection); an operator changes the rules with `parley orgs update`." },
  RecipientOptedOut: { errorClass: RecipientOptedOut, code: "RECIPIENT_OPTED_OUT", status: 403, description: "The recipient opted out of this channel (a STOP reply, the carrier, the CRM or an administrator); nothing was queued. GET /opt-outs/{phone} says when and why." },
  AiCallsDisabled: { errorClass: AiCallsDisabled, code: "AI_CALLS_DISABLED", status: 403, description: "AI calls are turned off in the organisation's AI settings." },
  OutsideSendingHours: { errorClass: OutsideSendingHours, code: "OUTSIDE_SENDING_HOURS", status: 403, description: "A live WhatsApp message outside the organisation's sending hours: WhatsApp is sent immediately, never held; send it when the window is open." },
  NotFound: { errorClass: NotFound, code: "NOT_FOUND", status: 404, description: "No such resource in this organisation." },
  MethodNotAllowed: { errorClass: MethodNotAllowed, code: "METHOD_NOT_ALLOWED", status: 405, description: "The path exists but not with this method." },
  ActionProcessing: { errorClass: ActionProcessing, code: "ACTION_PROCESSING", status: 409, description: "An earlier request with the same Idempotency-Key is still being processed; retry unchanged." },
  OptOutNotRemovable: { errorClass: OptOutNotRemovable, code: "OPT_OUT_NOT_REMOVABLE", status: 409, description: "The carrier recorded this opt-out (the recipient is unsubscribed there): only the recipient's own START or an administrator lifts it." },
  ActionNotCancellable: { errorClass: ActionNotCancellable, code: "ACTION_NOT_CANCELLABLE", status: 409, description: "Only Queued actions scheduled more than 30 seconds ahead can be cancelled." },
  PayloadTooLarge: { errorClass: PayloadTooLarge, code: "PAYLOAD_TOO_LARGE", status: 413, description: "The request body exceeds 64 KiB." },
  UnsupportedMediaType: { errorClass: UnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", status: 415, description: "Request bodies must be JSON: application/json or another +json media type." },
  HeadersTooLarge: { errorClass: HeadersTooLarge, code: "HEADERS_TOO_LARGE", status: 431, description: "The request line and headers exceed 16 KiB." },
  RequestTimeout: { errorClass: RequestTimeout, code: "REQUEST_TIMEOUT", status: 408, description: "The request's headers or body did not arrive in time." },
  RateLimited: { errorClass: RateLimited, code: "RATE_LIMITED", status: 429, description: "Too many requests for this API key; wait for Retry-After seconds." },
  Internal: { errorClass: Internal, code: "INTERNAL", status: 500, description: "Unexpected service failure; safe to retry with the same Idempotency-Key." },
  CrmUnavailable: { errorClass: CrmUnavailable, code: "CRM_UNAVAILABLE", status: 502, description: "The CRM did not answer or failed." },
  PilotPending: { errorClass: PilotPending, code: "PILOT_PENDING", status: 503, description: "The pilot gate is not yet open for the organisation." },
  SetupUnavailable: { errorClass: SetupUnavailable, code: "SETUP_UNAVAILABLE", status: 503, description: "The service's storage or setup is unavailable; retry later." },
  CrmRejected: { errorClass: CrmRejected, code: "CRM_REJECTED", status: 400, description: "The CRM refused the record as sent (the message names the field and the CRM's own code, e.g. Zoho's INVALID_DATA or MANDATORY_NOT_FOUND); retrying unchanged cannot succeed." },
  SetupRequired: { errorClass: SetupRequired, code: "SETUP_REQUIRED", status: 503, description: "The connected CRM lacks what Parley keeps in it (Zoho: the Parley_Messages module); an administrator runs `parley crm setup ORG`." },
  CrmRateLimited: { errorClass: CrmRateLimited, code: "CRM_RATE_LIMITED", status: 503, description: "The CRM is at its own request limit (Zoho: its concurrency cap or the day's API credits); wait for Retry-After seconds." },
} as const

type Catalog = typeof catalog
export type ApiError = InstanceType<Catalog[keyof Catalog]["errorClass"]>
export type ErrorCode = Catalog[keyof Catalog]["code"]

/** The wire schemas, by code, for the HttpApi definition. */
export const ErrorCatalog = {
  INVALID_REQUEST: wire(catalog.InvalidRequest),
  IDEMPOTENCY_KEY_REQUIRED: wire(catalog.IdempotencyKeyRequired),
  IDEMPOTENCY_KEY_REUSED: wire(catalog.IdempotencyKeyReused),
  UNAUTHORIZED: wire(catalog.Unauthorized),
  SCOPE_MISSING: wire(catalog.ScopeMissing),
  RESOURCE_DENIED: wire(catalog.ResourceDenied),
  SUBSCRIPTION_INACTIVE: wire(catalog.SubscriptionInactive),
  SEAT_INACTIVE: wire(catalog.SeatInactive),
  OAUTH_REQUIRED: wire(catalog.OAuthRequired),
  IDENTITY_CHANGED: wire(catalog.IdentityChanged),
  CRM_PERMISSION_DENIED: wire(catalog.CrmPermissionDenied),
  ALLOWANCE_EXHAUSTED: wire(catalog.AllowanceExhausted),
  DESTINATION_NOT_ALLOWED: wire(catalog.DestinationNotAllowed),
  RECIPIENT_OPTED_OUT: wire(catalog.RecipientOptedOut),
  AI_CALLS_DISABLED: wire(catalog.AiCallsDisabled),
  OUTSIDE_SENDING_HOURS: wire(catalog.OutsideSendingHours),
  NOT_FOUND: wire(catalog.NotFound),
  METHOD_NOT_ALLOWED: wire(catalog.MethodNotAllowed),
  ACTION_PROCESSING: wire(catalog.ActionProcessing),
  ACTION_NOT_CANCELLABLE: wire(catalog.ActionNotCancellable),
  OPT_OUT_NOT_REMOVABLE: wire(catalog.OptOutNotRemovable),
  PAYLOAD_TOO_LARGE: wire(catalog.PayloadTooLarge),
  UNSUPPORTED_MEDIA_TYPE: wire(catalog.UnsupportedMediaType),
  HEADERS_TOO_LARGE: wire(catalog.HeadersTooLarge),
  REQUEST_TIMEOUT: wire(catalog.RequestTimeout),
  RATE_LIMITED: wire(catalog.RateLimited),
  INTERNAL: wire(catalog.Internal),
  CRM_UNAVAILABLE: wire(catalog.CrmUnavailable),
  PILOT_PENDING: wire(catalog.PilotPending),
  SETUP_UNAVAILABLE: wire(catalog.SetupUnavailable),
  CRM_REJECTED: wire(catalog.CrmRejected),
  SETUP_REQUIRED: wire(catalog.SetupRequired),
  CRM_RATE_LIMITED: wire(catalog.CrmRateLimited),
} as const

/** Status and code of an error instance, for layers that write responses themselves (404/405/413 before routing). */
export const errorStatusAndCode = (error: ApiError): { readonly status: number; readonly code: ErrorCode } => {
  const entry = catalog[error._tag]
  return { status: entry.status, code: entry.code }
}

/** Whether a value is one of the contract's errors (an instance of a catalogued class). */
export const isApiError = (value: unknown): value is ApiError =>
  typeof value === "object" && value !== null && "_tag" in value && typeof value._tag === "string" &&
  Object.hasOwn(catalog, value._tag) && value instanceof catalog[value._tag as keyof Catalog].errorClass

/** All codes with status and description, for documentation. */
export const errorCodes: ReadonlyArray<{ readonly code: ErrorCode; readonly status: number; readonly description: string }> =
  Object.values(catalog).map(({ code, status, description }) => ({ code, status, description }))
