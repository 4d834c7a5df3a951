/**
 * Schema failures of a request (path, query, headers, body) as the contract's
 * INVALID_REQUEST, naming the field. Runs inside the API, so the contract
 * encodes the result.
 */
import { HttpApiBuilder, HttpApiError } from "@effect/platform"
import { InvalidRequest, ParleyApi } from "@parley/core"
import { Cause, Effect, Option } from "effect"

const MAX_ISSUES = 3

const describeIssues = (error: HttpApiError.HttpApiDecodeError): string => {
  const issues = error.issues.slice(0, MAX_ISSUES).map((issue) => {
    const field = issue.path.map(String).join(".")
    return field === "" ? issue.message : `${field}: ${issue.message}`
  })
  const more = error.issues.length > MAX_ISSUES ? ` (and ${error.issues.length - MAX_ISSUES} more)` : ""
  return issues.join("; ") + more
}


export const DecodeErrorsLive = HttpApiBuilder.middleware(ParleyApi, (app) =>
  Effect.catchAllCause(app, (cause) => {
    const failure: Option.Option<unknown> = Cause.failureOption(cause)
    return Option.isSome(failure) && failure.value instanceof HttpApiError.HttpApiDecodeError
      ? Effect.fail(new InvalidRequest({ message: describeIssues(failure.value) }))
      : Effect.failCause(cause)
  }))
