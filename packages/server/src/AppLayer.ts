/**
 * The composition root: the one place that chooses the implementations a process runs on and hands them
 * down. The core's domain over the SQL ports on the configured database (AppLive); every process's
 * configuration, logging and platform on top (ProcessLive: the CLI's commands and the tests that build the
 * application); and what `parley serve` adds (ServerLive: the HTTP server with every feature's routes, the
 * loops, and the metrics and traces it exports). No feature module assembles a process of its own.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { DomainLayer, Idempotency, RateLimiter } from "@parley/core/domain"
import { Effect, Layer, Option } from "effect"
import { consoleErrorPage } from "./admin/ConsoleErrors.js"
import { consoleRoutes } from "./admin/ConsoleRoutes.js"
import * as AdminStore from "./admin/AdminStore.js"
import * as AuditLog from "./admin/AuditLog.js"
import { ServerConfig } from "./config/ServerConfig.js"
import * as CrmLive from "./crm/CrmLive.js"
import { CRMS } from "./crm/Registry.js"
import { DispatcherLive } from "./dispatch/Dispatcher.js"
import { DeliveryLive } from "./events/Delivery.js"
import { extraRoutes } from "./http/ExtraRoutes.js"
import { httpServerLayer, type Served } from "./http/HttpServerLive.js"
import { LoggingLive } from "./Logging.js"
import { healthRoutes, LoopHeartbeats } from "./observability/Health.js"
import { Metrics, PoolMetricsLive } from "./observability/Metrics.js"
import { MetricsListenerLive, metricsRoute } from "./observability/MetricsEndpoint.js"
import { requestObserver, requestTracer } from "./observability/RequestObservation.js"
import { tracingEnabled, TracingLive } from "./observability/Tracing.js"
import * as CallbackGate from "./providers/CallbackGate.js"
import * as ProvidersLive from "./providers/ProvidersLive.js"
import { providerRoutes } from "./providers/Registry.js"
import { DatabaseLive } from "./store/Database.js"
import * as KeyUsage from "./store/KeyUsage.js"
import { RetentionLive } from "./store/Retention.js"
import * as SecretBox from "./store/SecretBox.js"
import * as SqlActionStore from "./store/SqlActionStore.js"
import * as SqlApiKeyStore from "./store/SqlApiKeyStore.js"
import * as SqlCursorSigner from "./store/SqlCursorSigner.js"
import * as SqlEventOutbox from "./store/SqlEventOutbox.js"
import * as SqlOptOuts from "./store/SqlOptOuts.js"
import * as SqlOrganisations from "./store/SqlOrganisations.js"
import * as SqlProviderAccounts from "./store/SqlProviderAccounts.js"
import * as SqlProviderHandoffs from "./store/SqlProviderHandoffs.js"
import * as SqlSimulatorMemory from "./store/SqlSimulatorMemory.js"
import * as SqlUnitOfWork from "./store/SqlUnitOfWork.js"
import * as SqlWebhooks from "./store/SqlWebhooks.js"

const RateLimitConfigLive = Layer.effect(
  RateLimiter.RateLimitConfig,
  Effect.map(ServerConfig, (config) => ({ limit: config.rateLimitPerMinute, windowSeconds: 60 }))
)

const IdempotencyLockLive = Layer.effect(
  Idempotency.IdempotencyLock,
  Effect.map(ServerConfig, (config) => ({ lockMs: config.idempotencyLockMs }))
)

/**
 * The store chosen for the process (DatabaseLive: SQLite or Postgres, with its ports) and the key that
 * seals its secrets. The server reseals stored secrets under the current key when it starts (serve); other
 * commands only open them, with the current or a previous key.
 */
const StoreLive = SecretBox.layer.pipe(Layer.provideMerge(DatabaseLive))

/** Every storage port on SQL, and the providers (each organisation's, or the simulator) over them. */
export const SqlPortsLive = Layer.mergeAll(
  SqlOrganisations.layer,
  SqlOptOuts.layer,
  SqlApiKeyStore.layer,
  // The registry's default CRM, or the CRM an organisation connected (crm/Registry.ts).
  CrmLive.layer,
  SqlActionStore.layer,
  SqlEventOutbox.layer,
  SqlUnitOfWork.layer,
  SqlCursorSigner.layer,
  SqlWebhooks.layer,
  SqlProviderAccounts.layer,
  SqlProviderHandoffs.layer,
  KeyUsage.layer,
  SqlSimulatorMemory.layer
).pipe(Layer.provideMerge(StoreLive))

/** The core's Providers port: the organisation's provider for a kind (Registry.ts), or the simulator. */
const ProvidersLayer = ProvidersLive.layer.pipe(Layer.provideMerge(SqlPortsLive))

/** The domain services and the ports they run on; needs only ServerConfig. */
export const AppLive = DomainLayer.pipe(
  Layer.provideMerge(ProvidersLayer),
  Layer.provideMerge(RateLimitConfigLive),
  Layer.provideMerge(IdempotencyLockLive)
)

/**
 * Every process: the application, its logging, its configuration and the platform, with the console's
 * administrators and audit log (the CLI's admin commands write both). Metrics count into nothing here:
 * only `serve` exposes them, and ServerLive gives what it builds the real registry.
 */
export const ProcessLive = Layer.mergeAll(
  Layer.mergeAll(AdminStore.layer, AuditLog.layer).pipe(Layer.provideMerge(AppLive)),
  LoggingLive,
  Metrics.none
).pipe(
  Layer.provideMerge(ServerConfig.layer),
  Layer.provideMerge(NodeContext.layer)
)

/** Where `serve --demo` (`pnpm start`) listens when HOST is unset. */
export const DEMO_HOST = "127.0.0.1"

/** What the server answers beside the contract, in the order it matches them, and who is told of each request. */
const served = Effect.gen(function*() {
  const routes = [
    ...(yield* extraRoutes),
    ...(yield* healthRoutes),
    yield* metricsRoute,
    ...(yield* providerRoutes),
    ...(yield* (yield* CrmLive.Crms).routes),
    ...(yield* consoleRoutes)
  ]
  const tracing = yield* tracingEnabled
  const answer: Served = {
    routes,
    observe: requestObserver(yield* Metrics),
    ...(tracing ? { trace: requestTracer } : {}),
    // Unknown console pages and oversized console forms answer the console's page, not the API's JSON.
    errorPage: consoleErrorPage
  }
  return answer
})

/**
 * `parley serve`: the HTTP server, the loops beside it (retention, key usage, dispatcher, event delivery,
 * each CRM's write-back outboxes) and the metrics listener, with one registry and one set of loop
 * heartbeats for the process; traces exported only when configured (TracingLive: otherwise Effect's
 * tracer is off and no span is built). The demo prints working keys of a well-known organisation: unless
 * HOST says otherwise, only this machine may reach it; a plain `serve` listens on every interface, as a
 * server in a container must.
 */
export const ServerLive = (options: { readonly demo: boolean }) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const config = yield* ServerConfig
    const http = httpServerLayer(served).pipe(Layer.provide(CallbackGate.layer))
    const listening = options.demo && Option.isNone(config.host)
      ? http.pipe(Layer.provide(Layer.succeed(ServerConfig, { ...config, host: Option.some(DEMO_HOST) })))
      : http
    return Layer.mergeAll(
      listening, RetentionLive, KeyUsage.KeyUsageFlushLive, DispatcherLive, DeliveryLive, MetricsListenerLive,
      PoolMetricsLive, (yield* CrmLive.Crms).workers
    ).pipe(
      Layer.provide(Layer.mergeAll(Metrics.layer(CRMS), LoopHeartbeats.layer)),
      Layer.provide(TracingLive)
    )
  }))
