/**
 * The SQL that differs between SQLite and Postgres, in one place. Everything
 * else the repositories write is portable (0/1 booleans, BIGINT epoch
 * milliseconds, JSON as text, `ON CONFLICT … RETURNING`, row-value `IN`).
 */
import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"

/** The auto-increment primary key of `actions` and `events`. */
export const autoIncrementKey = (sql: SqlClient.SqlClient): Fragment =>
  sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })

/**
 * The end of a work-queue claim's inner SELECT. On Postgres replicas claim
 * concurrently, and SKIP LOCKED lets each take rows no other is taking
 * instead of queueing behind it. SQLite has one writer at a time, so a claim
 * there cannot race and needs nothing.
 */
export const skipLocked = (sql: SqlClient.SqlClient): Fragment =>
  sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

/**
 * Locks the rows a SELECT reads until the transaction ends (Postgres), so two
 * replicas cannot both spend the same allowance. SQLite needs nothing: a
 * writing transaction already holds the database's single write lock.
 */
export const forUpdate = (sql: SqlClient.SqlClient): Fragment =>
  sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
