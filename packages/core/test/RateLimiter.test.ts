// The per-key rate limit: 60 requests a minute by default, counted per key,
// with remaining/reset values and a window that rolls over on the TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { RateLimiter, RateLimitStore } from "../src/internal.js"
import { callerFor, CoreTestLayer, MONDAY_10_UTC, seedDemo } from "./harness.js"

const consume = (keyId: string) => Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.consume(keyId))

/** Consumes `n` units for `keyId`, all of which must be allowed; answers the decisions. */
const consumeAll = (keyId: string, n: number) =>
  Effect.forEach(Array.from({ length: n }), () => consume(keyId))

describe("rate limit (default policy)", () => {
  it.effect("the default policy is 60 requests per 60 seconds", () =>
    Effect.gen(function*() {
      const policy = yield* RateLimiter.RateLimitConfig
      expect(policy).toEqual({ limit: 60, windowSeconds: 60 })
      expect(RateLimiter.RateLimitConfig.default).toEqual({ limit: 60, windowSeconds: 60 })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("60 requests in a minute pass; the 61st is RateLimited with retryAfterSeconds", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const decisions = yield* consumeAll("key_a", 60)
      expect(decisions.map((d) => d.remaining)).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i))
      for (const d of decisions) {
        expect(d.limit).toBe(60)
        expect(d.windowSeconds).toBe(60)
        expect(d.resetSeconds).toBe(60)
      }
      const error = yield* Effect.flip(consume("key_a"))
      expect(error._tag).toBe("RateLimited")
      if (error._tag !== "RateLimited") return
      expect(error.retryAfterSeconds).toBe(60)
      expect(error.message).toContain("60")
      // Still refused on further attempts within the window.
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("remaining and reset follow the clock inside the window", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 15_000)
      const first = yield* consume("key_a")
      expect(first).toEqual({ limit: 60, remaining: 59, resetSeconds: 45, windowSeconds: 60 })
      yield* TestClock.adjust(20_500)
      const second = yield* consume("key_a")
      expect(second.remaining).toBe(58)
      // 24.5 s left, rounded up to whole seconds.
      expect(second.resetSeconds).toBe(25)
      yield* consumeAll("key_a", 58)
      const error = yield* Effect.flip(consume("key_a"))
      expect(error._tag === "RateLimited" ? error.retryAfterSeconds : undefined).toBe(25)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("keys are counted separately", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      yield* consumeAll("key_a", 60)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
      const other = yield* consume("key_b")
      expect(other.remaining).toBe(59)
      yield* consumeAll("key_b", 59)
      expect((yield* Effect.flip(consume("key_b")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the window rolls over: refused until the window ends, allowed again from its end", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 15_000)
      yield* consumeAll("key_a", 60)
      const refused = yield* Effect.flip(consume("key_a"))
      expect(refused._tag === "RateLimited" ? refused.retryAfterSeconds : undefined).toBe(45)
      yield* TestClock.adjust(45_000 - 1)
      const lastMillisecond = yield* Effect.flip(consume("key_a"))
      expect(lastMillisecond._tag === "RateLimited" ? lastMillisecond.retryAfterSeconds : undefined).toBe(1)
      yield* TestClock.adjust(1)
      const next = yield* consume("key_a")
      expect(next).toEqual({ limit: 60, remaining: 59, resetSeconds: 60, windowSeconds: 60 })
      yield* consumeAll("key_a", 59)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("retryAfterSeconds is the time until the next request is allowed", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 42_300)
      yield* consumeAll("key_a", 60)
      const error = yield* Effect.flip(consume("key_a"))
      if (error._tag !== "RateLimited") return expect.fail(`expected RateLimited, got ${error._tag}`)
      const retryAfter = error.retryAfterSeconds ?? 0
      expect(retryAfter).toBe(18)
      // Waiting exactly Retry-After seconds is enough.
      yield* TestClock.adjust(retryAfter * 1000)
      expect((yield* consume("key_a")).remaining).toBe(59)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("authentication applies the limit per API key: the 61st call with a key is RateLimited", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* Effect.forEach(Array.from({ length: 60 }), () => callerFor(demo.keys.live))
      const error = yield* Effect.flip(callerFor(demo.keys.live))
      expect(error._tag).toBe("RateLimited")
      // The test key of the same organisation has its own count.
      expect((yield* callerFor(demo.keys.test)).mode).toBe("test")
      yield* TestClock.adjust(60_000)
      expect((yield* callerFor(demo.keys.live)).mode).toBe("live")
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("rate limit (custom RateLimitConfig)", () => {
  const CustomLayer = RateLimiter.layer.pipe(
    Layer.provide(RateLimitStore.layerMemory),
    Layer.provide(RateLimiter.RateLimitConfig.layer({ limit: 3, windowSeconds: 10 }))
  )

  it.effect("3 per 10 seconds: the 4th is refused, and the window is 10 seconds long", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 4_000)
      const decisions = yield* consumeAll("key_a", 3)
      expect(decisions).toEqual([
        { limit: 3, remaining: 2, resetSeconds: 6, windowSeconds: 10 },
        { limit: 3, remaining: 1, resetSeconds: 6, windowSeconds: 10 },
        { limit: 3, remaining: 0, resetSeconds: 6, windowSeconds: 10 }
      ])
      const error = yield* Effect.flip(consume("key_a"))
      if (error._tag !== "RateLimited") return expect.fail(`expected RateLimited, got ${error._tag}`)
      expect(error.retryAfterSeconds).toBe(6)
      expect(error.message).toContain("3 requests per 10 seconds")
      expect((yield* consume("key_b")).remaining).toBe(2)
      yield* TestClock.adjust(6_000 - 1)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
      yield* TestClock.adjust(1)
      expect(yield* consume("key_a")).toEqual({ limit: 3, remaining: 2, resetSeconds: 10, windowSeconds: 10 })
    }).pipe(Effect.provide(CustomLayer)))

  it.effect("a larger limit than the default allows more than 60 a minute", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const decisions = yield* consumeAll("key_a", 100)
      expect(decisions.at(-1)?.remaining).toBe(0)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(RateLimiter.layer.pipe(
      Layer.provide(RateLimitStore.layerMemory),
      Layer.provide(RateLimiter.RateLimitConfig.layer({ limit: 100, windowSeconds: 60 }))
    ))))
})
