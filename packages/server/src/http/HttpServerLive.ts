/**
 * The HTTP server: /api/v1 compiled from the contract with its handlers, and the plain routes a process
 * serves beside it (handed in by the composition root, AppLayer.ts: this folder knows no feature), all
 * behind the one request pipeline, on node:http.
 */
import type { Server } from "node:http"
import { ParleyApi } from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { compileContract } from "./ApiRouter.js"
import { AuthorizationLive } from "./Authorization.js"
import { AiCallsHandlers, MessagesHandlers } from "./handlers/ActionsHandlers.js"
import { ConversationsHandlers } from "./handlers/ConversationsHandlers.js"
import { OptOutsHandlers } from "./handlers/OptOutsHandlers.js"
import { ResourcesHandlers } from "./handlers/ResourcesHandlers.js"
import { WebhookEndpointsHandlers } from "./handlers/WebhookEndpointsHandlers.js"
import { makeHttpListener } from "./HttpListener.js"
import type { PlainRoute } from "./PlainRoutes.js"
import { makeRequestPipeline, type PipelineOptions } from "./RequestPipeline.js"

/** What a process serves beside the contract, and who is told of each request. */
export interface Served extends Pick<PipelineOptions, "observe" | "trace" | "errorPage"> {
  /** Matched in this order, after the contract's routes. */
  readonly routes: ReadonlyArray<PlainRoute>
}

// The platform's group builder looks up the groups' security middleware (Authorization) as it builds them.
const HandlersLive = Layer.mergeAll(
  ResourcesHandlers,
  ConversationsHandlers,
  MessagesHandlers,
  AiCallsHandlers,
  WebhookEndpointsHandlers,
  OptOutsHandlers
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

const serveLayer = <R>(served: Effect.Effect<Served, never, R>) => Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const context = yield* Effect.context<never>()
    const runtime = yield* Effect.runtime<never>()
    const contract = compileContract(ParleyApi, context)
    const { routes, ...observers } = yield* served
    const pipeline = makeRequestPipeline({
      maxBodyBytes: config.maxBodyBytes,
      logLevel: config.logLevel,
      ...observers
    }, runtime, contract, routes)
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

/** The server, serving the contract and what `served` gives (evaluated once, as the server starts). */
export const httpServerLayer = <R>(served: Effect.Effect<Served, never, R>) =>
  serveLayer(served).pipe(Layer.provide(HandlersLive))
