/**
 * Schema failures of a request (path, query, headers, body) as the contract's
 * INVALID_REQUEST, naming the field. Runs inside the API, so the contract
 * encodes the result.
 */
import { HttpApiBuilder, HttpApiError } from "@effect/platform"
import { InvalidRequest, ParleyApi } from "@parley/core"
import { Cause, Effect, Option } from "effect"

const MAX_ISSUES = 3
const MAX_MESSAGE = 200

/**
 * One readable line per field. The schema library's messages end with the
 * offending value ("…, actual <value>"); that is cut, so a 5,000-character
 * body is never echoed back. An optional field that fails reports twice (its
 * own rule, then "Expected undefined"); only the rule is kept.
 */
const describeIssues = (error: HttpApiError.HttpApiDecodeError): string => {
  const lines = new Map<string, string>()
  const fallback = new Map<string, string>()
  for (const issue of error.issues) {
    const field = issue.path.map(String).join(".")
    const cut = issue.message.indexOf(", actual ")
    const text = (cut === -1 ? issue.message : issue.message.slice(0, cut)).slice(0, MAX_MESSAGE)
    const line = text.startsWith("Expected Struct") || text.startsWith("Expected {")
      ? (field === "" ? "body: must be a JSON object" : `${field}: must be an object`)
      : (field === "" ? text : `${field}: ${text}`)
    const target = text.startsWith("Expected undefined") ? fallback : lines
    if (!target.has(field)) target.set(field, line)
  }
  for (const [field, line] of fallback) if (!lines.has(field)) lines.set(field, line)
  const all = [...lines.values()]
  const more = all.length > MAX_ISSUES ? ` (and ${all.length - MAX_ISSUES} more)` : ""
  return all.slice(0, MAX_ISSUES).join("; ") + more
}

export const DecodeErrorsLive = HttpApiBuilder.middleware(ParleyApi, (app) =>
  Effect.catchAllCause(app, (cause) => {
    const failure: Option.Option<unknown> = Cause.failureOption(cause)
    return Option.isSome(failure) && failure.value instanceof HttpApiError.HttpApiDecodeError
      ? Effect.fail(new InvalidRequest({ message: describeIssues(failure.value) }))
      : Effect.failCause(cause)
  }))
