/**
 * The store, chosen once for the process: the one place that asks which
 * database Parley runs on. Embedded SQLite (file `parley.db` in
 * PARLEY_DATA_DIR) is the default (store/sqlite/); `DATABASE_URL=postgres://…`
 * selects Postgres, the store for several replicas (store/postgres/). Both
 * run the same migrations and the same portable repositories (store/Sql*.ts);
 * what differs per dialect is answered by the chosen adapter through the
 * store's ports: Transactions, WorkQueue, DirectReads, SettingsCache,
 * CreationWrites, RowLocks, ConnectionPool, the core's IdempotencyStore and
 * RateLimitStore.
 */
import type { SqlClient } from "@effect/sql"
import type { IdempotencyStore, RateLimitStore } from "@parley/core/domain"
import { Effect, Layer, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import type { ConnectionPool } from "./ConnectionPool.js"
import type { CreationWrites } from "./CreationWrites.js"
import type { DirectReads } from "./DirectReads.js"
import * as PostgresStore from "./postgres/PostgresStore.js"
import type { RowLocks } from "./RowLocks.js"
import type { SettingsCache } from "./SettingsCache.js"
import * as SqliteStore from "./sqlite/SqliteStore.js"
import type { Transactions } from "./Transactions.js"
import type { WorkQueue } from "./WorkQueue.js"

export { DATABASE_FILE } from "./sqlite/SqliteStore.js"

/** What every store adapter provides. */
export type StorePorts =
  | SqlClient.SqlClient
  | Transactions
  | WorkQueue
  | DirectReads
  | SettingsCache
  | CreationWrites
  | RowLocks
  | ConnectionPool
  | IdempotencyStore.IdempotencyStore
  | RateLimitStore.RateLimitStore

/**
 * The configured store, connected and migrated, with its ports. On SQLite the context also holds the
 * connection itself (SqliteDriver.SqliteHandle, for the tests' statement guards).
 */
export const DatabaseLive: Layer.Layer<StorePorts, unknown, ServerConfig> = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config): Layer.Layer<StorePorts, unknown> =>
    Option.match(config.databaseUrl, {
      onNone: () => SqliteStore.layer(config.dataDir),
      onSome: (url) => PostgresStore.layer({ url, poolSize: config.dbPoolSize })
    }))
)
