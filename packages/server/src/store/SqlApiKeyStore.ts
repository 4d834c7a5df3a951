/**
 * API keys in SQL: hashes only, looked up by the hash's unique index. The
 * lookup by hash joins what the access check of every request needs — the
 * key's organisation and its CRM connection — so authenticating a request
 * reads the database once (see ApiKeyRow.access).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ApiKeyStore, Crm, KeyMode, Scope } from "@parley/core/internal"
import { Effect, Either, Layer, Option, type ParseResult, Schema } from "effect"
import { DbJson, NullableString, storage, StringArrayJson } from "./rows.js"
import { ConnectionRow, toConnection } from "./CrmConnectionRow.js"
import { SettingsCache } from "./SettingsCache.js"
import { OrganisationRow, toOrganisation } from "./SqlOrganisations.js"

const KeyRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  name: Schema.String,
  mode: KeyMode,
  hash: Schema.String,
  prefix: Schema.String,
  scopes: DbJson(Schema.Array(Scope)),
  number_sids: StringArrayJson,
  bot_ids: StringArrayJson,
  created_at: Schema.String,
  expires_at: NullableString,
  revoked_at: NullableString
})

const toKey = (r: typeof KeyRow.Type): ApiKeyStore.ApiKeyRow => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  mode: r.mode,
  hash: r.hash,
  prefix: r.prefix,
  scopes: r.scopes,
  numberSids: r.number_sids,
  botIds: r.bot_ids,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at
})

// The connection is joined as CrmConnectionRow stores it: every organisation's connection state stays in
// `crm_connections`, whichever CRM serves its records (a CRM keeps its own tokens in its own table).

type Row = { readonly [column: string]: unknown }

/**
 * A LEFT JOINed table: its columns selected under a prefix (the key's table
 * also has id, name, created_at), and its own row picked back out; a NULL in
 * one of its NOT NULL columns means the join found no row.
 */
const joined = (table: string, prefix: string, columns: ReadonlyArray<string>, notNull: string) => ({
  select: columns.map((column) => `${table}.${column} AS ${prefix}${column}`).join(", "),
  isAbsent: (row: Row) => row[prefix + notNull] === null,
  rowOf: (row: Row): Row => {
    const own: Record<string, unknown> = {}
    for (const column of columns) own[column] = row[prefix + column]
    return own
  }
})

const ORGANISATION = joined("o", "o_", Object.keys(OrganisationRow.fields), "id")
const CONNECTION = joined("c", "c_", Object.keys(ConnectionRow.fields), "state")

// Decoded synchronously (Either): this runs on every request, and each step as an Effect costs more than the decoding.
const decodeKey = Schema.decodeUnknownEither(KeyRow)
const decodeOrganisation = Schema.decodeUnknownEither(OrganisationRow)
const decodeConnection = Schema.decodeUnknownEither(ConnectionRow)

/** A key row with its organisation (none when gone) and CRM connection (disconnected when there is none). */
const toKeyWithAccess = (row: Row): Either.Either<ApiKeyStore.ApiKeyRow, ParseResult.ParseError> =>
  Either.all({
    key: Either.map(decodeKey(row), toKey),
    organisation: ORGANISATION.isAbsent(row)
      ? Either.right(Option.none())
      : Either.map(decodeOrganisation(ORGANISATION.rowOf(row)), (o) => Option.some(toOrganisation(o))),
    connection: CONNECTION.isAbsent(row)
      ? Either.right<Crm.CrmConnection>({ state: "disconnected" })
      : Either.map(decodeConnection(CONNECTION.rowOf(row)), toConnection)
  }).pipe(Either.map(({ connection, key, organisation }) => ({ ...key, access: { organisation, connection } })))

export const layer = Layer.effect(
  ApiKeyStore.ApiKeyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* SettingsCache
    const byHash = (hash: string) =>
      Effect.flatMap(
        sql`SELECT k.*, ${sql.literal(`${ORGANISATION.select}, ${CONNECTION.select}`)} FROM api_keys k
            LEFT JOIN organisations o ON o.id = k.org_id
            LEFT JOIN crm_connections c ON c.org_id = k.org_id
            WHERE k.hash = ${hash}`,
        (rows) => rows[0] === undefined ? Effect.succeedNone : Effect.map(toKeyWithAccess(rows[0]), Option.some)
      )
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (id) => sql`SELECT * FROM api_keys WHERE id = ${id}`
    })
    const PageRequest = Schema.Struct({
      orgId: Schema.String,
      pattern: Schema.NullOr(Schema.String),
      createdAt: Schema.NullOr(Schema.String),
      id: Schema.String,
      limit: Schema.Number
    })
    // Newest first, continuing after a (created_at, id) keyset on the index by organisation and creation time.
    const pageOf = SqlSchema.findAll({
      Request: PageRequest,
      Result: KeyRow,
      execute: (q) => {
        const conditions = [
          sql`org_id = ${q.orgId}`,
          ...(q.pattern === null
            ? []
            : [sql`(lower(name) LIKE ${q.pattern} ESCAPE '!' OR lower(prefix) LIKE ${q.pattern} ESCAPE '!')`]),
          ...(q.createdAt === null ? [] : [sql`(created_at < ${q.createdAt} OR (created_at = ${q.createdAt} AND id < ${q.id}))`])
        ]
        return sql`SELECT * FROM api_keys WHERE ${sql.and(conditions)} ORDER BY created_at DESC, id DESC LIMIT ${q.limit}`
      }
    })
    const byOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: KeyRow,
      execute: (orgId) => sql`SELECT * FROM api_keys WHERE org_id = ${orgId} ORDER BY created_at, id`
    })
    return ApiKeyStore.ApiKeyStore.of({
      insert: (k) =>
        storage("apiKeys.insert")(sql`INSERT INTO api_keys ${
          sql.insert({
            id: k.id,
            org_id: k.orgId,
            name: k.name,
            mode: k.mode,
            hash: k.hash,
            prefix: k.prefix,
            scopes: JSON.stringify(k.scopes),
            number_sids: JSON.stringify(k.numberSids),
            bot_ids: JSON.stringify(k.botIds),
            created_at: k.createdAt,
            expires_at: k.expiresAt,
            revoked_at: k.revokedAt
          })
        }`),
      findByHash: (hash) => cache.cached(`key:${hash}`, storage("apiKeys.findByHash")(byHash(hash))),
      get: (id) => storage("apiKeys.get")(Effect.map(byId(id), Option.map(toKey))),
      list: (orgId) => storage("apiKeys.list")(Effect.map(byOrg(orgId), (rows) => rows.map(toKey))),
      revoke: (id, at) =>
        storage("apiKeys.revoke")(
          Effect.map(
            sql`UPDATE api_keys SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`,
            (rows) => rows.length > 0
          )
        ),
      rename: (id, name) =>
        storage("apiKeys.rename")(
          Effect.map(sql`UPDATE api_keys SET name = ${name} WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)
        ),
      // ISO 8601 times in UTC compare as text; the update bumps the settings version like any change to keys.
      expireBy: (id, at) =>
        storage("apiKeys.expireBy")(
          Effect.map(
            sql`UPDATE api_keys SET expires_at = CASE WHEN expires_at IS NOT NULL AND expires_at <= ${at} THEN expires_at ELSE ${at} END
                WHERE id = ${id} AND revoked_at IS NULL RETURNING id`,
            (rows) => rows.length > 0
          )
        ),
      // A search's `%` and `_` are matched as themselves (escaped with `!`), not as wildcards.
      page: (orgId, query) =>
        storage("apiKeys.page")(Effect.gen(function*() {
          const after = query.after === null ? Option.none() : ApiKeyStore.parseKeyCursor(query.after)
          const search = query.search.toLowerCase()
          const rows = yield* pageOf({
            orgId,
            pattern: search === "" ? null : `%${search.replace(/[!%_]/g, (c) => `!${c}`)}%`,
            createdAt: Option.isSome(after) ? after.value.createdAt : null,
            id: Option.isSome(after) ? after.value.id : "",
            limit: query.limit + 1
          })
          const keys = rows.slice(0, query.limit).map(toKey)
          const last = keys[keys.length - 1]
          return { keys, next: rows.length > query.limit && last !== undefined ? ApiKeyStore.keyCursor(last) : null }
        }))
    })
  })
)
