/**
 * Signed event delivery, per Standard Webhooks v1:
 * - headers `webhook-id` (the event id, stable across retries),
 *   `webhook-timestamp` (seconds) and `webhook-signature`: `v1,<base64
 *   HMAC-SHA256 of "id.timestamp.body">`, one per active secret, space-separated
 *   (so receivers keep verifying while a secret is rotated);
 * - secrets are `whsec_` + base64 of the key bytes;
 * - retries on an exponential schedule with jitter: at once, then about 5 s,
 *   5 min, 30 min, 2 h, 5 h, 10 h and 10 h (about 27.6 hours in all), never
 *   sooner than the endpoint's `Retry-After`; after the last one the delivery
 *   has failed and the endpoint is disabled with the reason.
 * Order is not promised; every payload carries the record's `modified`, so a
 * receiver can discard a stale event.
 */
import { createHmac, randomBytes } from "node:crypto"

export const SECRET_PREFIX = "whsec_"

export const newSecret = (): string => SECRET_PREFIX + randomBytes(24).toString("base64")

export const sign = (secret: string, id: string, timestamp: number, body: string): string => {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`
}

export const signatureHeader = (
  secrets: ReadonlyArray<string>,
  id: string,
  timestamp: number,
  body: string
): string => secrets.map((secret) => sign(secret, id, timestamp, body)).join(" ")

/** Delay before each retry, in ms: index n is the wait after the n-th failed attempt. */
export const RETRY_DELAYS_MS: ReadonlyArray<number> = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000
]

/** Attempts in all: the first, then one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1

/**
 * When to try again after `failedAttempts` failures, or null when the schedule
 * is spent. Jitter of ±10% spreads retries of many events; `scale` shortens
 * the schedule (tests); a `Retry-After` from the endpoint is a lower bound.
 */
export const nextAttemptAt = (
  failedAttempts: number,
  now: number,
  options: { readonly retryAfterMs?: number | undefined; readonly scale?: number | undefined; readonly random?: () => number }
): number | null => {
  const base = RETRY_DELAYS_MS[failedAttempts - 1]
  if (base === undefined) return null
  const jitter = 1 + ((options.random ?? Math.random)() * 0.2 - 0.1)
  const delay = Math.round(base * (options.scale ?? 1) * jitter)
  return now + Math.max(delay, options.retryAfterMs ?? 0)
}

/** Parses `Retry-After` (seconds or an HTTP date) into ms from now; one reading for delivery and Parley's clients. */
export { parseRetryAfter } from "../client/RetryAfter.js"
