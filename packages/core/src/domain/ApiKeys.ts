/**
 * API keys: minting, parsing and authenticating.
 *
 * Format: `parley_<mode>_<43 base62 chars of 32 random bytes><6 base62 chars of CRC32>`.
 * The prefix tells test from live at a glance and lets secret scanners find
 * leaked keys; the checksum rejects typos and truncations before any lookup.
 * Only the SHA-256 of a token is stored; it is compared in constant time.
 * Revocation and expiry are read from the store on every request, so they
 * take effect on the next request.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Unauthorized } from "../contract/Errors.js"
import type { KeyMode, Scope } from "../contract/Primitives.js"
import { type ApiKeyRow, ApiKeyStore } from "../ports/ApiKeyStore.js"
import type { StorageError } from "../ports/StorageError.js"
import { checksum62, constantTimeEqual, newId, randomBase62, sha256Hex } from "./Crypto.js"

const RANDOM_BYTES = 32
const RANDOM_CHARS = 43
const TOKEN = /^parley_(test|live)_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/

export const mintToken = (mode: KeyMode): string => {
  const head = `parley_${mode}_${randomBase62(RANDOM_BYTES, RANDOM_CHARS)}`
  return head + checksum62(head)
}

/** The mode of a well-formed token whose checksum matches; none otherwise. */
export const parseToken = (token: string): Option.Option<KeyMode> => {
  const match = TOKEN.exec(token)
  if (match === null) return Option.none()
  const mode = match[1] === "live" ? "live" : "test"
  const head = `parley_${mode}_${match[2]}`
  return checksum62(head) === match[3] ? Option.some(mode) : Option.none()
}

export const hashToken = (token: string): string => sha256Hex(token)

export interface NewKey {
  readonly orgId: string
  readonly name: string
  readonly mode: KeyMode
  readonly scopes: ReadonlyArray<Scope>
  readonly numberSids: ReadonlyArray<string>
  readonly botIds: ReadonlyArray<string>
  readonly expiresAt: string | null
}

export interface ApiKeysService {
  /** Mints and stores a key; the token is returned once and never stored. */
  readonly create: (key: NewKey) => Effect.Effect<{ readonly token: string; readonly key: ApiKeyRow }, StorageError>
  readonly authenticate: (token: string) => Effect.Effect<ApiKeyRow, Unauthorized | StorageError>
}

export class ApiKeys extends Context.Tag("@parley/core/ApiKeys")<ApiKeys, ApiKeysService>() {}

const unauthorized = (message: string) => new Unauthorized({ message })

export const layer: Layer.Layer<ApiKeys, never, ApiKeyStore> = Layer.effect(
  ApiKeys,
  Effect.gen(function*() {
    const store = yield* ApiKeyStore
    return ApiKeys.of({
      create: Effect.fn("ApiKeys.create")(function*(input) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const token = mintToken(input.mode)
        const key: ApiKeyRow = {
          id: newId("key"),
          orgId: input.orgId,
          name: input.name,
          mode: input.mode,
          hash: hashToken(token),
          prefix: token.slice(0, 16),
          scopes: [...new Set(input.scopes)],
          numberSids: [...new Set(input.numberSids)],
          botIds: [...new Set(input.botIds)],
          createdAt: now,
          expiresAt: input.expiresAt,
          revokedAt: null
        }
        yield* store.insert(key)
        return { token, key }
      }),
      // On every request: plain checks around one store read, no generator (each step costs, and this is
      // most of a cached GET's work).
      authenticate: (token) => {
        if (token === "") return Effect.fail(unauthorized("Send your API key as `Authorization: Bearer <key>`."))
        if (Option.isNone(parseToken(token))) {
          return Effect.fail(unauthorized("The API key is malformed: check that it was copied whole."))
        }
        const hash = hashToken(token)
        return Effect.flatMap(store.findByHash(hash), (found) => {
          if (Option.isNone(found) || !constantTimeEqual(found.value.hash, hash)) {
            return Effect.fail(unauthorized("The API key is not valid."))
          }
          const key = found.value
          if (key.revokedAt !== null) return Effect.fail(unauthorized("The API key has been revoked."))
          const expiresAt = key.expiresAt
          if (expiresAt === null) return Effect.succeed(key)
          return Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Date.parse(expiresAt) <= now ? Effect.fail(unauthorized("The API key has expired.")) : Effect.succeed(key))
        })
      }
    })
  })
)
