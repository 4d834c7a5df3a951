/**
 * Port: API keys as stored — a SHA-256 hash of the token, never the token —
 * with their scopes, restrictions, expiry and revocation.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { KeyMode, Scope } from "../contract/Primitives.js"
import type { CrmConnection } from "./Crm.js"
import type { Organisation } from "./Organisations.js"
import type { StorageError } from "./StorageError.js"

/**
 * What the access check of every request reads besides the key: its
 * organisation (none if it is gone) and that organisation's CRM connection,
 * as they were when the key was read.
 */
export interface KeyAccess {
  readonly organisation: Option.Option<Organisation>
  readonly connection: CrmConnection
}

export interface ApiKeyRow {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly mode: KeyMode
  /** Hex SHA-256 of the whole token. */
  readonly hash: string
  /** The first characters of the token, shown in listings so people can tell keys apart. */
  readonly prefix: string
  readonly scopes: ReadonlyArray<Scope>
  readonly numberSids: ReadonlyArray<string>
  readonly botIds: ReadonlyArray<string>
  readonly createdAt: string
  readonly expiresAt: string | null
  readonly revokedAt: string | null
  /**
   * Set by `findByHash` in stores that read it in the same query as the key
   * (the SQL store joins the tables, so a request's authentication costs one
   * read instead of three); absent, the access check asks the Organisations
   * and Crm ports.
   */
  readonly access?: KeyAccess | undefined
}

export interface ApiKeyStoreService {
  readonly insert: (row: ApiKeyRow) => Effect.Effect<void, StorageError>
  readonly findByHash: (hash: string) => Effect.Effect<Option.Option<ApiKeyRow>, StorageError>
  readonly get: (id: string) => Effect.Effect<Option.Option<ApiKeyRow>, StorageError>
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<ApiKeyRow>, StorageError>
  /** Marks the key revoked; false when there is no such key or it was already revoked. */
  readonly revoke: (id: string, at: string) => Effect.Effect<boolean, StorageError>
}

export class ApiKeyStore extends Context.Tag("@parley/core/ports/ApiKeyStore")<ApiKeyStore, ApiKeyStoreService>() {}

export const layerMemory: Layer.Layer<ApiKeyStore> = Layer.effect(
  ApiKeyStore,
  Effect.gen(function*() {
    const keys = yield* Ref.make(new Map<string, ApiKeyRow>())
    return ApiKeyStore.of({
      insert: (row) => Ref.update(keys, (m) => new Map(m).set(row.id, row)),
      findByHash: (hash) =>
        Effect.map(Ref.get(keys), (m) => Option.fromNullable([...m.values()].find((k) => k.hash === hash))),
      get: (id) => Effect.map(Ref.get(keys), (m) => Option.fromNullable(m.get(id))),
      list: (orgId) =>
        Effect.map(Ref.get(keys), (m) =>
          [...m.values()].filter((k) => k.orgId === orgId).sort((a, b) => a.createdAt.localeCompare(b.createdAt))),
      revoke: (id, at) =>
        Ref.modify(keys, (m) => {
          const key = m.get(id)
          if (key === undefined || key.revokedAt !== null) return [false, m]
          return [true, new Map(m).set(id, { ...key, revokedAt: at })]
        })
    })
  })
)
