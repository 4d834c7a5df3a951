/**
 * The HTTP server: /api/v1 from the contract, its handlers and middleware,
 * the extra routes, and the request pipeline around all of it, on node:http.
 */
import { HttpApiBuilder, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { ParleyApi } from "@parley/core"
import { Effect, Layer } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { AuthorizationLive } from "./Authorization.js"
import { CarrierInboundLive } from "./CarrierInbound.js"
import { DecodeErrorsLive } from "./DecodeErrors.js"
import { ExtraRoutesLive } from "./ExtraRoutes.js"
import { makeHttpListener } from "./HttpListener.js"
import { AiCallsHandlers, MessagesHandlers } from "./handlers/ActionsHandlers.js"
import { ConversationsHandlers } from "./handlers/ConversationsHandlers.js"
import { ResourcesHandlers } from "./handlers/ResourcesHandlers.js"
import { WebhookEndpointsHandlers } from "./handlers/WebhookEndpointsHandlers.js"
import { requestPipeline } from "./RequestPipeline.js"
import { ProviderCallbacksLive } from "../providers/ProviderCallbacks.js"

const ApiLive = HttpApiBuilder.api(ParleyApi).pipe(
  Layer.provide([ResourcesHandlers, ConversationsHandlers, MessagesHandlers, AiCallsHandlers, WebhookEndpointsHandlers]),
  Layer.provide(AuthorizationLive)
)

/**
 * The request pipeline wraps the app itself, not the server: a middleware
 * given to the server sees responses only after they have been written.
 *
 * The platform's per-request `http.server` span is turned off: Parley exports
 * no traces, and that span (URL parsing, header redaction, a dozen attributes)
 * cost about 40 Effect operations a request, a sixth of a health check.
 */
const ServeLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const app = yield* HttpApiBuilder.httpApp
    return HttpServer.serve(requestPipeline({ maxBodyBytes: config.maxBodyBytes })(app))
  })
).pipe(
  Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
  Layer.locally(HttpMiddleware.currentTracerDisabledWhen, () => true)
)

export const HttpServerLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config) =>
    ServeLive.pipe(
      Layer.provide(ExtraRoutesLive),
      Layer.provide(CarrierInboundLive),
      Layer.provide(ProviderCallbacksLive),
      Layer.provide(DecodeErrorsLive),
      Layer.provide(ApiLive),
      HttpServer.withLogAddress,
      Layer.provide(NodeHttpServer.layer(makeHttpListener, { port: config.port }))
    ))
)
