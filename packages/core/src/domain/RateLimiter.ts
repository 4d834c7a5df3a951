/**
 * The per-key request limit (60 requests a minute by default) as a sliding
 * window counted in buckets (see RateLimitStore): no stretch of 60 seconds
 * holds more than the limit, across processes that share the store, and a
 * burst at the end of one minute still counts at the start of the next.
 * The decision carries what the HTTP layer needs for the `RateLimit-Policy`,
 * `RateLimit` and `Retry-After` headers.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { RateLimited } from "../contract/Errors.js"
import * as RateLimitStore from "../ports/RateLimitStore.js"
import type { StorageError } from "../ports/StorageError.js"

export interface RateLimitPolicy {
  readonly limit: number
  readonly windowSeconds: number
}

/** The limit in force; the server reads it from PARLEY_RATE_LIMIT_PER_MINUTE. */
export class RateLimitConfig extends Context.Tag("@parley/core/RateLimitConfig")<RateLimitConfig, RateLimitPolicy>() {
  static readonly default: RateLimitPolicy = { limit: 60, windowSeconds: 60 }
  static readonly layer = (policy: RateLimitPolicy) => Layer.succeed(RateLimitConfig, policy)
}

export interface RateLimitDecision {
  readonly limit: number
  readonly remaining: number
  /** Seconds until the window resets. */
  readonly resetSeconds: number
  readonly windowSeconds: number
}

export interface RateLimiterService {
  readonly consume: (keyId: string) => Effect.Effect<RateLimitDecision, RateLimited | StorageError>
}

export class RateLimiter extends Context.Tag("@parley/core/RateLimiter")<RateLimiter, RateLimiterService>() {}

/**
 * When a refused request would next fit, if nothing else is counted meanwhile: at the start of the first
 * bucket whose counted stretch no longer holds enough of the old requests.
 */
const nextFitAt = (
  limit: number,
  bucketMs: number,
  current: number,
  buckets: ReadonlyArray<{ readonly bucket: number; readonly count: number }>
): number => {
  for (let next = current + 1; ; next++) {
    const oldest = RateLimitStore.oldestCounted(next)
    const used = buckets.reduce((sum, b) => (b.bucket >= oldest ? sum + b.count : sum), 0)
    if (used + 1 <= limit) return next * bucketMs
  }
}

export const layer: Layer.Layer<RateLimiter, never, RateLimitStore.RateLimitStore | RateLimitConfig> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const store = yield* RateLimitStore.RateLimitStore
    const policy = yield* RateLimitConfig
    const bucketMs = (policy.windowSeconds * 1000) / RateLimitStore.BUCKETS
    return RateLimiter.of({
      // On every request: two steps (the clock, the count), no generator.
      consume: (keyId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const bucket = Math.floor(now / bucketMs)
          return Effect.flatMap(store.hit({ key: keyId, bucket, limit: policy.limit }), (counted) => {
            if (!counted.accepted) {
              const retryAfterSeconds = Math.max(
                1,
                Math.ceil((nextFitAt(policy.limit, bucketMs, bucket, counted.buckets) - now) / 1000)
              )
              return Effect.fail(
                new RateLimited({
                  message: `Rate limit of ${policy.limit} requests per ${policy.windowSeconds} seconds exceeded; ` +
                    `retry after ${retryAfterSeconds} seconds.`,
                  retryAfterSeconds
                })
              )
            }
            return Effect.succeed<RateLimitDecision>({
              limit: policy.limit,
              remaining: Math.max(0, policy.limit - counted.used),
              // Until this request no longer counts: the window after its bucket ends.
              resetSeconds: Math.max(1, Math.ceil(((bucket + RateLimitStore.BUCKETS + 1) * bucketMs - now) / 1000)),
              windowSeconds: policy.windowSeconds
            })
          })
        })
    })
  })
)
