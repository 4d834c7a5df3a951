/**
 * What the request pipeline tells whoever observes it (the metrics, the tracer), by route template
 * (`/api/v1/messages/{id}`), never the raw path: paths carry ids, and a label or span name per id would be
 * unbounded. The shapes live here, beside the pipeline that calls them; observability/ implements them.
 */
import type { IncomingMessage } from "node:http"
import type { Effect } from "effect"
import type { RequestState } from "./RequestState.js"

/** The route label of requests that matched no route (404, 405, malformed before routing). */
export const UNMATCHED_ROUTE = "unmatched"

/** `/api/v1/messages/{id}` from a compiled route's literal segments and parameter names. */
export const routeTemplate = (route: {
  readonly segments: ReadonlyArray<string | null>
  readonly params: ReadonlyArray<string | null>
}): string => "/" + route.segments.map((segment, i) => segment ?? `{${route.params[i] ?? "param"}}`).join("/")

export type RequestObserver = (route: string, method: string, status: number, seconds: number) => void

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
