/** `parley serve`: the HTTP server (what `pnpm start` runs, with --demo). */
import { Command, Options } from "@effect/cli"
import { Demo } from "@parley/core/internal"
import { Console, Effect, Layer } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { DispatcherLive } from "../../dispatch/Dispatcher.js"
import { DeliveryLive } from "../../events/Delivery.js"
import { HttpServerLive } from "../../http/HttpServerLive.js"
import { LoopHeartbeats } from "../../observability/Health.js"
import { Metrics, PoolMetricsLive } from "../../observability/Metrics.js"
import { MetricsListenerLive } from "../../observability/MetricsEndpoint.js"
import { TracingLive } from "../../observability/Tracing.js"
import { RetentionLive } from "../../store/Retention.js"
import * as SecretBox from "../../store/SecretBox.js"
import { describeDemo } from "./demo.js"

const withDemo = Options.boolean("demo").pipe(
  Options.withDescription("Seed the demo organisation and print its keys and a curl to try")
)

export const serve = Command.make("serve", { demo: withDemo }, ({ demo }) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    // Every stored secret opens with the keys given (or the server does not start), and is sealed under the
    // current one: after a rotation, the old key is needed only until this has run on one server.
    yield* SecretBox.resealSecrets
    if (demo) {
      const summary = yield* Demo.seedDemo()
      yield* Console.log(describeDemo(summary, `http://localhost:${config.port}`))
      yield* Console.log(`\nDocs: http://localhost:${config.port}/docs   OpenAPI: http://localhost:${config.port}/api/v1/openapi.json\n`)
    }
    // One registry and one set of loop heartbeats for the process; traces exported only when configured.
    return yield* Layer.launch(
      Layer.mergeAll(HttpServerLive, RetentionLive, DispatcherLive, DeliveryLive, MetricsListenerLive, PoolMetricsLive).pipe(
        Layer.provide(Layer.mergeAll(Metrics.layer, LoopHeartbeats.layer)),
        Layer.provide(TracingLive)
      )
    )
  })).pipe(Command.withDescription("Run the Parley server (PORT, PARLEY_DATA_DIR or DATABASE_URL, PARLEY_RATE_LIMIT_PER_MINUTE, LOG_LEVEL)"))
