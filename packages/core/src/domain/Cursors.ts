/**
 * Opaque pagination cursors and conversation ids. Their payloads name phone
 * numbers (a conversation is a line and a counterpart), and ids travel in URLs,
 * logs and CRM notes, so a token is encrypted, not just signed: AES-256-GCM
 * with the organisation as associated data, so a forged, edited or foreign
 * token is a clean 400 (or 404 for a conversation id) rather than a query on
 * attacker-chosen values, and reveals nothing of what it names.
 *
 * The nonce is synthetic (an HMAC of the organisation and the payload, as in
 * SIV): the same conversation always gets the same id, across listings,
 * restarts and replicas, and a nonce repeats only with its own plaintext, which
 * then encrypts to the very same token. The keys are derived (HKDF) from the
 * installation's secret, which the server keeps sealed in its store.
 *
 * Tokens issued before they were encrypted (`base64url(JSON).HMAC`, with a
 * dot; base64url has none) still open, so saved ids and cursors keep working.
 */
import { createCipheriv, createDecipheriv, hkdfSync } from "node:crypto"
import { Context, Layer, Option, Schema } from "effect"
import { constantTimeEqual, hmacBase64Url, hmacBytes, randomBase62 } from "./Crypto.js"

export interface CursorSignerService {
  /** The payload as an opaque token, bound to the organisation. */
  readonly seal: (orgId: string, payload: unknown) => string
  /** The payload of a token this installation sealed for this organisation; none for anything else. */
  readonly open: <A, I>(orgId: string, token: string, schema: Schema.Schema<A, I>) => Option.Option<A>
}

export class CursorSigner extends Context.Tag("@parley/core/CursorSigner")<CursorSigner, CursorSignerService>() {}

const LEGACY_MAC_LENGTH = 22
const NONCE_BYTES = 12
const TAG_BYTES = 16

/**
 * One JSON decoder per payload schema. `Schema.parseJson(schema)` builds a new schema, and with it a new
 * parser, every time it is called: per open, that cost more than the decryption.
 */
const decoders = new WeakMap<object, (json: string) => Option.Option<unknown>>()
const jsonDecoder = <A, I>(schema: Schema.Schema<A, I>): (json: string) => Option.Option<A> => {
  const cached = decoders.get(schema)
  // Stored under this very schema just below, so it decodes to A.
  if (cached !== undefined) return cached as (json: string) => Option.Option<A>
  const decoder = Schema.decodeUnknownOption(Schema.parseJson(schema))
  decoders.set(schema, decoder)
  return decoder
}

const derive = (secret: string, purpose: string): Buffer =>
  Buffer.from(hkdfSync("sha256", secret, "parley-tokens", purpose, 32))

export const make = (secret: string): CursorSignerService => {
  const encryptionKey = derive(secret, "token encryption v1")
  const nonceKey = derive(secret, "token nonce v1")
  const legacyMac = (orgId: string, body: string) =>
    hmacBase64Url(secret, `${orgId}.${body}`).slice(0, LEGACY_MAC_LENGTH)

  const openLegacy = (orgId: string, token: string, dot: number): Option.Option<string> => {
    const body = token.slice(0, dot)
    // Constant time: an early-exit comparison would let a client learn a valid MAC byte by byte.
    if (dot <= 0 || !constantTimeEqual(token.slice(dot + 1), legacyMac(orgId, body))) return Option.none()
    return Option.some(Buffer.from(body, "base64url").toString("utf8"))
  }

  const openSealed = (orgId: string, token: string): Option.Option<string> => {
    const bytes = Buffer.from(token, "base64url")
    // The decoder skips what is not base64url and stray trailing bits: only the exact token opens.
    if (bytes.length <= NONCE_BYTES + TAG_BYTES || bytes.toString("base64url") !== token) return Option.none()
    const decipher = createDecipheriv("aes-256-gcm", encryptionKey, bytes.subarray(0, NONCE_BYTES))
    decipher.setAAD(Buffer.from(orgId))
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
    try {
      return Option.some(
        Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()])
          .toString("utf8")
      )
    } catch {
      return Option.none() // the tag did not verify: edited, forged, or another organisation's
    }
  }

  return {
    seal: (orgId, payload) => {
      const plain = Buffer.from(JSON.stringify(payload))
      const nonce = hmacBytes(nonceKey, `${orgId}\u0000${plain.toString("utf8")}`).subarray(0, NONCE_BYTES)
      const cipher = createCipheriv("aes-256-gcm", encryptionKey, nonce)
      cipher.setAAD(Buffer.from(orgId))
      const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()])
      return sealed.toString("base64url")
    },
    open: (orgId, token, schema) => {
      const dot = token.indexOf(".")
      const json = dot === -1 ? openSealed(orgId, token) : openLegacy(orgId, token, dot)
      return Option.flatMap(json, jsonDecoder(schema))
    }
  }
}

export const layerFromSecret = (secret: string): Layer.Layer<CursorSigner> => Layer.succeed(CursorSigner, make(secret))

/** A fresh random secret: for tests and for embedding the core in a single process. */
export const layerRandom: Layer.Layer<CursorSigner> = Layer.sync(CursorSigner, () => make(randomBase62(32, 43)))

export const newSecret = (): string => randomBase62(32, 43)
