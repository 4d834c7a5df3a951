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
 * When a refused request would next fit, if nothing else is counted meanwhile: a bucket stops counting one
 * window after its latest request (RateLimitStore), so once enough of the oldest buckets have left the
 * window. Never later than one window from now, since every counted request is at or before now.
 */
export const nextFitAt = (
  limit: number,
  windowMs: number,
  buckets: ReadonlyArray<RateLimitStore.CountedBucket>
): number => {
  let used = buckets.reduce((sum, b) => sum + b.count, 0)
  const oldestFirst = [...buckets].sort((a, b) => a.last - b.last)
  for (const bucket of oldestFirst) {
    used -= bucket.count
    if (used + 1 <= limit) return bucket.last + windowMs
  }
  return (oldestFirst.at(-1)?.last ?? 0) + windowMs
}

export const layer: Layer.Layer<RateLimiter, never, RateLimitStore.RateLimitStore | RateLimitConfig> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const store = yield* RateLimitStore.RateLimitStore
    const policy = yield* RateLimitConfig
    const windowMs = policy.windowSeconds * 1000
    const bucketMs = windowMs / RateLimitStore.BUCKETS
    return RateLimiter.of({
      // On every request: two steps (the clock, the count), no generator.
      consume: (keyId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const bucket = Math.floor(now / bucketMs)
          return Effect.flatMap(store.hit({ key: keyId, bucket, at: now, since: now - windowMs, limit: policy.limit }), (counted) => {
            if (!counted.accepted) {
              // Bounded by the window also when a replica's clock ran ahead of this one's (its `last` is later).
              const retryAfterSeconds = Math.min(
                policy.windowSeconds,
                Math.max(1, Math.ceil((nextFitAt(policy.limit, windowMs, counted.buckets) - now) / 1000))
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
              // Until this request no longer counts (nor any before it): one window from now.
              resetSeconds: policy.windowSeconds,
              windowSeconds: policy.windowSeconds
            })
          })
        })
    })
  })
)
