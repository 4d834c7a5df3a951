// Signed events per Standard Webhooks v1, checked with the independent
// `standardwebhooks` package rather than our own code: signatures verify, a
// rotation's two signatures each verify with their own secret, tampering
// fails; and the retry schedule (≈5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h with
// ±10% jitter, Retry-After as a lower bound, scale) and Retry-After parsing.
import { describe, expect, it } from "@effect/vitest"
import { Webhook } from "standardwebhooks"
import {
  MAX_ATTEMPTS,
  newSecret,
  nextAttemptAt,
  parseRetryAfter,
  RETRY_DELAYS_MS,
  SECRET_PREFIX,
  sign,
  signatureHeader
} from "../src/domain/Webhooks.js"

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
/** The documented schedule: the wait after the n-th failed attempt. */
const SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]

const BODY = JSON.stringify({
  type: "message.delivered",
  timestamp: "2026-03-02T10:00:05.000Z",
  data: { id: "1001", body: "Hi Ada – café ✓", status: "Delivered", modified: "2026-03-02T10:00:05.000Z" }
})
const MSG_ID = "evt_0123456789abcdefghij"

/**
 * standardwebhooks rejects timestamps more than five minutes from the real
 * clock, so events are signed "now" by the wall clock (not asserted on).
 */
const nowSeconds = (): number => Math.floor(Date.now() / 1000)

const headers = (id: string, timestamp: number, signature: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": signature
})

/** True when the standardwebhooks package accepts the delivery. */
const verifies = (secret: string, body: string, h: ReturnType<typeof headers>): boolean => {
  try {
    new Webhook(secret).verify(body, h)
    return true
  } catch {
    return false
  }
}

describe("secrets", () => {
  it("are whsec_ + base64 of at least 24 random bytes, fresh each time", () => {
    const secrets = Array.from({ length: 20 }, () => newSecret())
    for (const secret of secrets) {
      expect(secret.startsWith(SECRET_PREFIX)).toBe(true)
      expect(SECRET_PREFIX).toBe("whsec_")
      const base64 = secret.slice(SECRET_PREFIX.length)
      expect(base64).toMatch(/^[A-Za-z0-9+/]+={0,2}$/)
      expect(Buffer.from(base64, "base64").length).toBeGreaterThanOrEqual(24)
    }
    expect(new Set(secrets).size).toBe(secrets.length)
  })
})

describe("signatures (verified with the standardwebhooks package)", () => {
  it("a signed event verifies, and verify returns the payload", () => {
    const secret = newSecret()
    const ts = nowSeconds()
    const signature = sign(secret, MSG_ID, ts, BODY)
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/)
    const payload = new Webhook(secret).verify(BODY, headers(MSG_ID, ts, signature))
    expect(payload).toEqual(JSON.parse(BODY))
  })

  it("matches the package's own signature byte for byte", () => {
    const secret = newSecret()
    const ts = nowSeconds()
    expect(sign(secret, MSG_ID, ts, BODY)).toBe(new Webhook(secret).sign(MSG_ID, new Date(ts * 1000), BODY))
  })

  it("a header for one secret verifies with that secret and not with another", () => {
    const secret = newSecret()
    const ts = nowSeconds()
    const h = headers(MSG_ID, ts, signatureHeader([secret], MSG_ID, ts, BODY))
    expect(verifies(secret, BODY, h)).toBe(true)
    expect(verifies(newSecret(), BODY, h)).toBe(false)
  })

  it("rotation: two space-separated signatures, each verifying with its own secret", () => {
    const oldSecret = newSecret()
    const newer = newSecret()
    const ts = nowSeconds()
    const header = signatureHeader([oldSecret, newer], MSG_ID, ts, BODY)
    const parts = header.split(" ")
    expect(parts).toHaveLength(2)
    for (const part of parts) expect(part).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/)
    expect(parts[0]).not.toBe(parts[1])
    // Each part on its own verifies with its own secret only.
    expect(verifies(oldSecret, BODY, headers(MSG_ID, ts, parts[0]!))).toBe(true)
    expect(verifies(newer, BODY, headers(MSG_ID, ts, parts[1]!))).toBe(true)
    expect(verifies(newer, BODY, headers(MSG_ID, ts, parts[0]!))).toBe(false)
    expect(verifies(oldSecret, BODY, headers(MSG_ID, ts, parts[1]!))).toBe(false)
    // The whole header verifies with either secret, and with no third one.
    expect(verifies(oldSecret, BODY, headers(MSG_ID, ts, header))).toBe(true)
    expect(verifies(newer, BODY, headers(MSG_ID, ts, header))).toBe(true)
    expect(verifies(newSecret(), BODY, headers(MSG_ID, ts, header))).toBe(false)
  })

  it("a tampered body, id or timestamp fails verification", () => {
    const secret = newSecret()
    const ts = nowSeconds()
    const signature = signatureHeader([secret], MSG_ID, ts, BODY)
    expect(verifies(secret, BODY, headers(MSG_ID, ts, signature))).toBe(true)
    expect(verifies(secret, BODY.replace("Delivered", "Failed"), headers(MSG_ID, ts, signature))).toBe(false)
    expect(verifies(secret, `${BODY} `, headers(MSG_ID, ts, signature))).toBe(false)
    expect(verifies(secret, BODY, headers("evt_other", ts, signature))).toBe(false)
    expect(verifies(secret, BODY, headers(MSG_ID, ts - 1, signature))).toBe(false)
  })

  it("the key is the base64 after whsec_: the same key with or without the prefix signs alike", () => {
    const secret = newSecret()
    const ts = nowSeconds()
    expect(sign(secret.slice(SECRET_PREFIX.length), MSG_ID, ts, BODY)).toBe(sign(secret, MSG_ID, ts, BODY))
    // A different key does not: the prefix is not what is hashed.
    expect(sign(newSecret(), MSG_ID, ts, BODY)).not.toBe(sign(secret, MSG_ID, ts, BODY))
  })
})

describe("retry schedule", () => {
  const NOW = Date.parse("2026-03-02T10:00:00Z")
  const RANDOMS = [0, 0.000001, 0.25, 0.5, 0.75, 0.999999]

  it("is the documented schedule: 8 attempts in all, about 27.6 hours", () => {
    expect(RETRY_DELAYS_MS).toEqual(SCHEDULE)
    expect(MAX_ATTEMPTS).toBe(8)
    const total = SCHEDULE.reduce((a, b) => a + b, 0) / HOUR
    expect(total).toBeGreaterThan(27.5)
    expect(total).toBeLessThan(27.7)
  })

  it("after failures 1..7 the next attempt is within ±10% of 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h", () => {
    SCHEDULE.forEach((base, i) => {
      for (const r of RANDOMS) {
        const next = nextAttemptAt(i + 1, NOW, { random: () => r })
        expect(next).not.toBeNull()
        const delay = next! - NOW
        expect(delay).toBeGreaterThanOrEqual(base * 0.9)
        expect(delay).toBeLessThanOrEqual(base * 1.1)
      }
      // Without an injected random source, the real one stays within bounds too.
      for (let k = 0; k < 200; k++) {
        const delay = nextAttemptAt(i + 1, NOW, {})! - NOW
        expect(delay).toBeGreaterThanOrEqual(base * 0.9)
        expect(delay).toBeLessThanOrEqual(base * 1.1)
      }
    })
  })

  it("the middle of the jitter is the schedule itself", () => {
    SCHEDULE.forEach((base, i) => {
      expect(nextAttemptAt(i + 1, NOW, { random: () => 0.5 })).toBe(NOW + base)
    })
  })

  it("has jitter: the delay spreads across the ±10% band", () => {
    SCHEDULE.forEach((base, i) => {
      const low = nextAttemptAt(i + 1, NOW, { random: () => 0 })! - NOW
      const high = nextAttemptAt(i + 1, NOW, { random: () => 0.999999 })! - NOW
      expect(low).toBeLessThan(base * 0.91)
      expect(high).toBeGreaterThan(base * 1.09)
    })
  })

  it("is spent after the 8th attempt: null for 8 or more failures", () => {
    for (const failed of [8, 9, 20]) {
      expect(nextAttemptAt(failed, NOW, { random: () => 0.5 })).toBeNull()
      expect(nextAttemptAt(failed, NOW, { random: () => 0.5, retryAfterMs: 60_000 })).toBeNull()
    }
  })

  it("Retry-After is a lower bound: a longer one wins, a shorter one changes nothing", () => {
    // 1st failure: about 5 s. A Retry-After of 120 s pushes the attempt out to 120 s.
    expect(nextAttemptAt(1, NOW, { random: () => 0.999999, retryAfterMs: 120 * SECOND })).toBe(NOW + 120 * SECOND)
    // 4th failure: about 2 h. A Retry-After of 60 s is shorter, so the schedule stands.
    const scheduled = nextAttemptAt(4, NOW, { random: () => 0.3 })
    expect(nextAttemptAt(4, NOW, { random: () => 0.3, retryAfterMs: 60 * SECOND })).toBe(scheduled)
    // Never sooner than Retry-After, whatever the jitter.
    for (const r of RANDOMS) {
      SCHEDULE.forEach((base, i) => {
        const retryAfterMs = base // exactly the base: jitter below it must not win
        expect(nextAttemptAt(i + 1, NOW, { random: () => r, retryAfterMs })! - NOW).toBeGreaterThanOrEqual(base)
      })
    }
  })

  it("scale shortens the schedule proportionally, jitter included", () => {
    const scale = 0.001
    SCHEDULE.forEach((base, i) => {
      expect(nextAttemptAt(i + 1, NOW, { random: () => 0.5, scale })).toBe(NOW + Math.round(base * scale))
      for (const r of RANDOMS) {
        const delay = nextAttemptAt(i + 1, NOW, { random: () => r, scale })! - NOW
        expect(delay).toBeGreaterThanOrEqual(Math.floor(base * scale * 0.9))
        expect(delay).toBeLessThanOrEqual(Math.ceil(base * scale * 1.1))
      }
    })
    expect(nextAttemptAt(8, NOW, { random: () => 0.5, scale })).toBeNull()
  })

  it("the attempt times are relative to now", () => {
    const later = NOW + 7 * HOUR
    expect(nextAttemptAt(3, later, { random: () => 0.5 })).toBe(later + 30 * MINUTE)
  })
})

describe("parseRetryAfter", () => {
  const NOW = Date.parse("2026-03-02T10:00:00Z")

  it("reads delay-seconds", () => {
    expect(parseRetryAfter("120", NOW)).toBe(120_000)
    expect(parseRetryAfter("0", NOW)).toBe(0)
    expect(parseRetryAfter(" 30 ", NOW)).toBe(30_000)
    expect(parseRetryAfter("86400", NOW)).toBe(86_400_000)
  })

  it("reads an HTTP date as the time from now", () => {
    expect(parseRetryAfter("Mon, 02 Mar 2026 10:01:30 GMT", NOW)).toBe(90_000)
    expect(parseRetryAfter(new Date(NOW + 2 * HOUR).toUTCString(), NOW)).toBe(2 * HOUR)
  })

  it("a date in the past means now (0), never a negative delay", () => {
    expect(parseRetryAfter("Mon, 02 Mar 2026 09:00:00 GMT", NOW)).toBe(0)
    expect(parseRetryAfter("-5", NOW)).toBe(0)
  })

  it("absent, empty or unreadable: undefined", () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined()
    expect(parseRetryAfter("", NOW)).toBeUndefined()
    expect(parseRetryAfter("   ", NOW)).toBeUndefined()
    expect(parseRetryAfter("soon", NOW)).toBeUndefined()
    expect(parseRetryAfter("Tomorrow at noon", NOW)).toBeUndefined()
  })

  it("feeds nextAttemptAt as a lower bound", () => {
    const retryAfterMs = parseRetryAfter("Mon, 02 Mar 2026 11:00:00 GMT", NOW)
    expect(nextAttemptAt(1, NOW, { random: () => 0.5, retryAfterMs })).toBe(NOW + HOUR)
    expect(nextAttemptAt(1, NOW, { random: () => 0.5, retryAfterMs: parseRetryAfter(null, NOW) })).toBe(NOW + 5 * SECOND)
  })
})
