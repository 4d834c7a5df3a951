/**
 * The embedded SQLite store as one adapter: the connection (SqliteDriver), tuned and migrated, and every
 * store port that differs from Postgres answered the SQLite way — the fast paths on the connection itself
 * (settings from memory, direct reads, the creation's inserts, idempotency recorded in the creation's own
 * transaction, the dispatcher's queue as prepared statements), the connection's lighter transactions,
 * request counters in memory (one process serves the store), no row locks (one writer at a time) and no
 * connection pool to watch.
 *
 * WAL so readers never wait for the writer (the CLI and the server share the file), synchronous=NORMAL (a
 * commit survives a process crash; only an OS crash or power loss can drop the last transactions), a busy
 * timeout so a CLI write and a server write queue instead of failing.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { SqlClient } from "@effect/sql"
import { SqliteMigrator } from "@effect/sql-sqlite-node"
import { RateLimitStore } from "@parley/core/domain"
import { Effect, Layer, Option } from "effect"
import { ConnectionPool } from "../ConnectionPool.js"
import { migrations } from "../migrations.js"
import { Transactions } from "../Transactions.js"
import * as SqliteCreationWrites from "./SqliteCreationWrites.js"
import * as SqliteDirectReads from "./SqliteDirectReads.js"
import * as SqliteDriver from "./SqliteDriver.js"
import * as SqliteIdempotencyStore from "./SqliteIdempotencyStore.js"
import * as SqliteRowLocks from "./SqliteRowLocks.js"
import * as SqliteSettingsCache from "./SqliteSettingsCache.js"
import * as SqliteWorkQueue from "./SqliteWorkQueue.js"

export const DATABASE_FILE = "parley.db"

const Pragmas = Layer.effectDiscard(
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

const ConnectionTransactions = Layer.effect(
  Transactions,
  Effect.map(SqliteDriver.SqliteHandle, (handle) => ({ withTransaction: handle.withTransaction }))
)

/** The store's ports on the connection; built once the database is migrated. */
const Ports = Layer.mergeAll(
  ConnectionTransactions,
  SqliteWorkQueue.layer,
  SqliteDirectReads.layer,
  SqliteSettingsCache.layer,
  SqliteCreationWrites.layer,
  SqliteIdempotencyStore.layer,
  RateLimitStore.layerMemory,
  SqliteRowLocks.layer,
  Layer.succeed(ConnectionPool, Option.none())
)

/** The store in the data directory `dataDir`. */
export const layer = (dataDir: string) => {
  const connection = SqliteDriver.layer(prepareDataDir(dataDir))
  const migrate = SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(migrations) }).pipe(
    Layer.provide(NodeContext.layer)
  )
  return Ports.pipe(Layer.provideMerge(Layer.mergeAll(migrate, Pragmas).pipe(Layer.provideMerge(connection))))
}
