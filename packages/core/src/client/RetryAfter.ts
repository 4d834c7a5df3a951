/**
 * How an HTTP client reads `Retry-After` (RFC 9110 §10.2.3): delay-seconds or
 * an HTTP-date. Shared by the clients Parley ships and by event delivery,
 * which honours the header when a webhook endpoint sends one.
 */

/** Milliseconds to wait from `now`, or undefined when the header is absent or unreadable. */
export const parseRetryAfter = (value: string | null | undefined, now: number): number | undefined => {
  if (value === null || value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}
