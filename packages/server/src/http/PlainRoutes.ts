/**
 * Routes beside the contract (health, OpenAPI, docs, provider webhooks):
 * written against the platform's request and response types, served by the
 * same request pipeline as /api/v1 — the same request ids, body limits,
 * media-type checks and error shape.
 */
import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { IncomingHttpHeaders } from "node:http"
import type { ApiError } from "@parley/core/internal"
import type { Effect } from "effect"
import type { BodyKind } from "./BodyRules.js"

export interface PlainRoute {
  readonly method: "GET" | "POST"
  readonly path: string
  /** The body the route reads (the pipeline reads and checks it first); none when absent. */
  readonly body?: BodyKind
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
  /**
   * Asked by the pipeline before anything else, the body unread: an error is answered at once (a provider
   * callback refused by CallbackGate costs no body reading, decoding or fiber), null lets the request on.
   * `source` is the peer's address, `url` the request target as sent, `headers` its headers, `now` epoch ms.
   */
  readonly admit?: (source: string, url: string, now: number, headers: IncomingHttpHeaders) => ApiError | null
  /**
   * Told by the pipeline when the route answered 401 (a callback that could not be verified), with the
   * peer's address: CallbackGate charges that source more, so a forger gets fewer callbacks looked at. An
   * error returned is answered instead of the 401 (the source is past its budget: 429).
   */
  readonly unverified?: (source: string, now: number) => ApiError | null
}
