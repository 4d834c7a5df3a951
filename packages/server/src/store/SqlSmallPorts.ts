/**
 * The small SQL ports: rate-limit counters, the event outbox, the unit of
 * work (a database transaction) and the installation's cursor secret.
 */
import { SqlClient, SqlError, SqlSchema, type Statement } from "@effect/sql"
import { Cursors, EventOutbox, RateLimitStore, StorageError, UnitOfWork } from "@parley/core/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { countFinished } from "../observability/Metrics.js"
import * as TraceLinksModule from "../observability/TraceLinks.js"
import { DbInt, storage } from "./rows.js"
import * as SecretBox from "./SecretBox.js"
import { SqliteHandle, transactions } from "./SqliteDriver.js"

/**
 * One statement per request: the request is counted in its bucket only when the buckets counted with it
 * leave room (RateLimitStore), decided inside the statement. The buckets before the current one no longer
 * change, and the current bucket's row is re-read under its lock when two requests race for it (Postgres
 * re-checks ON CONFLICT … WHERE on the row as the other committed it; SQLite runs one write at a time), so
 * the limit is exact across replicas. Casts: node-postgres sends parameters untyped.
 */
export const RateLimitStoreLayer = Layer.effect(
  RateLimitStore.RateLimitStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeAccepted = Schema.decodeUnknown(Schema.Array(Schema.Struct({ count: DbInt, older: DbInt })))
    const decodeBuckets = Schema.decodeUnknown(Schema.Array(Schema.Struct({ bucket: DbInt, count: DbInt })))
    const hit = ({ bucket, key, limit }: RateLimitStore.RateLimitHit) =>
      Effect.gen(function*() {
        const oldest = sql`CAST(${RateLimitStore.oldestCounted(bucket)} AS BIGINT)`
        const current = sql`CAST(${bucket} AS BIGINT)`
        const older = (alias: string) =>
          sql`(SELECT COALESCE(SUM(${sql(alias)}.count), 0) FROM rate_limit_buckets ${sql(alias)}
               WHERE ${sql(alias)}.key = ${key} AND ${sql(alias)}.bucket >= ${oldest} AND ${sql(alias)}.bucket < ${current})`
        const rows = yield* Effect.flatMap(
          sql`INSERT INTO rate_limit_buckets (key, bucket, count)
              SELECT CAST(${key} AS TEXT), ${current}, 1 WHERE ${older("o")} + 1 <= CAST(${limit} AS BIGINT)
              ON CONFLICT (key, bucket) DO UPDATE SET count = rate_limit_buckets.count + 1
                WHERE rate_limit_buckets.count + ${older("p")} + 1 <= CAST(${limit} AS BIGINT)
              RETURNING count, ${older("q")} AS older`,
          decodeAccepted
        )
        const [counted] = rows
        if (counted !== undefined) {
          // A new bucket: the key's buckets that no longer count go (a few rows per key at any time).
          if (counted.count === 1) yield* sql`DELETE FROM rate_limit_buckets WHERE key = ${key} AND bucket < ${oldest}`
          return { accepted: true as const, used: counted.count + counted.older }
        }
        const buckets = yield* Effect.flatMap(
          sql`SELECT bucket, count FROM rate_limit_buckets WHERE key = ${key} AND bucket >= ${oldest} ORDER BY bucket`,
          decodeBuckets
        )
        return { accepted: false as const, buckets }
      })
    return RateLimitStore.RateLimitStore.of({ hit: (request) => storage("rateLimits.hit")(hit(request)) })
  })
)

const EventRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  type: Schema.String,
  timestamp: Schema.String,
  payload: Schema.String
})

/**
 * `append` on the embedded SQLite store: its two statements prepared, in one synchronous step (every
 * accepted creation appends its `*.queued` event).
 */
const sqliteAppend = (handle: SqliteHandle["Type"], links: TraceLinksModule.TraceLinks) => {
  const insertEvent = handle.prepared("INSERT INTO events (id, org_id, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)")
  // The endpoints that want the type as an uncorrelated IN: SQLite sets a correlated EXISTS up on every run,
  // even with no endpoint at all, at the cost of the event's insert itself (docs/benchmarks.md).
  const insertDeliveries = handle.prepared(
    `INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
     SELECT ?, id, 0, ?, 'pending', ? FROM webhooks WHERE org_id = ? AND disabled_at IS NULL
       AND id IN (SELECT webhook_id FROM webhook_event_types WHERE type IN ('*', ?))`
  )
  return (e: EventOutbox.OutboxEvent) =>
    Effect.zipLeft(
      storage("events.append")(handle.use(() => {
        insertEvent.run(e.id, e.orgId, e.type, e.timestamp, e.payload)
        insertDeliveries.run(e.id, Date.parse(e.timestamp), e.timestamp, e.orgId, e.type)
      })),
      Effect.zipRight(countFinished([e]), links.linkEvents([e]))
    )
}

export const EventOutboxLayer = Layer.effect(
  EventOutbox.EventOutbox,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const handle = yield* Effect.serviceOption(SqliteHandle)
    const links = yield* TraceLinksModule.make
    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: EventRow,
      execute: (orgId) => sql`SELECT id, org_id, type, timestamp, payload FROM events WHERE org_id = ${orgId} ORDER BY seq`
    })
    const eventRow = (e: EventOutbox.OutboxEvent) =>
      ({ id: e.id, org_id: e.orgId, type: e.type, timestamp: e.timestamp, payload: e.payload })
    /** Whether the endpoint wants events of the type: it names the type, or `*` (see SqlWebhooks). */
    const wants = (webhookId: Statement.Fragment, type: Statement.Fragment) =>
      sql`EXISTS (SELECT 1 FROM webhook_event_types t WHERE t.webhook_id = ${webhookId} AND t.type IN ('*', ${type}))`
    /** The pending deliveries of already inserted events that share a timestamp: one per enabled endpoint of their organisation that wants their type. */
    const deliveries = (timestamp: string, eventIds: ReadonlyArray<string>) =>
      sql`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
          SELECT e.id, w.id, 0, ${Date.parse(timestamp)}, 'pending', ${timestamp}
          FROM events e JOIN webhooks w ON w.org_id = e.org_id AND w.disabled_at IS NULL
          WHERE e.id IN ${sql.in(eventIds)} AND ${wants(sql`w.id`, sql`e.type`)}`
    return EventOutbox.EventOutbox.of({
      // The event and one pending delivery per enabled endpoint that wants its type, in the caller's transaction.
      append: Option.isSome(handle) ? sqliteAppend(handle.value, links) : (e) =>
        Effect.zipLeft(
          storage("events.append")(Effect.zipRight(
            sql`INSERT INTO events ${sql.insert(eventRow(e))}`,
            sql`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
                SELECT ${e.id}, id, 0, ${Date.parse(e.timestamp)}, 'pending', ${e.timestamp}
                FROM webhooks w WHERE org_id = ${e.orgId} AND disabled_at IS NULL AND ${wants(sql`w.id`, sql`${e.type}`)}`
          )),
          Effect.zipRight(countFinished([e]), links.linkEvents([e]))
        ),
      // A batch in a few statements rather than two per event; the dispatcher appends hundreds at a time.
      appendAll: (events) => {
        if (events.length === 0) return Effect.void
        const byTimestamp = new Map<string, Array<string>>()
        for (const e of events) {
          const ids = byTimestamp.get(e.timestamp)
          if (ids === undefined) byTimestamp.set(e.timestamp, [e.id])
          else ids.push(e.id)
        }
        return Effect.zipLeft(
          storage("events.appendAll")(Effect.zipRight(
            sql`INSERT INTO events ${sql.insert(events.map(eventRow))}`,
            Effect.forEach(byTimestamp, ([timestamp, ids]) => deliveries(timestamp, ids), { discard: true })
          )),
          Effect.zipRight(countFinished(events), links.linkEvents(events))
        )
      },
      list: (orgId) =>
        storage("events.list")(Effect.map(list(orgId), (rows) =>
          rows.map((r) => ({ id: r.id, orgId: r.org_id, type: r.type, timestamp: r.timestamp, payload: r.payload }))))
    })
  })
)

export const UnitOfWorkLayer = Layer.effect(
  UnitOfWork.UnitOfWork,
  Effect.gen(function*() {
    // Every accepted creation is one unit of work: on SQLite the connection's own lighter transaction.
    const withTransaction = yield* transactions
    return UnitOfWork.UnitOfWork.of({
      // Repositories already turn their own SQL failures into StorageError; what is left is BEGIN/COMMIT.
      atomically: (effect) =>
        Effect.mapError(
          withTransaction(effect),
          (error) => error instanceof SqlError.SqlError ? new StorageError({ operation: "transaction", cause: error }) : error
        )
    })
  })
)

const CURSOR_SECRET = SecretBox.CURSOR_SECRET_SETTING

/** The installation's cursor secret, created on first start and shared by every process on the database. */
export const CursorSignerLayer = Layer.effect(
  Cursors.CursorSigner,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const read = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ value: Schema.String }),
      execute: (name) => sql`SELECT value FROM settings WHERE name = ${name}`
    })
    const box = yield* SecretBox.SecretBox
    yield* sql`INSERT INTO settings (name, value) VALUES (${CURSOR_SECRET}, ${box.seal(Cursors.newSecret())})
               ON CONFLICT (name) DO NOTHING`
    const stored = yield* read(CURSOR_SECRET)
    if (Option.isNone(stored)) return Cursors.make(Cursors.newSecret())
    return Cursors.make(yield* box.open(stored.value.value))
  }).pipe(Effect.orDie)
)
