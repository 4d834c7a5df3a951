/**
 * The HTTP server: /api/v1 compiled from the contract with its handlers, the
 * plain routes beside it, all behind the one request pipeline, on node:http.
 */
import type { Server } from "node:http"
import { ParleyApi } from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { consoleRoutes } from "../admin/ConsoleRoutes.js"
import { ServerConfig } from "../config/ServerConfig.js"
import * as CallbackGate from "../providers/CallbackGate.js"
import { providerRoutes } from "../providers/Registry.js"
import { compileContract } from "./ApiRouter.js"
import { AuthorizationLive } from "./Authorization.js"
import { Crms } from "../crm/CrmLive.js"
import { extraRoutes } from "./ExtraRoutes.js"
import { AiCallsHandlers, MessagesHandlers } from "./handlers/ActionsHandlers.js"
import { ConversationsHandlers } from "./handlers/ConversationsHandlers.js"
import { OptOutsHandlers } from "./handlers/OptOutsHandlers.js"
import { ResourcesHandlers } from "./handlers/ResourcesHandlers.js"
import { WebhookEndpointsHandlers } from "./handlers/WebhookEndpointsHandlers.js"
import { makeHttpListener } from "./HttpListener.js"
import { healthRoutes } from "../observability/Health.js"
import { Metrics } from "../observability/Metrics.js"
import { metricsRoute } from "../observability/MetricsEndpoint.js"
import { requestObserver, requestTracer } from "../observability/RequestObservation.js"
import { tracingEnabled } from "../observability/Tracing.js"
import { makeRequestPipeline } from "./RequestPipeline.js"

// The platform's group builder looks up the groups' security middleware (Authorization) as it builds them.
const HandlersLive = Layer.mergeAll(
  ResourcesHandlers,
  ConversationsHandlers,
  MessagesHandlers,
  AiCallsHandlers,
  WebhookEndpointsHandlers,
  OptOutsHandlers,
  CallbackGate.layer
).pipe(Layer.provideMerge(AuthorizationLive))

const listen = (server: Server, port: number, host: Option.Option<string>) =>
  Effect.async<void, Error>((resume) => {
    const onError = (cause: Error) => resume(Effect.fail(cause))
    server.once("error", onError)
    server.listen({ port, ...Option.match(host, { onNone: () => ({}), onSome: (address) => ({ host: address }) }) }, () => {
      server.off("error", onError)
      resume(Effect.void)
    })
  })

const close = (server: Server) =>
  Effect.async<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    server.close(() => resume(Effect.void))
    server.closeIdleConnections()
  })

const ServeLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const context = yield* Effect.context<never>()
    const runtime = yield* Effect.runtime<never>()
    const contract = compileContract(ParleyApi, context)
    const plain = [
      ...(yield* extraRoutes),
      ...(yield* healthRoutes),
      yield* metricsRoute,
      ...(yield* providerRoutes),
      ...(yield* (yield* Crms).routes),
      ...(yield* consoleRoutes)
    ]
    const pipeline = makeRequestPipeline({
      maxBodyBytes: config.maxBodyBytes,
      logLevel: config.logLevel,
      observe: requestObserver(yield* Metrics),
      ...((yield* tracingEnabled) ? { trace: requestTracer } : {})
    }, runtime, contract, plain)
    const server = yield* Effect.acquireRelease(Effect.sync(makeHttpListener), close)
    server.on("request", pipeline)
    yield* listen(server, config.port, config.host).pipe(
      // An address this machine does not have, or a port in use: said in one line, not as a stack trace.
      Effect.mapError((cause) =>
        new Error(`cannot listen on ${Option.getOrElse(config.host, () => "every interface")} port ${config.port} (HOST, PORT): ${cause.message}`)
      ),
      Effect.orDie
    )
    const address = server.address()
    const where = typeof address === "object" && address !== null
      ? `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`
      : String(address)
    yield* Effect.log(`Listening on ${where}`)
  })
)

export const HttpServerLive = ServeLive.pipe(Layer.provide(HandlersLive))
