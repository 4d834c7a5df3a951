/**
 * Postgres as one adapter, the store for several replicas: a pool of Parley's own (MeteredPool, so that
 * the metrics can see it: the ConnectionPool port), migrated, and every store port that differs from
 * SQLite answered the Postgres way — through the SqlClient, idempotency keys reserved in their own commit,
 * the queues claimed with `SKIP LOCKED` and organisations locked `FOR UPDATE` (RowLocks), request counters
 * in the database (the limit holds across replicas), nothing cached in memory (each replica would need its
 * own invalidation, and the database is a network away anyway).
 *
 * The migrator locks its table, so replicas starting together migrate once. A database that is not
 * reachable at start is retried for a while (a replica may start before it); once running, the pool
 * reconnects by itself and requests answer 503 in the meantime (see ErrorResponses).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, type Redacted, Schedule } from "effect"
import { ConnectionPool } from "../ConnectionPool.js"
import { migrations } from "../migrations.js"
import * as SettingsCache from "../SettingsCache.js"
import * as SqlRateLimitStore from "../SqlRateLimitStore.js"
import { Transactions } from "../Transactions.js"
import * as MeteredPool from "./MeteredPool.js"
import * as PgCreationWrites from "./PgCreationWrites.js"
import * as PgDirectReads from "./PgDirectReads.js"
import * as PgIdempotencyStore from "./PgIdempotencyStore.js"
import * as PgRowLocks from "./PgRowLocks.js"
import * as PgWorkQueue from "./PgWorkQueue.js"

/** 1 s, 2 s, 4 s … capped at 5 s, for about 30 s in all. */
const startRetry = Schedule.exponential("1 second").pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.upTo("30 seconds")
)

const ClientTransactions = Layer.effect(
  Transactions,
  Effect.map(SqlClient.SqlClient, (sql) => ({ withTransaction: sql.withTransaction }))
)

/** The store's ports through the SqlClient; built once the database is migrated. */
const Ports = Layer.mergeAll(
  ClientTransactions,
  PgWorkQueue.layer,
  PgDirectReads.layer,
  SettingsCache.uncached,
  PgCreationWrites.layer,
  PgIdempotencyStore.layer,
  SqlRateLimitStore.layer,
  PgRowLocks.layer
)

export interface PostgresOptions {
  readonly url: Redacted.Redacted<string>
  readonly poolSize: number
}

/** The store on the database at `url`. */
export const layer = ({ poolSize, url }: PostgresOptions) => {
  // The pool's gauges in the context (the ConnectionPool port), for the metrics.
  const client = Layer.unwrapScoped(Effect.map(
    MeteredPool.acquire({
      url,
      maxConnections: poolSize,
      // Fail a request in seconds when the database is unreachable, rather than hang it.
      connectTimeout: Duration.seconds(5),
      idleTimeout: Duration.seconds(30),
      applicationName: "parley"
    }),
    (pool) =>
      Layer.merge(
        PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "parley" }),
        Layer.succeed(ConnectionPool, Option.some(MeteredPool.gauges(pool)))
      )
  )).pipe(
    Layer.tapErrorCause(() => Effect.logWarning("Postgres is not reachable yet; retrying")),
    Layer.retry(startRetry)
  )
  const migrate = PgMigrator.layer({ loader: PgMigrator.fromRecord(migrations) }).pipe(
    Layer.provide(NodeContext.layer),
    // Replicas starting together on a new database can collide creating the migrations table
    // itself (before the migrator's lock exists); the loser tries again and finds it done.
    Layer.retry(Schedule.spaced("500 millis").pipe(Schedule.intersect(Schedule.recurs(5))))
  )
  return Ports.pipe(Layer.provideMerge(migrate.pipe(Layer.provideMerge(client))))
}
