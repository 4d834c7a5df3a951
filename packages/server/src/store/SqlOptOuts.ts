/**
 * The opt-out list in SQL (the core's OptOuts port): `opt_outs` holds each number's current entry,
 * `opt_out_history` every entry recorded or removed. Every creation asks it, so on SQLite an organisation's
 * list is served from the settings cache (its changes bump the settings version: migration 0035); on
 * Postgres each question is one primary-key read.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { OptOutChannel, OptOuts, OptOutSource } from "@parley/core/internal"
import { Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "./rows.js"
import { SettingsCache } from "./SettingsCache.js"

/** Channels as stored: comma-separated, in the contract's order. */
const Channels = Schema.split(",").pipe(Schema.compose(Schema.Array(OptOutChannel)))
const encodeChannels = Schema.encodeSync(Channels)

const EntryRow = Schema.Struct({
  org_id: Schema.String,
  phone: Schema.String,
  channels: Channels,
  source: OptOutSource,
  reason: NullableString,
  cause: NullableString,
  created_at: Schema.String
})

const ChangeRow = Schema.Struct({
  id: DbInt,
  org_id: Schema.String,
  phone: Schema.String,
  change: Schema.Literal("added", "removed"),
  channels: Channels,
  source: OptOutSource,
  reason: NullableString,
  cause: NullableString,
  at: Schema.String
})

const toEntry = (row: typeof EntryRow.Type): OptOuts.OptOutEntry => ({
  orgId: row.org_id,
  phone: row.phone,
  channels: row.channels,
  source: row.source,
  reason: row.reason,
  cause: row.cause,
  createdAt: row.created_at
})

const COLUMNS = "org_id, phone, channels, source, reason, cause, created_at"

export const layer = Layer.effect(
  OptOuts.OptOuts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* SettingsCache
    const columns = sql.literal(COLUMNS)
    const all = SqlSchema.findAll({
      Request: Schema.String,
      Result: EntryRow,
      execute: (orgId) => sql`SELECT ${columns} FROM opt_outs WHERE org_id = ${orgId}`
    })
    const one = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, phone: Schema.String }),
      Result: EntryRow,
      execute: ({ orgId, phone }) => sql`SELECT ${columns} FROM opt_outs WHERE org_id = ${orgId} AND phone = ${phone}`
    })
    const some = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: Schema.String, phones: Schema.Array(Schema.String) }),
      Result: EntryRow,
      execute: ({ orgId, phones }) =>
        sql`SELECT ${columns} FROM opt_outs WHERE org_id = ${orgId} AND ${sql.in("phone", phones)}`
    })
    const history = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: Schema.String, phone: Schema.String }),
      Result: ChangeRow,
      execute: ({ orgId, phone }) =>
        sql`SELECT * FROM opt_out_history WHERE org_id = ${orgId} AND phone = ${phone} ORDER BY id DESC`
    })
    /** The organisation's whole list by phone, cached with the settings where the store caches them (SQLite). */
    const listOf = (orgId: string) =>
      cache.cachedValue(`opt-outs ${orgId}`, Effect.map(all(orgId), (rows) => new Map(rows.map((r) => [r.phone, toEntry(r)]))))
    const cached = sql.onDialectOrElse({ sqlite: () => true, orElse: () => false })

    const log = (
      entry: Pick<OptOuts.OptOutEntry, "orgId" | "phone" | "channels" | "source" | "reason" | "cause">,
      change: "added" | "removed",
      at: string
    ) =>
      sql`INSERT INTO opt_out_history (org_id, phone, change, channels, source, reason, cause, at)
          VALUES (${entry.orgId}, ${entry.phone}, ${change}, ${encodeChannels(entry.channels)}, ${entry.source},
                  ${entry.reason}, ${entry.cause}, ${at})`

    return OptOuts.OptOuts.of({
      find: (orgId, phone) =>
        storage("optOuts.find")(
          cached
            ? Effect.map(listOf(orgId), (entries) => Option.fromNullable(entries.get(phone)))
            : Effect.map(one({ orgId, phone }), Option.map(toEntry))
        ),
      findMany: (orgId, phones) =>
        storage("optOuts.findMany")(
          phones.length === 0
            ? Effect.succeed(new Map())
            : cached
            ? Effect.map(listOf(orgId), (entries) =>
              new Map(phones.flatMap((phone) => {
                const entry = entries.get(phone)
                return entry === undefined ? [] : [[phone, entry] as const]
              })))
            : Effect.map(some({ orgId, phones: [...new Set(phones)] }), (rows) => new Map(rows.map((r) => [r.phone, toEntry(r)])))
        ),
      record: (entry) =>
        storage("optOuts.record")(sql.withTransaction(Effect.gen(function*() {
          const row = {
            org_id: entry.orgId,
            phone: entry.phone,
            channels: encodeChannels(entry.channels),
            source: entry.source,
            reason: entry.reason,
            cause: entry.cause,
            created_at: entry.createdAt
          }
          yield* sql`INSERT INTO opt_outs ${sql.insert(row)}
            ON CONFLICT (org_id, phone) DO UPDATE SET channels = excluded.channels, source = excluded.source,
              reason = excluded.reason, cause = excluded.cause, created_at = excluded.created_at`
          yield* log(entry, "added", entry.createdAt)
        }))),
      remove: (orgId, phone, by) =>
        storage("optOuts.remove")(sql.withTransaction(Effect.gen(function*() {
          const removed = yield* SqlSchema.findAll({
            Request: Schema.Void,
            Result: EntryRow,
            execute: () => sql`DELETE FROM opt_outs WHERE org_id = ${orgId} AND phone = ${phone} RETURNING ${columns}`
          })(undefined)
          const entry = removed[0]
          if (entry === undefined) return Option.none()
          yield* log({ ...toEntry(entry), source: by.source, reason: null, cause: by.cause }, "removed", by.at)
          return Option.some(toEntry(entry))
        }))),
      page: ({ before, limit, orgId, phone }) =>
        storage("optOuts.page")(Effect.map(
          SqlSchema.findAll({
            Request: Schema.Void,
            Result: EntryRow,
            execute: () =>
              sql`SELECT ${columns} FROM opt_outs WHERE org_id = ${orgId}
                  ${phone === undefined ? sql`` : sql`AND phone = ${phone}`}
                  ${before === undefined ? sql`` : sql`AND (created_at < ${before.createdAt}
                    OR (created_at = ${before.createdAt} AND phone < ${before.phone}))`}
                  ORDER BY created_at DESC, phone DESC LIMIT ${limit}`
          })(undefined),
          (rows) => rows.map(toEntry)
        )),
      history: (orgId, phone) =>
        storage("optOuts.history")(Effect.map(history({ orgId, phone }), (rows) =>
          rows.map((r): OptOuts.OptOutChange => ({
            orgId: r.org_id,
            phone: r.phone,
            change: r.change,
            channels: r.channels,
            source: r.source,
            reason: r.reason,
            cause: r.cause,
            at: r.at
          }))))
    })
  })
)
