/** `parley serve`: the HTTP server (what `pnpm start` runs, with --demo). */
import { Command, Options } from "@effect/cli"
import { Demo } from "@parley/core/internal"
import { Console, Effect, Layer, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { Crms } from "../../crm/CrmLive.js"
import { resealCrmSecrets } from "../../crm/Registry.js"
import { DispatcherLive } from "../../dispatch/Dispatcher.js"
import { DeliveryLive } from "../../events/Delivery.js"
import { HttpServerLive } from "../../http/HttpServerLive.js"
import { LoopHeartbeats } from "../../observability/Health.js"
import { Metrics, PoolMetricsLive } from "../../observability/Metrics.js"
import { MetricsListenerLive } from "../../observability/MetricsEndpoint.js"
import { TracingLive } from "../../observability/Tracing.js"
import { KeyUsageFlushLive } from "../../store/KeyUsage.js"
import { RetentionLive } from "../../store/Retention.js"
import * as SecretBox from "../../store/SecretBox.js"
import { describeDemo } from "./demo.js"

/** Where `serve --demo` (`pnpm start`) listens when HOST is unset. */
export const DEMO_HOST = "127.0.0.1"

const withDemo = Options.boolean("demo").pipe(
  Options.withDescription("Seed the demo organisation and print its keys and a curl to try")
)

export const serve = Command.make("serve", { demo: withDemo }, ({ demo }) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    // Every stored secret opens with the keys given (or the server does not start), and is sealed under the
    // current one: after a rotation, the old key is needed only until this has run on one server.
    yield* SecretBox.resealSecrets
    yield* resealCrmSecrets
    // The demo prints working keys of a well-known organisation: unless HOST says otherwise, only this
    // machine may reach it. A plain `serve` listens on every interface, as a server in a container must.
    const http = demo && Option.isNone(config.host)
      ? HttpServerLive.pipe(Layer.provide(Layer.succeed(ServerConfig, { ...config, host: Option.some(DEMO_HOST) })))
      : HttpServerLive
    // One registry and one set of loop heartbeats for the process; traces exported only when configured
    // (TracingLive: otherwise Effect's tracer is off and no span is built).
    const server = Layer.mergeAll(
      http, RetentionLive, KeyUsageFlushLive, DispatcherLive, DeliveryLive, MetricsListenerLive,
      // Each CRM's loops (its write-back outboxes).
      PoolMetricsLive, (yield* Crms).workers
    ).pipe(
      Layer.provide(Layer.mergeAll(Metrics.layer, LoopHeartbeats.layer)),
      Layer.provide(TracingLive)
    )
    return yield* Effect.scoped(Effect.gen(function*() {
      // Built first: the keys are printed only by a server that listens (a port in use prints none).
      yield* Layer.build(server)
      if (demo) {
        // Seeded once the server listens, so a start that fails (a port in use) neither revokes the running
        // server's demo keys nor leaves new ones nobody saw. The previous start's keys are revoked: their
        // secrets were printed once and are not kept, and every restart would otherwise add two full-scope keys.
        const summary = yield* Demo.seedDemo(Demo.DEMO_ORG_ID, { replacePrevious: true })
        yield* Console.log(describeDemo(summary, `http://localhost:${config.port}`))
        if ((summary.revokedKeys ?? 0) > 0) {
          yield* Console.log(
            `\nThe previous demo keys (${summary.revokedKeys}) were revoked: only the two keys above work now.`
          )
        }
        yield* Console.log(
          `\nDocs: http://localhost:${config.port}/docs   OpenAPI: http://localhost:${config.port}/api/v1/openapi.json\n`
        )
      }
      return yield* Effect.never
    }))
  })).pipe(Command.withDescription("Run the Parley server (PORT, HOST, PARLEY_DATA_DIR or DATABASE_URL, PARLEY_RATE_LIMIT_PER_MINUTE, LOG_LEVEL)"))
