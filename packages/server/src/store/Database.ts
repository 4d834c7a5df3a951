/**
 * The database: the SQL client for the configured store, tuned, migrated.
 * Embedded SQLite (file `parley.db` in PARLEY_DATA_DIR) is the default.
 *
 * SQLite settings: WAL so readers never wait for the writer (the CLI and the
 * server share the file), synchronous=NORMAL (a commit survives a process
 * crash; only an OS crash or power loss can drop the last transactions), a
 * busy timeout so a CLI write and a server write queue instead of failing.
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { migrations } from "./migrations.js"

export const DATABASE_FILE = "parley.db"

const SqliteLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    mkdirSync(config.dataDir, { recursive: true })
    return SqliteClient.layer({ filename: join(config.dataDir, DATABASE_FILE) })
  })
)

const SqlitePragmas = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`PRAGMA busy_timeout = 5000`
    yield* sql`PRAGMA synchronous = NORMAL`
    yield* sql`PRAGMA foreign_keys = ON`
  })
)

const Migrations = SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeContext.layer)
)

/** The SqlClient, after pragmas and migrations have run. */
export const DatabaseLive: Layer.Layer<SqlClient.SqlClient, unknown, ServerConfig> = Layer.mergeAll(
  Migrations,
  SqlitePragmas
).pipe(Layer.provideMerge(SqliteLive))
