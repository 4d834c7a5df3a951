// API keys: token format and checksum, hash-only storage, and authentication
// (unknown, malformed, empty, revoked, expired) — expiry on the TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { createHash } from "node:crypto"
import { ALL_SCOPES, ApiKeys, ApiKeyStore, Crypto } from "../src/internal.js"
import { callerFor, CoreTestLayer, MONDAY_10_UTC, seedDemo } from "./harness.js"

const TEST_TOKEN = /^parley_test_[0-9A-Za-z]{49}$/
const LIVE_TOKEN = /^parley_live_[0-9A-Za-z]{49}$/
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** The random part of a token: after the 12-character prefix, before the 6-character checksum. */
const randomPart = (token: string): string => token.slice(12, token.length - 6)

/** The same token with the character at `index` replaced by a different base62 character. */
const withTypo = (token: string, index: number): string => {
  const current = token[index] ?? "0"
  const replacement = BASE62[(BASE62.indexOf(current) + 1) % BASE62.length] ?? "0"
  return token.slice(0, index) + replacement + token.slice(index + 1)
}

const sha256 = (input: string): string => createHash("sha256").update(input).digest("hex")

const newKey = (overrides: Partial<ApiKeys.NewKey> = {}) =>
  Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
    keys.create({
      orgId: "org_demo",
      name: "a key",
      mode: "live",
      scopes: ALL_SCOPES,
      numberSids: [],
      botIds: [],
      expiresAt: null,
      ...overrides
    }))

describe("API key format", () => {
  it("test and live tokens carry their prefix and a base62 body with a checksum", () => {
    const test = ApiKeys.mintToken("test")
    const live = ApiKeys.mintToken("live")
    expect(test).toMatch(TEST_TOKEN)
    expect(live).toMatch(LIVE_TOKEN)
    expect(ApiKeys.parseToken(test)).toEqual(Option.some("test"))
    expect(ApiKeys.parseToken(live)).toEqual(Option.some("live"))
  })

  it("carries at least 32 bytes of randomness", () => {
    const samples = Array.from({ length: 200 }, () => ApiKeys.mintToken("live"))
    expect(new Set(samples).size).toBe(samples.length)
    // 43 base62 digits hold log2(62^43) ≈ 256 bits. Every digit, including the
    // most significant one, varies across samples only if the random number
    // exceeds 62^42 ≈ 2^250: a source of fewer bytes would leave leading digits fixed.
    const bodies = samples.map(randomPart)
    for (const body of bodies) expect(body).toHaveLength(43)
    for (let position = 0; position < 43; position++) {
      const seen = new Set(bodies.map((b) => b[position]))
      expect(seen.size, `random digit ${position} never varies`).toBeGreaterThan(1)
    }
    // The most significant digit spans most of the alphabet (2^256 / 62^42 ≈ 60.5).
    expect(new Set(bodies.map((b) => b[0])).size).toBeGreaterThan(20)
  })

  it("the checksum catches any one-character typo in the random part", () => {
    const token = ApiKeys.mintToken("live")
    for (let index = 12; index < 12 + 43; index++) {
      const typo = withTypo(token, index)
      expect(typo).not.toBe(token)
      expect(typo).toMatch(LIVE_TOKEN)
      expect(ApiKeys.parseToken(typo), `typo at ${index} passed`).toEqual(Option.none())
    }
  })

  it("the checksum catches a typo in the checksum itself, a truncation and a swapped mode", () => {
    const token = ApiKeys.mintToken("test")
    for (let index = token.length - 6; index < token.length; index++) {
      expect(ApiKeys.parseToken(withTypo(token, index))).toEqual(Option.none())
    }
    expect(ApiKeys.parseToken(token.slice(0, -1))).toEqual(Option.none())
    expect(ApiKeys.parseToken(token.slice(0, -6))).toEqual(Option.none())
    expect(ApiKeys.parseToken(token.replace("parley_test_", "parley_live_"))).toEqual(Option.none())
  })

  it("keeps accepting keys minted before: the checksum is the fixed-width base62 of the CRC32's four bytes", () => {
    // A live key minted by an earlier release (its checksum computed through BigInt base62).
    expect(ApiKeys.parseToken("parley_live_" + "A".repeat(43) + Crypto.base62(crcBytes("parley_live_" + "A".repeat(43)), 6)))
      .toEqual(Option.some("live"))
    for (let i = 0; i < 2_000; i++) {
      const head = `parley_test_${Crypto.randomBase62(32, 43)}`
      expect(Crypto.checksum62(head)).toBe(Crypto.base62(crcBytes(head), 6))
    }
    for (const crcOf of ["", "a", "parley_live_", "\u00e9"]) {
      expect(Crypto.checksum62(crcOf)).toBe(Crypto.base62(crcBytes(crcOf), 6))
    }
  })
})

/** The CRC32 of a string as four big-endian bytes. */
const crcBytes = (input: string): Uint8Array => {
  const crc = Crypto.crc32(input)
  return new Uint8Array([(crc >>> 24) & 0xff, (crc >>> 16) & 0xff, (crc >>> 8) & 0xff, crc & 0xff])
}

describe("API key storage", () => {
  it.effect("stores only the SHA-256 of the token, never the token or its secret part", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const { key, token } = yield* newKey({ mode: "test", name: "stored" })
      const store = yield* ApiKeyStore.ApiKeyStore
      const row = Option.getOrThrow(yield* store.get(key.id))
      expect(row.hash).toBe(sha256(token))
      expect(row.hash).toMatch(/^[0-9a-f]{64}$/)
      const serialised = JSON.stringify(row)
      expect(serialised).not.toContain(token)
      expect(serialised).not.toContain(randomPart(token))
      expect(serialised).not.toContain(randomPart(token).slice(8))
      // The whole store: no row holds the token anywhere.
      const all = yield* store.list("org_demo")
      expect(all.some((r) => r.id === key.id)).toBe(true)
      expect(JSON.stringify(all)).not.toContain(randomPart(token))
      // Found by hash, which is how authentication looks it up.
      expect(Option.map(yield* store.findByHash(sha256(token)), (r) => r.id)).toEqual(Option.some(key.id))
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the mode, scopes and restrictions are stored with the key", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const { key, token } = yield* newKey({
        mode: "test",
        scopes: ["messages:read", "messages:read", "calls:write"],
        numberSids: ["PN00000000000000000000000000000001"],
        botIds: ["bot_sales"]
      })
      expect(token).toMatch(TEST_TOKEN)
      expect(key.mode).toBe("test")
      expect([...key.scopes].sort()).toEqual(["calls:write", "messages:read"])
      const caller = yield* callerFor(token)
      expect(caller.keyId).toBe(key.id)
      expect(caller.mode).toBe("test")
      expect([...caller.scopes].sort()).toEqual(["calls:write", "messages:read"])
      expect(caller.numberSids).toEqual(["PN00000000000000000000000000000001"])
      expect(caller.botIds).toEqual(["bot_sales"])
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("API key authentication", () => {
  it.effect("a freshly minted test or live key authenticates with its mode", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      expect((yield* callerFor(demo.keys.test)).mode).toBe("test")
      expect((yield* callerFor(demo.keys.live)).mode).toBe("live")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an empty token is Unauthorized", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const error = yield* Effect.flip(callerFor(""))
      expect(error._tag).toBe("Unauthorized")
      expect(error.message).toContain("Authorization: Bearer")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("malformed tokens are Unauthorized", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const malformed = [
        "not-a-key",
        `Bearer ${demo.keys.live}`,
        demo.keys.live.slice(0, -1),
        demo.keys.live + "x",
        ` ${demo.keys.live}`,
        withTypo(demo.keys.live, 20),
        demo.keys.live.replace("parley_live_", "parley_prod_")
      ]
      for (const token of malformed) {
        const error = yield* Effect.flip(callerFor(token))
        expect(error._tag, token).toBe("Unauthorized")
        expect(error.message).toContain("malformed")
      }
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a well-formed token that was never issued is Unauthorized", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const unknown = ApiKeys.mintToken("live")
      expect(ApiKeys.parseToken(unknown)).toEqual(Option.some("live"))
      const error = yield* Effect.flip(callerFor(unknown))
      expect(error._tag).toBe("Unauthorized")
      expect(error.message).toContain("not valid")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a revoked key is refused on the very next call", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const { key, token } = yield* newKey()
      const other = yield* newKey()
      expect((yield* callerFor(token)).keyId).toBe(key.id)
      const store = yield* ApiKeyStore.ApiKeyStore
      expect(yield* store.revoke(key.id, new Date(MONDAY_10_UTC).toISOString())).toBe(true)
      const error = yield* Effect.flip(callerFor(token))
      expect(error._tag).toBe("Unauthorized")
      expect(error.message).toContain("revoked")
      // Directly through ApiKeys as well, and only that key is affected.
      const keys = yield* ApiKeys.ApiKeys
      expect((yield* Effect.flip(keys.authenticate(token)))._tag).toBe("Unauthorized")
      expect((yield* callerFor(other.token)).keyId).toBe(other.key.id)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a key is valid 1 ms before expiresAt and refused from expiresAt on", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const expiresAt = MONDAY_10_UTC + 60 * 60 * 1000
      const { key, token } = yield* newKey({ expiresAt: new Date(expiresAt).toISOString() })
      const keys = yield* ApiKeys.ApiKeys
      expect((yield* keys.authenticate(token)).id).toBe(key.id)
      yield* TestClock.setTime(expiresAt - 1)
      expect((yield* keys.authenticate(token)).id).toBe(key.id)
      expect((yield* callerFor(token)).keyId).toBe(key.id)
      yield* TestClock.adjust(1)
      const atExpiry = yield* Effect.flip(keys.authenticate(token))
      expect(atExpiry._tag).toBe("Unauthorized")
      expect(atExpiry.message).toContain("expired")
      expect((yield* Effect.flip(callerFor(token)))._tag).toBe("Unauthorized")
      yield* TestClock.adjust(24 * 60 * 60 * 1000)
      expect((yield* Effect.flip(keys.authenticate(token))).message).toContain("expired")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a key without expiresAt does not expire", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const { key, token } = yield* newKey({ expiresAt: null })
      yield* TestClock.adjust(10 * 365 * 24 * 60 * 60 * 1000)
      const keys = yield* ApiKeys.ApiKeys
      expect((yield* keys.authenticate(token)).id).toBe(key.id)
    }).pipe(Effect.provide(CoreTestLayer)))
})
