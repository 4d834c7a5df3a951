/**
 * The few cryptographic primitives Parley needs, in one place: random ids and
 * tokens, SHA-256 and HMAC, CRC32 checksums and constant-time comparison.
 * API tokens are high-entropy random strings, so a fast hash (SHA-256) is the
 * right tool; a password hash would only slow every request.
 */
import { createHmac, hash, randomBytes, randomFillSync, timingSafeEqual } from "node:crypto"

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** Base62 of a byte string, fixed width for a given length (leading zeros kept). */
export const base62 = (bytes: Uint8Array, width: number): string => {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ""
  while (out.length < width) {
    out = BASE62[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

export const randomBase62 = (byteCount: number, width: number): string => base62(randomBytes(byteCount), width)

/** Random bytes drawn in blocks: one `randomFillSync` of 4 KiB serves ~170 ids instead of one call each. */
const POOL_BYTES = 4096
const pool = Buffer.alloc(POOL_BYTES)
let poolOffset = POOL_BYTES

const randomByte = (): number => {
  if (poolOffset === POOL_BYTES) {
    randomFillSync(pool)
    poolOffset = 0
  }
  return pool[poolOffset++] ?? 0
}

const ID_CHARS = 22

/**
 * A random id with a readable prefix, e.g. `key_3fX…`, `evt_…`, `test_…`: 22 base-62 characters, each
 * uniform and independent (≈131 bits of entropy, more than the 128 random bits the ids were first cut
 * from). Each character takes the low 6 bits of a random byte and rejects the 2 values of 64 that are
 * not below 62, so no character is likelier than another. Bytes from a pool and no BigInt arithmetic,
 * because the dispatcher makes an id per event (the costs are in docs/benchmarks.md, "Measurements
 * moved out of code comments").
 */
export const newId = (prefix: string): string => {
  let id = `${prefix}_`
  let chars = 0
  while (chars < ID_CHARS) {
    const sixBits = randomByte() & 63
    if (sixBits < 62) {
      id += BASE62.charAt(sixBits)
      chars++
    }
  }
  return id
}

/** One-shot (`crypto.hash`): every request hashes its API key, and a Hash object per call costs twice as much. */
export const sha256Hex = (input: string): string => hash("sha256", input, "hex")

export const hmacBase64Url = (secret: string, input: string): string =>
  createHmac("sha256", secret).update(input).digest("base64url")

export const hmacBytes = (key: Uint8Array, input: string): Buffer => createHmac("sha256", key).update(input).digest()

/** Constant-time equality of two strings (false at once only when lengths differ, which leaks nothing secret). */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let i = 0; i < 256; i++) {
    let c = i
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[i] = c >>> 0
  }
  return table
})()

export const crc32 = (input: string): number => {
  let crc = 0xffffffff
  for (const byte of Buffer.from(input)) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** The six base62 characters of a CRC32, as GitHub's tokens carry. */
export const checksum62 = (input: string): string => {
  // A CRC32 is below 2^32, well inside a double's exact integers: base62 by plain division (what `base62` of
  // its four bytes gives, without BigInt; every request checks its key's checksum).
  let n = crc32(input)
  let out = ""
  while (out.length < 6) {
    out = BASE62.charAt(n % 62) + out
    n = Math.floor(n / 62)
  }
  return out
}
