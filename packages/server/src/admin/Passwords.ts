/**
 * Administrators' passwords, hashed with scrypt (memory-hard, in `node:crypto`, so no native package to
 * build). Stored as `scrypt$N$r$p$salt$hash` (base64), so the cost can be raised later without breaking the
 * hashes already stored: each one carries the parameters it was made with.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Data, Effect } from "effect"

/** The shortest password accepted (the rule; length beats composition rules). */
export const MIN_PASSWORD_LENGTH = 12
/** Longer inputs are refused rather than hashed: scrypt's cost grows with them. */
export const MAX_PASSWORD_LENGTH = 1024

/**
 * N = 2^15, r = 8, p = 3: one of the equivalents of OWASP's scrypt minimum (N = 2^17, r = 8, p = 1) that
 * holds 32 MiB per hash instead of 128, so that a burst of sign-ins cannot take the server's memory.
 * Its cost is in docs/benchmarks.md.
 */
const COST = { N: 2 ** 15, r: 8, p: 3 } as const
const KEY_BYTES = 32
const SALT_BYTES = 16
const maxmem = (N: number, r: number) => 128 * N * r * 2

/**
 * Password hashes asked for over the network run HASHING_AT_ONCE at a time, with at most HASHING_WAITING
 * waiting for their turn: a burst of sign-ins holds that many hashes' memory and delays the others by the
 * queue's length at most; past it an attempt is refused at once (PasswordsBusy) rather than queued
 * without bound.
 */
export const HASHING_AT_ONCE = 2
export const HASHING_WAITING = 8

/** Too many passwords are being hashed already: try again in a moment. */
export class PasswordsBusy extends Data.TaggedError("PasswordsBusy")<{ readonly retryAfterSeconds: number }> {}

const turns = Effect.runSync(Effect.makeSemaphore(HASHING_AT_ONCE))
let inQueue = 0

/** Runs `work` (hashing) in its turn, or fails at once with PasswordsBusy when the queue is full. */
export const inHashingTurn = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E | PasswordsBusy, R> =>
  Effect.suspend((): Effect.Effect<A, E | PasswordsBusy, R> => {
    if (inQueue >= HASHING_AT_ONCE + HASHING_WAITING) return Effect.fail(new PasswordsBusy({ retryAfterSeconds: 1 }))
    inQueue++
    return turns.withPermits(1)(work).pipe(Effect.ensuring(Effect.sync(() => {
      inQueue--
    })))
  })

const derive = (password: string, salt: Buffer, N: number, r: number, p: number) =>
  Effect.async<Buffer, Error>((resume) => {
    scrypt(password.normalize("NFC"), salt, KEY_BYTES, { N, r, p, maxmem: maxmem(N, r) }, (error, key) => {
      resume(error === null ? Effect.succeed(key) : Effect.fail(error))
    })
  })

/** Why a password cannot be used, or null. */
export const passwordProblem = (password: string): string | null =>
  password.length < MIN_PASSWORD_LENGTH
    ? `must be at least ${MIN_PASSWORD_LENGTH} characters long`
    : password.length > MAX_PASSWORD_LENGTH
    ? `must be at most ${MAX_PASSWORD_LENGTH} characters long`
    : null

export const hashPassword = (password: string): Effect.Effect<string> =>
  Effect.orDie(Effect.gen(function*() {
    const salt = randomBytes(SALT_BYTES)
    const key = yield* derive(password, salt, COST.N, COST.r, COST.p)
    return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString("base64")}$${key.toString("base64")}`
  }))

const PATTERN = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/

/** Whether the password matches the stored hash, compared in constant time; a malformed hash matches nothing. */
export const verifyPassword = (password: string, stored: string): Effect.Effect<boolean> => {
  const match = PATTERN.exec(stored)
  if (match === null || password.length > MAX_PASSWORD_LENGTH) return Effect.succeed(false)
  const [, N, r, p, salt, hash] = match
  const expected = Buffer.from(hash ?? "", "base64")
  return derive(password, Buffer.from(salt ?? "", "base64"), Number(N), Number(r), Number(p)).pipe(
    Effect.map((key) => key.length === expected.length && timingSafeEqual(key, expected)),
    Effect.orElseSucceed(() => false)
  )
}

/**
 * A hash of no one's password, verified when the email is unknown, so that a sign-in takes as long whether
 * or not the account exists (the time would otherwise tell which emails have accounts).
 */
export const decoyHash: Effect.Effect<string> = Effect.cached(hashPassword(randomBytes(18).toString("base64"))).pipe(
  Effect.runSync
)
