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
import { createHash } from "node:crypto"
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

/**
 * The documentation page's headers, as the console's: no framing, no sniffing, and a Content-Security-Policy
 * that lets run only the page's own inline scripts (by their SHA-256: the renderer writes them inline so the
 * page works offline), compile its WebAssembly ('wasm-unsafe-eval', no other eval) and fetch only from this
 * origin. Scalar sets styles from script, hence 'unsafe-inline' for styles alone; its web fonts (from
 * fonts.scalar.com) are refused, and the page uses the system's.
 */
const withDocsHeaders = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const text = response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : ""
  const hashes = [...text.matchAll(/<script>([\s\S]*?)<\/script>/g)]
    .map((m) => `'sha256-${createHash("sha256").update(m[1] ?? "").digest("base64")}'`)
  return HttpServerResponse.setHeaders(response, {
    "content-security-policy": `default-src 'none'; script-src ${hashes.join(" ")} 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; ` +
      "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin"
  })
}

export const extraRoutes: Effect.Effect<ReadonlyArray<PlainRoute>> = Effect.gen(function*() {
  // Both built once, on first use.
  const document = yield* Effect.cached(Effect.sync(() => HttpServerResponse.unsafeJson(openApiDocument())))
  const docs = yield* Effect.cached(Effect.map(renderDocs, withDocsHeaders))
  return [
    { method: "GET", path: "/api/v1/openapi.json", handler: document },
    { method: "GET", path: "/docs", handler: docs }
  ]
})
