/**
 * The per-key request limit: a fixed window (60 requests a minute by default)
 * counted in the RateLimitStore, so the count is exact across processes that
 * share the store. The decision carries what the HTTP layer needs for the
 * `RateLimit-Policy`, `RateLimit` and `Retry-After` headers.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { RateLimited } from "../contract/Errors.js"
import { RateLimitStore } from "../ports/RateLimitStore.js"
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

export const layer: Layer.Layer<RateLimiter, never, RateLimitStore | RateLimitConfig> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const policy = yield* RateLimitConfig
    const windowMs = policy.windowSeconds * 1000
    return RateLimiter.of({
      // On every request: two steps (the clock, the count), no generator.
      consume: (keyId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const windowStart = now - (now % windowMs)
          return Effect.flatMap(store.hit(keyId, windowStart), (count) => {
            const resetSeconds = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000))
            if (count > policy.limit) {
              return Effect.fail(
                new RateLimited({
                  message: `Rate limit of ${policy.limit} requests per ${policy.windowSeconds} seconds exceeded; ` +
                    `retry after ${resetSeconds} seconds.`,
                  retryAfterSeconds: resetSeconds
                })
              )
            }
            return Effect.succeed<RateLimitDecision>({
              limit: policy.limit,
              remaining: Math.max(0, policy.limit - count),
              resetSeconds,
              windowSeconds: policy.windowSeconds
            })
          })
        })
    })
  })
)
