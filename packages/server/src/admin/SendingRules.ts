/**
 * The rules for changing an organisation's sending rules, in one place for `parley orgs update` and the
 * console's Sending rules page: sending hours in an IANA time zone (parsed by the core's SendingHours,
 * which the dispatcher applies), and allowances as a whole number or unlimited.
 */
import { SendingHours } from "@parley/core/internal"
import { Either } from "effect"

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

/** `N` (a whole number ≥ 0) or `unlimited` (null). */
export const allowanceValue = (value: string): Either.Either<number | null, string> => {
  const text = value.trim().toLowerCase()
  if (text === "unlimited") return Either.right(null)
  if (/^\d{1,15}$/.test(text)) return Either.right(Number(text))
  return Either.left(`"${value}" must be a whole number of at least 0 or "unlimited".`)
}
