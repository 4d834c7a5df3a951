/**
 * The one error mapper of the HTTP layer. Errors that the contract encodes
 * itself (handler and middleware failures) never come here; this writes the
 * spec's error body for what happens around the contract — unknown routes,
 * wrong methods, oversized or malformed bodies, and unexpected failures — and
 * turns infrastructure failures into their contract errors.
 */
import { HttpServerResponse } from "@effect/platform"
import {
  type ApiError,
  Crm,
  CrmRateLimited,
  CrmRejected,
  CrmUnavailable,
  CurrentRequestId,
  errorStatusAndCode,
  IdentityChanged,
  OAuthRequired,
  SetupRequired,
  SetupUnavailable,
  StorageError
} from "@parley/core/internal"
import { Effect, FiberRef } from "effect"
import { setResponseHeaders } from "./RequestState.js"

/** The spec's error body and its status, for every writer of errors (the app's responses and raw socket answers). */
export const errorBody = (error: ApiError, requestId: string) => {
  const { code, status } = errorStatusAndCode(error)
  return { status, body: { error: { code, message: error.message, requestId } } }
}

export const errorResponse = (
  error: ApiError,
  requestId: string,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => {
  const { body, status } = errorBody(error, requestId)
  return HttpServerResponse.unsafeJson(body, { status, headers })
}

/** A short, secret-free description of a failure's cause for the log: its class and code, never its message or SQL. */
/** A refusal answered outside the contract's handlers (the provider webhooks), with the request's id. */
export const refusal = (error: ApiError) => Effect.map(FiberRef.get(CurrentRequestId), (id) => errorResponse(error, id))

export const describeCause = (cause: unknown): string => {
  const inner = cause instanceof StorageError || cause instanceof Crm.CrmError ? cause.cause : cause
  const nested = typeof inner === "object" && inner !== null && "cause" in inner ? inner.cause : inner
  const name = nested instanceof Error ? nested.name : typeof nested
  const code = typeof nested === "object" && nested !== null && "code" in nested ? String(nested.code) : undefined
  return code === undefined ? name : `${name}(${code})`
}

/** What a CRM failure answers, by its reason (see Crm.CrmFailure). */
const crmFailure = (error: Crm.CrmError) => {
  switch (error.reason) {
    case "oauth_required":
      return new OAuthRequired({ message: "The CRM connection no longer works (its authorization was revoked or refused); reconnect it in the CRM OAuth setup." })
    case "identity_changed":
      return new IdentityChanged({ message: "The connected CRM account changed identity. Reconnect it in the CRM OAuth setup." })
    case "busy":
      return new CrmRateLimited({ message: `The CRM is at its request limit; retry after ${error.retryAfterSeconds ?? 5} seconds.` })
    case "rejected":
      return new CrmRejected({
        message: `The CRM refused the record${error.field === undefined ? "" : ` (field ${error.field})`}: ${error.code ?? "refused"}. ` +
          "Retrying unchanged cannot succeed."
      })
    case "setup_required":
      return new SetupRequired({
        message: `The CRM lacks what Parley keeps in it (${error.code ?? "setup missing"}); an administrator runs \`parley crm setup ORG\`.`
      })
    default:
      return new CrmUnavailable({ message: "The CRM did not answer; retry shortly." })
  }
}

/**
 * Storage down → 503 SETUP_UNAVAILABLE; CRM failure → 502 CRM_UNAVAILABLE, or what its reason says (a CRM at
 * its rate limit: 503 with Retry-After). The cause is logged without details.
 */
export const infrastructureErrors = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, StorageError | Crm.CrmError> =>
      error instanceof StorageError || error instanceof Crm.CrmError,
    (error) =>
      Effect.gen(function*() {
        if (error instanceof Crm.CrmError && error.reason !== undefined && error.reason !== "unavailable" && error.reason !== "permission_denied") {
          if (error.reason === "busy") yield* setResponseHeaders({ "retry-after": String(error.retryAfterSeconds ?? 5) })
          // A refusal is the caller's to fix or the administrator's: the log keeps the CRM's own code and field.
          if (error.reason === "rejected" || error.reason === "setup_required") {
            yield* Effect.annotateLogs(Effect.logWarning("crm refused"), {
              operation: error.operation,
              crmCode: error.code ?? "unknown",
              ...(error.field === undefined ? {} : { field: error.field })
            })
          }
          return yield* Effect.fail(crmFailure(error))
        }
        yield* Effect.annotateLogs(Effect.logError("infrastructure failure"), {
          operation: error.operation,
          cause: describeCause(error)
        })
        const failure: SetupUnavailable | CrmUnavailable = error instanceof StorageError
          ? new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." })
          : new CrmUnavailable({ message: "The CRM did not answer; retry shortly." })
        return yield* Effect.fail(failure)
      })
  )
