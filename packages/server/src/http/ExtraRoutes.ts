/**
 * Routes beside /api/v1: the OpenAPI document and the documentation page (Scalar,
 * served inline so it works offline). Health and metrics: observability/.
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiScalar,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { openApiDocument, ParleyApi } from "@parley/core"
import { Context, Effect, Layer } from "effect"
import type { PlainRoute } from "./PlainRoutes.js"

/**
 * The documentation page as the platform's Scalar integration renders it for the contract: rendered on the
 * first request for it and kept (it depends on nothing but the contract). Not at start: it is 3.4 MB that a
 * server nobody reads the docs of would hold for nothing.
 */
const renderDocs: Effect.Effect<HttpServerResponse.HttpServerResponse> = Effect.gen(function*() {
  const router = yield* HttpApiBuilder.Router.router
  const app = yield* HttpRouter.toHttpApp(router)
  const request = HttpServerRequest.fromWeb(new Request("http://parley.local/docs"))
  return yield* Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)
}).pipe(
  Effect.scoped,
  Effect.provide(
    HttpApiScalar.layer({ path: "/docs" }).pipe(
      Layer.provideMerge(HttpApiBuilder.Router.Live),
      Layer.provide(Layer.succeed(HttpApi.Api, { api: ParleyApi as unknown as HttpApi.Api["Type"]["api"], context: Context.empty() }))
    )
  ),
  Effect.orDie
) as Effect.Effect<HttpServerResponse.HttpServerResponse>

export const extraRoutes: Effect.Effect<ReadonlyArray<PlainRoute>> = Effect.gen(function*() {
  // Both built once, on first use.
  const document = yield* Effect.cached(Effect.sync(() => HttpServerResponse.unsafeJson(openApiDocument())))
  const docs = yield* Effect.cached(renderDocs)
  return [
    { method: "GET", path: "/api/v1/openapi.json", handler: document },
    { method: "GET", path: "/docs", handler: docs }
  ]
})
