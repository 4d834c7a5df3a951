/**
 * The few cryptographic primitives Parley needs, in one place: random ids and
 * tokens, SHA-256 and HMAC, CRC32 checksums and constant-time comparison.
 * API tokens are high-entropy random strings, so a fast hash (SHA-256) is the
 * right tool; a password hash would only slow every request.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"

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

/** A random id with a readable prefix, e.g. `key_3fX…`, `evt_…`, `test_…`. */
export const newId = (prefix: string): string => `${prefix}_${randomBase62(16, 22)}`

export const sha256Hex = (input: string): string => createHash("sha256").update(input).digest("hex")

export const hmacBase64Url = (secret: string, input: string): string =>
  createHmac("sha256", secret).update(input).digest("base64url")

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
  const crc = crc32(input)
  return base62(new Uint8Array([(crc >>> 24) & 0xff, (crc >>> 16) & 0xff, (crc >>> 8) & 0xff, crc & 0xff]), 6)
}
