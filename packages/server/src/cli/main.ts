/**
 * The `parley` command: the server and the admin tools of the spec's
 * "Developer access" area. Every command runs against the store the
 * environment configures, so it can run beside a live server on the same data.
 */
import { Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Layer, Predicate } from "effect"
import { AppLive } from "../AppLayer.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { LoggingLive } from "../Logging.js"
import { commands } from "./commands/index.js"

const parley = Command.make("parley").pipe(
  Command.withDescription("Parley: messaging and AI-call API for CRM integrations"),
  Command.withSubcommands(commands)
)

/** One plain line for a failure: CliError messages as written, storage failures by operation, never a stack. */
const describeFailure = (failure: unknown): string => {
  if (Predicate.isTagged(failure, "StorageError") && Predicate.hasProperty(failure, "operation")) {
    const cause = Predicate.hasProperty(failure, "cause") ? failure.cause : undefined
    const detail = cause instanceof Error && cause.message !== "" ? `: ${cause.message}` : ""
    return `storage failure in ${String(failure.operation)}${detail}`
  }
  if (failure instanceof Error) return failure.message === "" ? failure.name : failure.message.split("\n")[0] ?? ""
  return String(failure)
}

const cli = Command.run(parley, { name: "parley", version: "0.1.0" })

const MainLive = Layer.mergeAll(AppLive, LoggingLive).pipe(
  Layer.provideMerge(ServerConfig.layer),
  Layer.provideMerge(NodeContext.layer)
)

cli(process.argv).pipe(
  Effect.provide(MainLive),
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const exit = Effect.sync(() => {
      process.exitCode = 1
    })
    const failure = Cause.squash(cause)
    // @effect/cli has already printed its own message for bad arguments (missing flag, invalid choice…).
    if (ValidationError.isValidationError(failure)) return exit
    return Effect.zipRight(Console.error(`parley: ${describeFailure(failure)}`), exit)
  }),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
