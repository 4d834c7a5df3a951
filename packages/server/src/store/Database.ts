/**
 * The database: the SQL client for the configured store, tuned, migrated.
 *
 * Embedded SQLite (file `parley.db` in PARLEY_DATA_DIR) is the default.
 * WAL so readers never wait for the writer (the CLI and the server share the
 * file), synchronous=NORMAL (a commit survives a process crash; only an OS
 * crash or power loss can drop the last transactions), a busy timeout so a
 * CLI write and a server write queue instead of failing.
 *
 * `DATABASE_URL=postgres://…` selects Postgres, the store for several
 * replicas: the same migrations and repositories run on it (the few dialect
 * differences are `sql.onDialectOrElse` at their use). The migrator locks its
 * table, so replicas starting together migrate once. A database that is not
 * reachable at start is retried for a while (a replica may start before it);
 * once running, the pool reconnects by itself and requests answer 503 in the
 * meantime (see ErrorResponses).
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { SqliteMigrator } from "@effect/sql-sqlite-node"
import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { ServerConfig, type ServerSettings } from "../config/ServerConfig.js"
import { migrations } from "./migrations.js"
import * as MeteredPool from "./MeteredPool.js"
import { PgPool } from "./MeteredPool.js"
import * as SqliteDriver from "./SqliteDriver.js"

export const DATABASE_FILE = "parley.db"

const SqlitePragmas = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`PRAGMA busy_timeout = 5000`
    yield* sql`PRAGMA synchronous = NORMAL`
    yield* sql`PRAGMA foreign_keys = ON`
  })
)

/**
 * The data directory is the operator's alone (0700) and the database file too (0600): it holds every
 * organisation's messages. SQLite gives its -wal and -shm files the database file's mode.
 */
const prepareDataDir = (dataDir: string): string => {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  chmodSync(dataDir, 0o700)
  const file = join(dataDir, DATABASE_FILE)
  closeSync(openSync(file, "a", 0o600))
  chmodSync(file, 0o600)
  return file
}

const sqlite = (config: ServerSettings) => {
  const client = SqliteDriver.layer(prepareDataDir(config.dataDir))
  const migrate = SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(migrations) }).pipe(
    Layer.provide(NodeContext.layer)
  )
  return Layer.mergeAll(migrate, SqlitePragmas).pipe(Layer.provideMerge(client))
}

/** 1 s, 2 s, 4 s … capped at 5 s, for about 30 s in all. */
const startRetry = Schedule.exponential("1 second").pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.upTo("30 seconds")
)

const postgres = (config: ServerSettings, url: NonNullable<Option.Option.Value<ServerSettings["databaseUrl"]>>) => {
  // The pool is Parley's own (MeteredPool) so that the metrics can see it; in the context as PgPool.
  const client = Layer.unwrapScoped(Effect.map(
    MeteredPool.acquire({
      url,
      maxConnections: config.dbPoolSize,
      // Fail a request in seconds when the database is unreachable, rather than hang it.
      connectTimeout: Duration.seconds(5),
      idleTimeout: Duration.seconds(30),
      applicationName: "parley"
    }),
    (pool) =>
      Layer.merge(PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "parley" }), Layer.succeed(PgPool, pool))
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
  return migrate.pipe(Layer.provideMerge(client))
}

/**
 * The SqlClient, connected and migrated. On SQLite the context also holds the connection itself
 * (SqliteDriver.SqliteHandle), which the settings cache reads; on Postgres the pool (MeteredPool.PgPool),
 * which the metrics read.
 */
export const DatabaseLive: Layer.Layer<SqlClient.SqlClient, unknown, ServerConfig> = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config): Layer.Layer<SqlClient.SqlClient, unknown> =>
    Option.match(config.databaseUrl, {
      onNone: () => sqlite(config),
      onSome: (url) => postgres(config, url)
    }))
)
