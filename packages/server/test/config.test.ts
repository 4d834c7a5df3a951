/**
 * Configuration read from the environment: values people actually type
 * (LOG_LEVEL=Error, ERROR) are accepted, and a wrong value is refused with
 * the variable's name.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, LogLevel } from "effect"
import { settingsConfig } from "../src/config/ServerConfig.js"
import { zohoConfig } from "../src/crm/zoho/ZohoConfig.js"

const read = (env: Record<string, string>) =>
  Effect.either(Effect.withConfigProvider(settingsConfig, ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe("LOG_LEVEL", () => {
  it.effect("accepts every level in any case", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, LogLevel.LogLevel]> = [
        ["debug", LogLevel.Debug],
        ["Info", LogLevel.Info],
        ["WARN", LogLevel.Warning],
        ["warning", LogLevel.Warning],
        ["Error", LogLevel.Error],
        ["ERROR", LogLevel.Error],
        ["error", LogLevel.Error],
        ["None", LogLevel.None],
        [" error ", LogLevel.Error]
      ]
      for (const [value, level] of cases) {
        const settings = yield* read({ LOG_LEVEL: value })
        expect(Either.map(settings, (s) => s.logLevel), value).toEqual(Either.right(level))
      }
    }))

  it.effect("defaults to info", () =>
    Effect.gen(function*() {
      const settings = yield* read({})
      expect(Either.map(settings, (s) => s.logLevel)).toEqual(Either.right(LogLevel.Info))
    }))

  it.effect("refuses an unknown level, naming the variable and the accepted values", () =>
    Effect.gen(function*() {
      const settings = yield* read({ LOG_LEVEL: "loud" })
      expect(Either.isLeft(settings)).toBe(true)
      const message = Either.isLeft(settings) ? String(settings.left) : ""
      expect(message).toContain("LOG_LEVEL")
      expect(message).toContain("debug, info, warn, error, none")
    }))
})

describe("PARLEY_ZOHO_TEMPLATE_CACHE_MS", () => {
  const read = (env: Record<string, string>) =>
    Effect.either(Effect.withConfigProvider(zohoConfig, ConfigProvider.fromMap(new Map(Object.entries(env)))))
  it.effect("serves a Zoho template list for 60 seconds by default, as long as it is set to, and refuses zero", () =>
    Effect.gen(function*() {
      expect(Either.map(yield* read({}), (s) => s.zohoTemplateCacheMs)).toEqual(Either.right(60_000))
      expect(Either.map(yield* read({ PARLEY_ZOHO_TEMPLATE_CACHE_MS: "3000" }), (s) => s.zohoTemplateCacheMs)).toEqual(Either.right(3_000))
      const zero = yield* read({ PARLEY_ZOHO_TEMPLATE_CACHE_MS: "0" })
      expect(Either.isLeft(zero) ? String(zero.left) : "accepted").toContain("PARLEY_ZOHO_TEMPLATE_CACHE_MS")
    }))
})

describe("PARLEY_DISPATCH_LEASE_MS", () => {
  it.effect("holds a claimed action 30 seconds by default, as long as it is set to, and refuses less than a second", () =>
    Effect.gen(function*() {
      expect(Either.map(yield* read({}), (s) => s.dispatchLeaseMs)).toEqual(Either.right(30_000))
      expect(Either.map(yield* read({ PARLEY_DISPATCH_LEASE_MS: "5000" }), (s) => s.dispatchLeaseMs)).toEqual(Either.right(5_000))
      const short = yield* read({ PARLEY_DISPATCH_LEASE_MS: "999" })
      expect(Either.isLeft(short) ? String(short.left) : "accepted").toContain("PARLEY_DISPATCH_LEASE_MS")
    }))
})

describe("PARLEY_IDEMPOTENCY_LOCK_MS", () => {
  it.effect("reserves a key a minute by default, as long as it is set to, and refuses less than a second", () =>
    Effect.gen(function*() {
      expect(Either.map(yield* read({}), (s) => s.idempotencyLockMs)).toEqual(Either.right(60_000))
      expect(Either.map(yield* read({ PARLEY_IDEMPOTENCY_LOCK_MS: "5000" }), (s) => s.idempotencyLockMs)).toEqual(Either.right(5_000))
      const short = yield* read({ PARLEY_IDEMPOTENCY_LOCK_MS: "999" })
      expect(Either.isLeft(short) ? String(short.left) : "accepted").toContain("PARLEY_IDEMPOTENCY_LOCK_MS")
    }))
})
