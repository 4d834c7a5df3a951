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
  /** Renames a key; false when there is no such key. */
  readonly rename: (id: string, name: string) => Effect.Effect<boolean, StorageError>
  /**
   * Brings a key's expiry forward to `at` (a roll's overlap ends then); a key that already expires sooner
   * keeps its expiry. False when there is no such key or it is revoked.
   */
  readonly expireBy: (id: string, at: string) => Effect.Effect<boolean, StorageError>
  /** The organisation's keys newest first, a page at a time, optionally those whose name or prefix contains `search`. */
  readonly page: (orgId: string, query: KeyPageQuery) => Effect.Effect<KeyPage, StorageError>
}

export interface KeyPageQuery {
  /** Matched case-insensitively against the name and the prefix; empty for every key. */
  readonly search: string
  /** `next` of the previous page. */
  readonly after: string | null
  readonly limit: number
}

export interface KeyPage {
  readonly keys: ReadonlyArray<ApiKeyRow>
  /** The cursor of the next (older) page; null on the last one. */
  readonly next: string | null
}

/** `createdAt|id` of a key: where keyset paging continues after it (newest first). */
export const keyCursor = (key: ApiKeyRow): string => `${key.createdAt}|${key.id}`

export const parseKeyCursor = (cursor: string): Option.Option<{ readonly createdAt: string; readonly id: string }> => {
  const bar = cursor.indexOf("|")
  return bar > 0 ? Option.some({ createdAt: cursor.slice(0, bar), id: cursor.slice(bar + 1) }) : Option.none()
}

/** Whether a key matches a search of the keys page (the memory store's LIKE). */
const matches = (key: ApiKeyRow, search: string) =>
  search === "" || key.name.toLowerCase().includes(search.toLowerCase()) ||
  key.prefix.toLowerCase().includes(search.toLowerCase())

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
        }),
      rename: (id, name) =>
        Ref.modify(keys, (m) => {
          const key = m.get(id)
          return key === undefined ? [false, m] : [true, new Map(m).set(id, { ...key, name })]
        }),
      expireBy: (id, at) =>
        Ref.modify(keys, (m) => {
          const key = m.get(id)
          if (key === undefined || key.revokedAt !== null) return [false, m]
          if (key.expiresAt !== null && key.expiresAt <= at) return [true, m]
          return [true, new Map(m).set(id, { ...key, expiresAt: at })]
        }),
      page: (orgId, query) =>
        Effect.map(Ref.get(keys), (m) => {
          const after = query.after === null ? Option.none() : parseKeyCursor(query.after)
          const found = [...m.values()]
            .filter((k) => k.orgId === orgId && matches(k, query.search))
            .filter((k) =>
              Option.isNone(after) || k.createdAt < after.value.createdAt ||
              (k.createdAt === after.value.createdAt && k.id < after.value.id)
            )
            .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id))
          const keys = found.slice(0, query.limit)
          const last = keys[keys.length - 1]
          return { keys, next: found.length > query.limit && last !== undefined ? keyCursor(last) : null }
        })
    })
  })
)
