/**
 * Allowances are per period, as a phone plan or a provider's usage page counts them: a calendar month in
 * the organisation's sending time zone. Usage is kept under the key of the period it was counted in, so a
 * new month starts with nothing used without any job resetting counters at midnight; the limit itself
 * (`smsAllowance`, `callAllowance`) is a setting that stays until someone changes it.
 */
import type { AllowanceKind, AllowanceUsage, Organisation } from "../ports/Organisations.js"

const formats = new Map<string, Intl.DateTimeFormat>()

const monthFormat = (timeZone: string): Intl.DateTimeFormat => {
  const known = formats.get(timeZone)
  if (known !== undefined) return known
  let format: Intl.DateTimeFormat
  try {
    format = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit" })
  } catch {
    // Zones are validated when set; one a later runtime stopped knowing counts in UTC rather than failing sends.
    format = new Intl.DateTimeFormat("en-CA", { timeZone: "UTC", year: "numeric", month: "2-digit" })
  }
  formats.set(timeZone, format)
  return format
}

/** The period `at` falls in, in `timeZone`: its month as `YYYY-MM`. */
export const periodOf = (at: number, timeZone: string): string => {
  const parts = monthFormat(timeZone).formatToParts(new Date(at))
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "01"
  return `${part("year")}-${part("month")}`
}

/** The first day of a period, as a calendar date (`YYYY-MM-DD`) in the organisation's time zone. */
export const periodStart = (period: string): string => `${period}-01`

/** Nothing used yet in `period`. */
export const unused = (period: string): AllowanceUsage => ({ period, sms: 0, calls: 0 })

/** The limit of one allowance per period; null means unlimited. */
export const limitOf = (organisation: Organisation, kind: AllowanceKind): number | null =>
  kind === "sms" ? organisation.smsAllowance : organisation.callAllowance

/** Units of one allowance used in the period of `usage`. */
export const usedOf = (usage: AllowanceUsage, kind: AllowanceKind): number => (kind === "sms" ? usage.sms : usage.calls)

/** What a limit leaves after `used` units: null when unlimited, never below zero (a lowered limit). */
export const remaining = (limit: number | null, used: number): number | null =>
  limit === null ? null : Math.max(0, limit - used)

/** What is left of an allowance in the period of `usage`. */
export const left = (organisation: Organisation, usage: AllowanceUsage, kind: AllowanceKind): number | null =>
  remaining(limitOf(organisation, kind), usedOf(usage, kind))
