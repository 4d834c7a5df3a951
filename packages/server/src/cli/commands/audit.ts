/**
 * `parley audit --org ORG`: the organisation's audit log (admin/AuditLog.ts), newest first — the same
 * entries, filters and keyset paging as the console's Audit log page. `--json` prints the entries and the
 * cursor of the next page (pass it back with `--after`).
 */
import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { AuditLog, kindLabel } from "../../admin/AuditLog.js"
import { fail, requireOrg } from "../Input.js"
import { json, optionalText, orgFlag, print, table } from "../Output.js"

const MAX_LIMIT = 1_000

export const audit = Command.make(
  "audit",
  {
    json,
    org: orgFlag,
    actor: optionalText("actor", "Only this actor's entries (an email, or cli)"),
    kind: optionalText("kind", "Only entries of this kind, such as key.created"),
    after: optionalText("after", "Continue after this cursor (`next` of the previous page)"),
    limit: Options.integer("limit").pipe(Options.withDescription(`Entries per page, 1 to ${MAX_LIMIT}`), Options.withDefault(50))
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      if (input.limit < 1 || input.limit > MAX_LIMIT) return yield* fail(`--limit must be between 1 and ${MAX_LIMIT}`)
      const found = yield* (yield* AuditLog).page(input.org, {
        actor: Option.getOrUndefined(input.actor),
        kind: Option.getOrUndefined(input.kind),
        after: Option.getOrUndefined(input.after),
        limit: input.limit
      })
      const items = found.entries.map((e) => ({
        at: new Date(e.at).toISOString(),
        actor: e.actor,
        kind: e.kind,
        subject: e.subject,
        detail: e.detail,
        address: e.address
      }))
      yield* print(input.json, { items, next: found.next }, () =>
        items.length === 0
          ? `No audit entries for ${input.org}${Option.isSome(input.after) ? " after that cursor" : ""}.`
          : [
            table([
              ["AT", "ACTOR", "WHAT", "ON", "DETAILS", "FROM"],
              ...items.map((e) => [e.at, e.actor, kindLabel(e.kind), e.subject ?? "-", e.detail ?? "-", e.address ?? "-"])
            ]),
            ...(found.next === null ? [] : ["", `More: parley audit --org ${input.org} --after ${found.next}`])
          ].join("\n"))
    })
).pipe(
  Command.withDescription("The organisation's audit log: who changed what, when and from where")
)
