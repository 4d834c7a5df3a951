/**
 * How every CLI command answers: with `--json`, one JSON document on stdout
 * (for scripts); without it, readable lines. Failures print one plain line on
 * stderr and exit non-zero; they never print a stack trace.
 */
import { Options } from "@effect/cli"
import { Console, Data, Effect } from "effect"

export const json = Options.boolean("json").pipe(Options.withDescription("Print machine-readable JSON"))

/** `--org`, the organisation a command acts on. */
export const orgFlag = Options.text("org").pipe(Options.withDescription("Organisation id (org_…)"))

/** A text flag the command may go without (Option.none when absent). */
export const optionalText = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

/** A failure the user caused or can fix: printed as is, exit code 1. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

export const print = (asJson: boolean, value: unknown, human: () => string): Effect.Effect<void> =>
  asJson ? Console.log(JSON.stringify(value, null, 2)) : Console.log(human())

export const table = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows.reduce<Array<number>>(
    (acc, row) => row.map((cell, i) => Math.max(acc[i] ?? 0, cell.length)),
    []
  )
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd()).join("\n")
}
