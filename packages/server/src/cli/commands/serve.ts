/** `parley serve`: the HTTP server (what `pnpm start` runs, with --demo). */
import { Command, Options } from "@effect/cli"
import { Demo } from "@parley/core/internal"
import { Console, Effect, Layer } from "effect"
import { ServerLive } from "../../AppLayer.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { resealCrmSecrets } from "../../crm/Registry.js"
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
    yield* resealCrmSecrets
    const server = ServerLive({ demo })
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
