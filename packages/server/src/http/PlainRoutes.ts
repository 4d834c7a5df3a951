/**
 * Routes beside the contract (health, OpenAPI, docs, provider webhooks):
 * written against the platform's request and response types, served by the
 * same request pipeline as /api/v1 — the same request ids, body limits,
 * media-type checks and error shape.
 */
import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Effect } from "effect"
import type { BodyKind } from "./BodyRules.js"

export interface PlainRoute {
  readonly method: "GET" | "POST"
  readonly path: string
  /** The body the route reads (the pipeline reads and checks it first); none when absent. */
  readonly body?: BodyKind
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
}
