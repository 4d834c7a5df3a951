// The per-key rate limit: 60 requests a minute by default, counted per key in a
// sliding window (no 60 seconds hold more than the limit; Retry-After at most the window), with remaining/reset values, on the TestClock.
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
        // This request stops counting one window from now.
        expect(d.resetSeconds).toBe(60)
      }
      const error = yield* Effect.flip(consume("key_a"))
      expect(error._tag).toBe("RateLimited")
      if (error._tag !== "RateLimited") return
      // The 60 count until the latest of their bucket has left the window: a window later, never more.
      expect(error.retryAfterSeconds).toBe(60)
      expect(error.message).toContain("60")
      // Still refused on further attempts within the window.
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("remaining and reset follow the clock inside the window", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 15_000)
      const first = yield* consume("key_a")
      expect(first).toEqual({ limit: 60, remaining: 59, resetSeconds: 60, windowSeconds: 60 })
      yield* TestClock.adjust(20_500)
      const second = yield* consume("key_a")
      expect(second.remaining).toBe(58)
      // Every request counted so far leaves the window a window from now.
      expect(second.resetSeconds).toBe(60)
      yield* consumeAll("key_a", 58)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a burst at the end of a minute still counts at the start of the next (no 2x across the boundary)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 59_900)
      yield* consumeAll("key_a", 60)
      yield* TestClock.adjust(200) // 100 ms into the next minute
      let accepted = 0
      for (let i = 0; i < 60; i++) {
        const outcome = yield* Effect.either(consume("key_a"))
        if (outcome._tag === "Right") accepted++
      }
      expect(accepted).toBe(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a client that sends whenever it may never gets more than the limit into any 60 seconds", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 30_000)
      const acceptedAt: Array<number> = []
      for (let step = 0; step < 600; step++) { // every 500 ms for 5 minutes
        const now = MONDAY_10_UTC + 30_000 + step * 500
        yield* TestClock.setTime(now)
        if ((yield* Effect.either(consume("key_a")))._tag === "Right") acceptedAt.push(now)
      }
      let most = 0
      for (const start of acceptedAt) {
        most = Math.max(most, acceptedAt.filter((t) => t >= start && t < start + 60_000).length)
      }
      expect(most, `accepted ${acceptedAt.length}`).toBeLessThanOrEqual(60)
      // Sending steadily at the full rate still gets 20/21 of it.
      expect(acceptedAt.length).toBeGreaterThan(4 * 55)
    }).pipe(Effect.provide(RateLimiter.layer.pipe(
      Layer.provide(RateLimitStore.layerMemory),
      Layer.provide(RateLimiter.RateLimitConfig.layer(RateLimiter.RateLimitConfig.default))
    ))), 60_000)

  it.effect("Retry-After is never more than the window, and waiting it is always enough (issue 35, 9)", () =>
    Effect.gen(function*() {
      // The 60 requests of a minute sent within 2 s, the 61st half a second later (all in one 3-second
      // bucket): it was told 61 s, the end of their bucket plus a window.
      for (const offset of [0, 300, 900]) {
        const key = `key_${offset}`
        const start = MONDAY_10_UTC + 30_000 + offset
        for (let i = 0; i < 60; i++) {
          yield* TestClock.setTime(start + Math.floor((i * 2_000) / 60))
          yield* consume(key)
        }
        yield* TestClock.setTime(start + 2_050)
        const error = yield* Effect.flip(consume(key))
        if (error._tag !== "RateLimited") return expect.fail(`expected RateLimited, got ${error._tag}`)
        const retryAfter = error.retryAfterSeconds ?? 0
        expect(retryAfter, `offset ${offset}`).toBeLessThanOrEqual(60)
        yield* TestClock.adjust(retryAfter * 1000)
        yield* consume(key)
      }
      // A steady sender, refused now and then: every Retry-After within the window, and enough.
      const key = "key_steady"
      let now = MONDAY_10_UTC + 41_234
      for (let step = 0; step < 300; step++) {
        now += 377
        yield* TestClock.setTime(now)
        const outcome = yield* Effect.either(consume(key))
        if (outcome._tag === "Right") continue
        if (outcome.left._tag !== "RateLimited") return expect.fail(outcome.left._tag)
        const retryAfter = outcome.left.retryAfterSeconds ?? 0
        expect(retryAfter).toBeLessThanOrEqual(60)
        expect(retryAfter).toBeGreaterThanOrEqual(1)
        now += retryAfter * 1000
        yield* TestClock.setTime(now)
        yield* consume(key)
      }
    }).pipe(Effect.provide(CoreTestLayer)), 60_000)

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

  it.effect("refused requests are not counted: after Retry-After the next request passes", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 42_300)
      yield* consumeAll("key_a", 60)
      for (let i = 0; i < 100; i++) expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
      const error = yield* Effect.flip(consume("key_a"))
      if (error._tag !== "RateLimited") return expect.fail(`expected RateLimited, got ${error._tag}`)
      const retryAfter = error.retryAfterSeconds ?? 0
      expect(retryAfter).toBe(60)
      // A second less is not enough; exactly Retry-After seconds is.
      yield* TestClock.adjust(retryAfter * 1000 - 1000)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
      yield* TestClock.adjust(1000)
      yield* consume("key_a")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("two idle minutes later the whole limit is available again", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC + 15_000)
      yield* consumeAll("key_a", 60)
      yield* TestClock.adjust(105_000)
      const next = yield* consume("key_a")
      expect(next).toEqual({ limit: 60, remaining: 59, resetSeconds: 60, windowSeconds: 60 })
      yield* consumeAll("key_a", 59)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
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
        { limit: 3, remaining: 2, resetSeconds: 10, windowSeconds: 10 },
        { limit: 3, remaining: 1, resetSeconds: 10, windowSeconds: 10 },
        { limit: 3, remaining: 0, resetSeconds: 10, windowSeconds: 10 }
      ])
      const error = yield* Effect.flip(consume("key_a"))
      if (error._tag !== "RateLimited") return expect.fail(`expected RateLimited, got ${error._tag}`)
      // The window is 10 s: the 3 count for 10 s after the latest of them.
      expect(error.retryAfterSeconds).toBe(10)
      expect(error.message).toContain("3 requests per 10 seconds")
      expect((yield* consume("key_b")).remaining).toBe(2)
      yield* TestClock.adjust(10_000 - 1)
      expect((yield* Effect.flip(consume("key_a")))._tag).toBe("RateLimited")
      yield* TestClock.adjust(1)
      expect((yield* consume("key_a")).remaining).toBe(2)
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
