/**
 * The `parley` command: the server and the admin tools of the spec's
 * "Developer access" area. Every command runs against the store the
 * environment configures, so it can run beside a live server on the same data.
 */
import { ValidationError } from "@effect/cli"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect } from "effect"
import { ProcessLive } from "../AppLayer.js"
import { cli, describeFailure } from "./Program.js"

cli(process.argv).pipe(
  Effect.provide(ProcessLive),
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
