/**
 * The `parley` command: the server and the admin tools of the spec's
 * "Developer access" area. Every command runs against the store the
 * environment configures, so it can run beside a live server on the same data.
 */
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Layer } from "effect"
import { AppLive } from "../AppLayer.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { LoggingLive } from "../Logging.js"
import { commands } from "./commands/index.js"

const parley = Command.make("parley").pipe(
  Command.withDescription("Parley: messaging and AI-call API for CRM integrations"),
  Command.withSubcommands(commands)
)

const cli = Command.run(parley, { name: "parley", version: "0.1.0" })

const MainLive = Layer.mergeAll(AppLive, LoggingLive).pipe(
  Layer.provideMerge(ServerConfig.layer),
  Layer.provideMerge(NodeContext.layer)
)

cli(process.argv).pipe(
  Effect.provide(MainLive),
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.squash(cause)
    const message = failure instanceof Error ? failure.message : String(failure)
    return Effect.zipRight(Console.error(`parley: ${message}`), Effect.sync(() => { process.exitCode = 1 }))
  }),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
