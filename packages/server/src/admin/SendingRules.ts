/**
 * The rules for changing an organisation's sending rules, in one place for `parley orgs update` and the
 * console's Sending rules page: sending hours in an IANA time zone (parsed by the core's SendingHours,
 * which the dispatcher applies), allowances per month as a whole number or unlimited, and what is used of
 * them this month, as both show it.
 */
import { AllowancePeriods, Organisations, SendingHours } from "@parley/core/internal"
import { Clock, Effect, Either } from "effect"

export interface SendingHoursChange {
  readonly sendingHours: string
  readonly timezone: string
}

export type SendingHoursProblem = { readonly field: "sendingHours" | "timezone"; readonly message: string }

export const sendingHoursChange = (spec: string, zone: string): Either.Either<SendingHoursChange, SendingHoursProblem> => {
  if (!SendingHours.isValidTimeZone(zone.trim())) {
    return Either.left({ field: "timezone", message: `"${zone}" is not an IANA time zone such as Europe/Berlin.` })
  }
  const parsed = SendingHours.parseSendingHours(spec, zone)
  if (Either.isLeft(parsed)) return Either.left({ field: "sendingHours", message: parsed.left.message })
  return Either.right({
    sendingHours: spec.trim().toLowerCase() === "always" ? "always" : spec.trim(),
    timezone: parsed.right.timezone
  })
}

/**
 * Every problem of a sending-hours change at once (the console shows each beside its field): with a zone that
 * is not one, the spec is still read, against UTC, so a wrong spec is not hidden behind the zone's error.
 */
export const sendingHoursProblems = (spec: string, zone: string): ReadonlyArray<SendingHoursProblem> => {
  const change = sendingHoursChange(spec, zone)
  if (Either.isRight(change) || change.left.field === "sendingHours") return Either.isLeft(change) ? [change.left] : []
  const specAlone = SendingHours.parseSendingHours(spec, "UTC")
  return Either.isLeft(specAlone) ? [change.left, { field: "sendingHours", message: specAlone.left.message }] : [change.left]
}

/** `N` (a whole number ≥ 0) or `unlimited` (null). */
export const allowanceValue = (value: string): Either.Either<number | null, string> => {
  const text = value.trim().toLowerCase()
  if (text === "unlimited") return Either.right(null)
  if (/^\d{1,15}$/.test(text)) return Either.right(Number(text))
  return Either.left(`"${value}" must be a whole number of at least 0 or "unlimited".`)
}

/** One allowance this period: units used, and the limit (null: unlimited). */
export interface AllowanceThisPeriod {
  readonly used: number
  readonly limit: number | null
}

/** The organisation's allowances in the current period, as `parley orgs show --json` prints them. */
export interface AllowancesThisPeriod {
  /** The period, `YYYY-MM`: a calendar month in the organisation's time zone. */
  readonly period: string
  /** Its first day (`YYYY-MM-DD`), in the organisation's time zone. */
  readonly since: string
  readonly timezone: string
  readonly sms: AllowanceThisPeriod
  readonly calls: AllowanceThisPeriod
}

export const allowancesThisPeriod = (org: Organisations.Organisation) =>
  Effect.gen(function*() {
    const period = AllowancePeriods.periodOf(yield* Clock.currentTimeMillis, org.timezone)
    const usage = yield* (yield* Organisations.Organisations).usage(org.id, period)
    const view: AllowancesThisPeriod = {
      period,
      since: AllowancePeriods.periodStart(period),
      timezone: org.timezone,
      sms: { used: usage.sms, limit: org.smsAllowance },
      calls: { used: usage.calls, limit: org.callAllowance }
    }
    return view
  })

/** "used 3 of 1000 this period (since 2026-11-01)". */
export const describeAllowance = (allowance: AllowanceThisPeriod, since: string): string =>
  `used ${allowance.used} of ${allowance.limit === null ? "unlimited" : allowance.limit} this period (since ${since})`

/** The longest opt-out word an organisation may add, as `parley orgs update --opt-out-words` allows. */
export const OPT_OUT_WORD_MAX = 40

/** The organisation's own opt-out words from a comma-separated list ("" for none): trimmed, each once. */
export const optOutWordsValue = (value: string): Either.Either<ReadonlyArray<string>, string> => {
  const words = [...new Set(value.split(",").map((word) => word.trim()).filter((word) => word !== ""))]
  const tooLong = words.find((word) => word.length > OPT_OUT_WORD_MAX)
  return tooLong === undefined
    ? Either.right(words)
    : Either.left(`"${tooLong}" is longer than ${OPT_OUT_WORD_MAX} characters.`)
}

/** Who answers keywords, as `parley orgs update --keyword-replies` and the console name them (see Consent). */
export const KEYWORD_REPLY_MODES: ReadonlyArray<Organisations.KeywordReplies> = ["parley", "provider", "off"]

/**
 * The longest keyword reply an organisation may write: two SMS segments of plain text (2 × 153 characters), so
 * that a confirmation stays one short message the recipient reads at a glance, as the CTIA expects.
 */
export const KEYWORD_TEXT_MAX = 306

/** An organisation's keyword reply ("" for Parley's default, which names the organisation): trimmed. */
export const keywordTextValue = (value: string): Either.Either<string | null, string> => {
  const text = value.trim()
  if (text === "") return Either.right(null)
  return text.length > KEYWORD_TEXT_MAX
    ? Either.left(`At most ${KEYWORD_TEXT_MAX} characters (this one has ${text.length}).`)
    : Either.right(text)
}
