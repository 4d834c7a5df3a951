/**
 * What the request pipeline tells the metrics and the tracer about each
 * request, by route template (`/api/v1/messages/{id}`), never the raw path:
 * paths carry ids, and a label or span name per id would be unbounded.
 */
import type { IncomingMessage } from "node:http"
import { Headers, HttpTraceContext } from "@effect/platform"
import { Caller } from "@parley/core/internal"
import { Context, Effect, Option } from "effect"
import type { RequestState } from "../http/RequestState.js"
import type { ParleyMetrics } from "./Metrics.js"

/** The route label of requests that matched no route (404, 405, malformed before routing). */
export const UNMATCHED_ROUTE = "unmatched"

/** `/api/v1/messages/{id}` from a compiled route's literal segments and parameter names. */
export const routeTemplate = (route: {
  readonly segments: ReadonlyArray<string | null>
  readonly params: ReadonlyArray<string | null>
}): string => "/" + route.segments.map((segment, i) => segment ?? `{${route.params[i] ?? "param"}}`).join("/")

export type RequestObserver = (route: string, method: string, status: number, seconds: number) => void

// Node's parser accepts some 30 methods; the label keeps the ones an API sees and folds the rest.
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

export const requestObserver = (metrics: ParleyMetrics): RequestObserver => (route, method, status, seconds) =>
  metrics.request(route, METHODS.has(method) ? method : "OTHER", status, seconds)

export interface TracedRequest {
  readonly request: IncomingMessage
  readonly method: string
  readonly route: string
  readonly requestId: string
  readonly state: RequestState
}

export type RequestTracer = <A extends { readonly status: number }>(
  program: Effect.Effect<A>,
  request: TracedRequest
) => Effect.Effect<A>

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
