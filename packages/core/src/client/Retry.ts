/**
 * Retrying what the server asks to be retried, below the contract client (so a
 * retry resends the very same request, Idempotency-Key included):
 * - 429 RATE_LIMITED always: the rate limit refuses a request before it does anything;
 * - 503 (storage unavailable, pilot gate) only when sending twice cannot do a
 *   thing twice: a method idempotent by definition, or a request carrying an
 *   Idempotency-Key (the server replays the first result).
 * The wait is the server's `Retry-After` when it sends one, else an
 * exponential backoff; a `Retry-After` longer than the policy accepts returns
 * the error at once rather than hanging the caller.
 */
import { HttpClient, type HttpClientRequest } from "@effect/platform"
import { Clock, Duration, Effect } from "effect"
import { IDEMPOTENCY_HEADER } from "../contract/Requests.js"
import { parseRetryAfter } from "./RetryAfter.js"

export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. Default 3. */
  readonly maxRetries?: number
  /** The longest single wait accepted, in milliseconds; a longer Retry-After fails at once. Default 60,000 (the rate-limit window). */
  readonly maxDelayMs?: number
  /** The first wait when the server sends no Retry-After, doubled on each retry. Default 500. */
  readonly baseDelayMs?: number
}

export const DEFAULT_RETRY_POLICY: Required<RetryPolicy> = { maxRetries: 3, maxDelayMs: 60_000, baseDelayMs: 500 }

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])

/** Whether a response with `status` to `request` may be sent again. */
export const isRetryable = (request: HttpClientRequest.HttpClientRequest, status: number): boolean =>
  status === 429 ||
  (status === 503 && (IDEMPOTENT_METHODS.has(request.method) || request.headers[IDEMPOTENCY_HEADER] !== undefined))

/** Milliseconds to wait before retry number `retry` (0 for the first), or undefined to give up. */
export const retryDelay = (
  policy: Required<RetryPolicy>,
  retryAfter: string | undefined,
  retry: number,
  now: number
): number | undefined => {
  const delay = parseRetryAfter(retryAfter, now) ?? Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry)
  return delay > policy.maxDelayMs ? undefined : delay
}

export const withRetries = (options: RetryPolicy = {}) => (client: HttpClient.HttpClient): HttpClient.HttpClient => {
  const policy = { ...DEFAULT_RETRY_POLICY, ...options }
  return HttpClient.transform(client, (send, request) => {
    const attempt = (retry: number): typeof send =>
      Effect.flatMap(send, (response) => {
        if (retry >= policy.maxRetries || !isRetryable(request, response.status)) return Effect.succeed(response)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const delay = retryDelay(policy, response.headers["retry-after"], retry, now)
          if (delay === undefined) return Effect.succeed(response)
          // Read the refused answer to the end so its connection can carry the retry.
          return response.text.pipe(
            Effect.ignore,
            Effect.zipRight(Effect.sleep(Duration.millis(delay))),
            Effect.zipRight(attempt(retry + 1))
          )
        })
      })
    return attempt(0)
  })
}
