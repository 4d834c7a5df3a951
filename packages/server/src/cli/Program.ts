/**
 * The `parley` command as a value: its subcommands and the one line a failure is reported as. `main.ts` runs it as a
 * process; the tests run the same value in their own process where the CLI is
 * only how set-up is done.
 */
import { Command } from "@effect/cli"
import { Predicate } from "effect"
import { commands } from "./commands/index.js"

const parley = Command.make("parley").pipe(
  Command.withDescription("Parley: messaging and AI-call API for CRM integrations"),
  Command.withSubcommands(commands)
)

export const cli = Command.run(parley, { name: "parley", version: "0.1.0" })

/** One plain line for a failure: CliError messages as written, storage failures by operation, never a stack. */
export const describeFailure = (failure: unknown): string => {
  if (Predicate.isTagged(failure, "StorageError") && Predicate.hasProperty(failure, "operation")) {
    const cause = Predicate.hasProperty(failure, "cause") ? failure.cause : undefined
    const detail = cause instanceof Error && cause.message !== "" ? `: ${cause.message}` : ""
    return `storage failure in ${String(failure.operation)}${detail}`
  }
  if (failure instanceof Error) return failure.message === "" ? failure.name : failure.message.split("\n")[0] ?? ""
  return String(failure)
}
