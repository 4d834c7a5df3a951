/** API keys in SQL: hashes only, looked up by the hash's unique index. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ApiKeyStore, KeyMode, Scope } from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { DbJson, NullableString, storage, StringArrayJson } from "./rows.js"

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

export const layer = Layer.effect(
  ApiKeyStore.ApiKeyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (hash) => sql`SELECT * FROM api_keys WHERE hash = ${hash}`
    })
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (id) => sql`SELECT * FROM api_keys WHERE id = ${id}`
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
      findByHash: (hash) => storage("apiKeys.findByHash")(Effect.map(byHash(hash), Option.map(toKey))),
      get: (id) => storage("apiKeys.get")(Effect.map(byId(id), Option.map(toKey))),
      list: (orgId) => storage("apiKeys.list")(Effect.map(byOrg(orgId), (rows) => rows.map(toKey))),
      revoke: (id, at) =>
        storage("apiKeys.revoke")(
          Effect.map(
            sql`UPDATE api_keys SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`,
            (rows) => rows.length > 0
          )
        )
    })
  })
)
