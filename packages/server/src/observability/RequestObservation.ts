/**
 * The metrics' and the tracer's side of what the request pipeline tells about each request
 * (http/Observation.ts): a counter and histogram per route template, and one server span per request.
 */
import { Headers, HttpTraceContext } from "@effect/platform"
import { Caller } from "@parley/core/internal"
import { Context, Effect, Option } from "effect"
import type { RequestObserver, RequestTracer } from "../http/Observation.js"
import type { RequestState } from "../http/RequestState.js"
import type { ParleyMetrics } from "./Metrics.js"

// Node's parser accepts some 30 methods; the label keeps the ones an API sees and folds the rest.
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

export const requestObserver = (metrics: ParleyMetrics): RequestObserver => (route, method, status, seconds) =>
  metrics.request(route, METHODS.has(method) ? method : "OTHER", status, seconds)

/** The caller's organisation once authorization has run (none for unauthenticated routes). */
const organisationOf = (state: RequestState): string | undefined =>
  Option.getOrUndefined(Option.map(Context.getOption(state.provided, Caller), (caller) => caller.orgId))

/**
 * One server span per request, named `METHOD /route/{template}`, continuing the caller's trace when it
 * sends a W3C `traceparent`. Attributes: method, route, status, request id and organisation id — never
 * the path, the query, a header's value or the body.
 */
export const requestTracer: RequestTracer = (program, { method, request, requestId, route, state }) => {
  const parent = HttpTraceContext.fromHeaders(Headers.fromInput(request.headers))
  return program.pipe(
    Effect.tap((answer) => {
      const orgId = organisationOf(state)
      return Effect.annotateCurrentSpan({
        "http.response.status_code": answer.status,
        ...(orgId === undefined ? {} : { "parley.org_id": orgId })
      })
    }),
    Effect.withSpan(`${method} ${route}`, {
      kind: "server",
      attributes: { "http.request.method": method, "http.route": route, "parley.request_id": requestId },
      ...(Option.isSome(parent) ? { parent: parent.value } : {})
    })
  )
}
