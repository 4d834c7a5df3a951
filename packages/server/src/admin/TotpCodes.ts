/**
 * The codes of two-factor sign-in (issue 33): TOTP as RFC 6238 has it and every authenticator app reads it
 * (HMAC-SHA1, 30-second steps, 6 digits; `otpauth` computes them), accepted one step either side of now for
 * clocks that drift, each step at most once (the caller keeps the last step used); and the ten single-use
 * recovery codes, 80 random bits each, of which only SHA-256 hashes are stored (80 bits need no slow hash:
 * they cannot be guessed from a stolen hash).
 */
import { randomBytes } from "node:crypto"
import { Crypto } from "@parley/core/internal"
import { Secret, TOTP } from "otpauth"

export const TOTP_PERIOD_SECONDS = 30
export const TOTP_DIGITS = 6
/** Steps either side of now that a code may come from. */
export const TOTP_WINDOW = 1
export const RECOVERY_CODE_COUNT = 10
/** What authenticator apps show above the codes. */
const ISSUER = "Parley"

const totp = (secretBase32: string, label = "admin") =>
  new TOTP({
    issuer: ISSUER,
    label,
    algorithm: "SHA1",
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secretBase32)
  })

/** A new secret: 160 bits (RFC 4226's recommended length), in base32 as apps take it typed. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32

/** The `otpauth://totp/…` address an app reads from the QR code. */
export const otpauthUri = (secretBase32: string, email: string): string => totp(secretBase32, email).toString()

/** The base32 secret in groups of four, easier to type into an app. */
export const groupedSecret = (secretBase32: string): string => secretBase32.replace(/(.{4})(?=.)/g, "$1 ")

/** The code for a moment (the tests compute codes as an app does). */
export const totpCodeAt = (secretBase32: string, timeMs: number): string => totp(secretBase32).generate({ timestamp: timeMs })

/** Whether the typed text is shaped like an authenticator code (spaces allowed), rather than a recovery code. */
export const looksLikeTotp = (typed: string): boolean => /^\d{6}$/.test(typed.replace(/\s/g, ""))

/**
 * The time step the code belongs to when it is right within the window around `nowMs`, or null. The caller
 * must still refuse a step at or before the last one used (a code seen over a shoulder, or replayed).
 */
export const matchingStep = (secretBase32: string, typed: string, nowMs: number): number | null => {
  const code = typed.replace(/\s/g, "")
  if (!/^\d{6}$/.test(code)) return null
  const delta = totp(secretBase32).validate({ token: code, timestamp: nowMs, window: TOTP_WINDOW })
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD_SECONDS) + delta
}

/** Lower case, no spaces or dashes: how a recovery code is compared, however it was typed. */
const normalRecoveryCode = (typed: string): string => typed.toLowerCase().replace(/[\s-]/g, "")

/** Ten new recovery codes as shown (`abcd-efgh-ijkl-mnop`, base32 of 10 random bytes). */
export const newRecoveryCodes = (): ReadonlyArray<string> =>
  Array.from({ length: RECOVERY_CODE_COUNT }, () =>
    new Secret({ buffer: new Uint8Array(randomBytes(10)).buffer }).base32.toLowerCase().replace(/(.{4})(?=.)/g, "$1-"))

/** What is stored of a recovery code. */
export const recoveryCodeHash = (typed: string): string => Crypto.sha256Hex(`recovery:${normalRecoveryCode(typed)}`)

/** Whether the typed text could be a recovery code at all (16 base32 characters), before any database read. */
export const looksLikeRecoveryCode = (typed: string): boolean => /^[a-z2-7]{16}$/.test(normalRecoveryCode(typed))
