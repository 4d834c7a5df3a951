/**
 * The small value types every resource and request of /api/v1 is made of.
 * Each carries its constraint from the contract so that a violation is a 400
 * naming the field, and each is documented so the OpenAPI document says why.
 */
import { Schema } from "effect"

/** E.164 telephone number, as the contract defines it. */
export const E164 = Schema.String.pipe(
  Schema.pattern(/^\+[1-9]\d{7,14}$/, {
    message: () => "must be an E.164 telephone number such as +14155550100"
  })
).annotations({
  identifier: "E164",
  description: "Telephone number in E.164 format (`^\\+[1-9]\\d{7,14}$`).",
  examples: ["+14155550100"]
})

/**
 * A counterpart's address as carriers deliver it: an E.164 number (7 digits and up here: Niue's `+6834002` is a
 * whole number, where the contract's E.164 for Parley's own lines and recipients starts at 8), a short code (3 to
 * 8 digits, such as 89898), or an alphanumeric sender ID (up to 11 letters, digits and spaces, at least one
 * letter, such as `MyBank`) — businesses write from short codes and sender IDs, and their messages must not be
 * lost or break a list.
 */
/**
 * An alphanumeric sender ID, 1 to 11 characters with at least one letter, spelled without a lookahead (the
 * test generators and some OpenAPI tools do not take one): the first letter after 0 to 10 digits or spaces,
 * then at most the rest of the 11.
 */
const SENDER_ID = Array.from({ length: 11 }, (_, before) =>
  `${before === 0 ? "" : `[0-9 ]{${before}}`}[A-Za-z][A-Za-z0-9 ]{0,${10 - before}}`).join("|")

export const PhoneOrShortCode = Schema.String.pipe(
  Schema.pattern(new RegExp(`^(\\+[1-9]\\d{6,14}|\\d{3,8}|${SENDER_ID})$`), {
    message: () =>
      "must be an E.164 telephone number such as +14155550100, a short code such as 89898 or an alphanumeric sender ID such as MyBank"
  })
).annotations({
  identifier: "PhoneOrShortCode",
  description: "Telephone number in E.164 format (`^\\+[1-9]\\d{6,14}$`), a short code of 3 to 8 digits, or an alphanumeric " +
    "sender ID (1 to 11 letters, digits and spaces, at least one letter).",
  examples: ["+14155550100", "89898", "MyBank"]
})

const OFFSET_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|([+-])(\d{2}):(\d{2}))$/

/** Real UTC offsets run from -12:00 to +14:00; ±14:00 bounds both sides. */
const MAX_OFFSET_MINUTES = 14 * 60

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/**
 * Whether `s` is a real calendar instant with an offset. `Date.parse` alone rolls impossible dates over
 * (`2030-02-30` becomes March 2) and takes offsets up to ±23:59, so every part is checked here.
 */
export const isOffsetTimestamp = (s: string): boolean => {
  const m = OFFSET_TIMESTAMP.exec(s)
  if (m === null) return false
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? "0"].map(Number)
  if (year === undefined || month === undefined || day === undefined) return false
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false
  if ((hour ?? 24) > 23 || (minute ?? 60) > 59 || (second ?? 60) > 59) return false
  if (m[7] !== undefined && Number(m[8]) * 60 + Number(m[9]) > MAX_OFFSET_MINUTES) return false
  if (m[9] !== undefined && Number(m[9]) > 59) return false
  return !Number.isNaN(Date.parse(s))
}

/**
 * ISO 8601 timestamp that must carry a timezone offset (`Z` or `±hh:mm`, at most ±14:00) and name a real
 * calendar date and time. A local time without an offset is ambiguous for scheduling, so it is refused.
 */
export const OffsetTimestamp = Schema.String.pipe(
  Schema.filter((s) =>
    isOffsetTimestamp(s)
      ? true
      : "must be a real date and time in ISO 8601 with a timezone offset between -14:00 and +14:00, " +
        "such as 2026-01-31T09:30:00+01:00"
  )
).annotations({
  identifier: "OffsetTimestamp",
  description: "ISO 8601 timestamp with a timezone offset (`Z` or `±hh:mm`, within ±14:00); a real calendar date.",
  examples: ["2026-01-31T09:30:00+01:00"]
})

/** Timestamps the service writes: always UTC ISO 8601. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 timestamp with a timezone offset (the service writes UTC).",
  examples: ["2026-01-31T08:30:00.000Z"]
})

/** CRM action ids are numeric strings. */
export const ActionId = Schema.String.pipe(
  Schema.pattern(/^[1-9]\d{0,18}$/, {
    message: () => "must be a numeric CRM action id; simulated test_ ids cannot be read"
  })
).annotations({
  identifier: "ActionId",
  description: "Numeric CRM action id. Simulated `test_` ids returned to test keys cannot be read.",
  examples: ["1042"]
})

export const Scope = Schema.Literal(
  "resources:read",
  "messages:read",
  "messages:write",
  "calls:read",
  "calls:write",
  "webhooks:read",
  "webhooks:write",
  "optouts:read",
  "optouts:write"
).annotations({ identifier: "Scope" })
export type Scope = typeof Scope.Type
export const ALL_SCOPES: ReadonlyArray<Scope> = Scope.literals

export const CrmModule = Schema.Literal("Leads", "Contacts", "Vendors", "Deals").annotations({
  identifier: "CrmModule",
  description: "CRM module of a linked record."
})
export type CrmModule = typeof CrmModule.Type

export const Channel = Schema.Literal("SMS", "WhatsApp").annotations({ identifier: "Channel" })
export type Channel = typeof Channel.Type

export const CallMode = Schema.Literal("follow_script", "deliver_specific_message").annotations({
  identifier: "CallMode",
  description:
    "`follow_script`: the bot runs its own script. `deliver_specific_message`: the bot delivers `purposeMessage`."
})
export type CallMode = typeof CallMode.Type

export const KeyMode = Schema.Literal("test", "live")
export type KeyMode = typeof KeyMode.Type

/**
 * How many characters a string has, as people and JSON Schema count them: Unicode code points. A
 * JavaScript string's `length` counts UTF-16 units, two for every emoji and every character beyond
 * the Basic Multilingual Plane, so a limit checked with it refuses text a client validating against
 * the OpenAPI document (whose `maxLength` counts code points) rightly thinks fits.
 */
export const characterCount = (s: string): number => {
  let count = s.length
  for (let i = 0; i < s.length - 1; i++) {
    const unit = s.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--
        i++
      }
    }
  }
  return count
}

/**
 * At most `max` characters (code points, see `characterCount`); published as JSON Schema's
 * `maxLength`, which counts the same way. Every length limit of the contract goes through here.
 */
export const maxCharacters = (max: number, options: { readonly message?: string } = {}) =>
<A extends string, I, R>(self: Schema.Schema<A, I, R>): Schema.filter<Schema.Schema<A, I, R>> =>
  self.pipe(Schema.filter((s) => {
    const count = characterCount(s)
    return count <= max || (options.message ?? `must be at most ${max} characters long, but has ${count}`)
  }, { jsonSchema: { maxLength: max } }))

/** A bounded string: its limit is part of the contract (Limits table), in characters. */
export const BoundedString = (max: number) => Schema.String.pipe(maxCharacters(max))
