/**
 * Opaque, tamper-evident pagination cursors and conversation ids. A token is
 * `base64url(JSON payload).base64url(HMAC-SHA256)` truncated to 128 bits, bound
 * to the organisation, so a forged, edited or foreign cursor is a clean 400
 * (or 404 for a conversation id) rather than a query on attacker-chosen values.
 * The secret is per installation; the server keeps it in its store so cursors
 * survive restarts and work on every replica.
 */
import { Context, Layer, Option, Schema } from "effect"
import { constantTimeEqual, hmacBase64Url, randomBase62 } from "./Crypto.js"

export interface CursorSignerService {
  readonly sign: (orgId: string, payload: unknown) => string
  readonly verify: <A, I>(orgId: string, token: string, schema: Schema.Schema<A, I>) => Option.Option<A>
}

export class CursorSigner extends Context.Tag("@parley/core/CursorSigner")<CursorSigner, CursorSignerService>() {}

const MAC_LENGTH = 22

/**
 * One JSON decoder per payload schema. `Schema.parseJson(schema)` builds a new schema, and with it a new
 * parser, every time it is called: per verify, that cost more than the HMAC.
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

export const make = (secret: string): CursorSignerService => {
  const mac = (orgId: string, body: string) => hmacBase64Url(secret, `${orgId}.${body}`).slice(0, MAC_LENGTH)
  return {
    sign: (orgId, payload) => {
      const body = Buffer.from(JSON.stringify(payload)).toString("base64url")
      return `${body}.${mac(orgId, body)}`
    },
    verify: (orgId, token, schema) => {
      const dot = token.indexOf(".")
      if (dot <= 0) return Option.none()
      const body = token.slice(0, dot)
      // Constant time: an early-exit comparison would let a client learn a valid MAC byte by byte.
      if (!constantTimeEqual(token.slice(dot + 1), mac(orgId, body))) return Option.none()
      return jsonDecoder(schema)(Buffer.from(body, "base64url").toString("utf8"))
    }
  }
}

export const layerFromSecret = (secret: string): Layer.Layer<CursorSigner> => Layer.succeed(CursorSigner, make(secret))

/** A fresh random secret: for tests and for embedding the core in a single process. */
export const layerRandom: Layer.Layer<CursorSigner> = Layer.sync(CursorSigner, () => make(randomBase62(32, 43)))

export const newSecret = (): string => randomBase62(32, 43)

