/**
 * `parley <noun> list --org ORG [--json]`, the same for every organisation-scoped list: the organisation must
 * exist, `--json` prints `{items}` with each row's view, otherwise a table — or, when there is nothing, one line
 * saying how to add the first.
 */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { requireOrg } from "./Input.js"
import { json, print, table } from "./Output.js"

export const orgOption = Options.text("org").pipe(Options.withDescription("Organisation id (org_…)"))

export interface ListSpec<A, E, R> {
  readonly description: string
  readonly load: (orgId: string) => Effect.Effect<ReadonlyArray<A>, E, R>
  /** The row as `--json` prints it. */
  readonly view: (row: A) => unknown
  /** What to print when there is nothing: how to add the first. */
  readonly empty: (orgId: string) => string
  readonly columns: ReadonlyArray<string>
  readonly cells: (row: A) => ReadonlyArray<string>
}

export const listCommand = <A, E, R>(spec: ListSpec<A, E, R>) =>
  Command.make("list", { json, org: orgOption }, (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const rows = yield* spec.load(input.org)
      yield* print(input.json, { items: rows.map(spec.view) }, () =>
        rows.length === 0 ? spec.empty(input.org) : table([spec.columns, ...rows.map(spec.cells)]))
    })).pipe(Command.withDescription(spec.description))
