/**
 * What a log line must never hold, taken out of every line at the one logger
 * (Logging.ts) as a safety net behind the rule that code logs ids, routes,
 * statuses and timings only:
 * - phone numbers (E.164, `+` and 7–15 digits, also percent-encoded as `%2B…`):
 *   all but the last 4 digits masked, so an operator can still tell two apart;
 * - Parley's API keys, webhook signing secrets and bearer credentials: replaced.
 * Message bodies cannot be recognised by their shape; nothing logs them (the
 * log test of a scripted session checks).
 */

const PHONE = /(\+|%2B)(\d{3,11})(\d{4})(?!\d)/gi
const API_KEY = /parley_(live|test)_[A-Za-z0-9]+/g
const WEBHOOK_SECRET = /whsec_[A-Za-z0-9+/=]+/g
const BEARER = /(Bearer\s+)[^\s",]+/gi

/** `+14155550123` → `+*******0123`. */
export const maskPhone = (text: string): string =>
  text.replace(PHONE, (_all, plus: string, hidden: string, last: string) => `${plus}${"*".repeat(hidden.length)}${last}`)

// The cheap test first: most log text (ids, routes, numbers of milliseconds) holds none of these characters.
const MAYBE_SECRET = /[+%_]|Bearer/i

export const redact = (text: string): string =>
  !MAYBE_SECRET.test(text) ? text : maskPhone(
    text
      .replace(API_KEY, "parley_$1_[redacted]")
      .replace(WEBHOOK_SECRET, "whsec_[redacted]")
      .replace(BEARER, "$1[redacted]")
  )

/** Redacts every string inside a log annotation's value (arrays and plain objects included). */
export const redactValue = (value: unknown, depth = 0): unknown => {
  if (typeof value === "string") return redact(value)
  if (depth > 4 || typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1))
  if (Object.getPrototypeOf(value) !== Object.prototype) return value
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactValue(inner, depth + 1)]))
}
