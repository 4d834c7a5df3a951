/**
 * Checks and conversions shared by the admin commands. Each failure is a
 * CliError whose message names the flag and says what was expected, so the
 * user sees one plain line and a non-zero exit code.
 */
import { Crm, E164, OffsetTimestamp, Organisations } from "@parley/core/internal"
import { Clock, Effect, Either, Option, Schema } from "effect"
import { allowanceValue } from "../admin/SendingRules.js"
import { CliError } from "./Output.js"

export const fail = (message: string) => Effect.fail(new CliError({ message }))

/** The current time as an ISO string, from the Clock. */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The organisation, or an error naming the unknown id. */
export const requireOrg = (orgId: string) =>
  Effect.gen(function*() {
    const organisations = yield* Organisations.Organisations
    const found = yield* organisations.get(orgId)
    if (Option.isNone(found)) {
      return yield* fail(`Unknown organisation "${orgId}" (see \`parley orgs list\`)`)
    }
    return found.value
  })

const isE164 = Schema.is(E164)

export const e164 = (flag: string, value: string): Effect.Effect<string, CliError> =>
  isE164(value)
    ? Effect.succeed(value)
    : fail(`${flag} "${value}" must be an E.164 telephone number such as +14155550100`)

const decodeTimestamp = Schema.decodeUnknownEither(OffsetTimestamp)

/** An ISO 8601 timestamp with an offset, normalised to UTC. */
export const isoTimestamp = (flag: string, value: string): Effect.Effect<string, CliError> =>
  Either.isRight(decodeTimestamp(value))
    ? Effect.succeed(new Date(Date.parse(value)).toISOString())
    : fail(`${flag} "${value}" must be an ISO 8601 timestamp with a timezone offset, such as 2030-01-31T09:30:00Z`)

/** A comma-separated list: trimmed, empty items dropped, duplicates removed, order kept. */
export const csv = (value: string): ReadonlyArray<string> => [
  ...new Set(value.split(",").map((item) => item.trim()).filter((item) => item !== ""))
]

/** Every item of `items` must be one of `allowed`; the first unknown one is named. */
export const oneOfEach = <A extends string>(
  flag: string,
  items: ReadonlyArray<string>,
  allowed: ReadonlyArray<A>,
  what: string
): Effect.Effect<ReadonlyArray<A>, CliError> => {
  const known: Array<A> = []
  for (const item of items) {
    const match = allowed.find((a) => a === item)
    if (match === undefined) {
      return fail(`${flag}: unknown ${what} "${item}"; expected ${allowed.length === 0 ? "none (there are none)" : allowed.join(", ")}`)
    }
    known.push(match)
  }
  return Effect.succeed(known)
}

/** `N` (a whole number ≥ 0) or `unlimited` (null). */
export const allowance = (flag: string, value: string): Effect.Effect<number | null, CliError> =>
  Either.match(allowanceValue(value), { onLeft: (message) => fail(`${flag} ${message}`), onRight: Effect.succeed })

export const MODULES: ReadonlyArray<Crm.CrmPermissions["modules"][number]> = ["Leads", "Contacts", "Vendors", "Deals"]

/** A non-empty value after trimming. */
export const nonEmpty = (flag: string, value: string): Effect.Effect<string, CliError> =>
  value.trim() === "" ? fail(`${flag} must not be empty`) : Effect.succeed(value.trim())

/** Rows of `key: value` lines for readable output. */
export const fields = (rows: ReadonlyArray<readonly [string, string]>): string => {
  const width = rows.reduce((max, [label]) => Math.max(max, label.length), 0)
  return rows.map(([label, value]) => `  ${`${label}:`.padEnd(width + 2)}${value}`).join("\n")
}

export const orNone = (value: string | null | undefined, none = "-"): string =>
  value === null || value === undefined || value === "" ? none : value
