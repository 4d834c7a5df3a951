/**
 * The SQL that differs between SQLite and Postgres in the schema the migrations write, in one place.
 * Everything else the repositories write is portable (0/1 booleans, BIGINT epoch milliseconds, JSON as
 * text, `ON CONFLICT … RETURNING`, row-value `IN`); what the running server does differently per store
 * (row locks, the queues' claims, transactions, fast paths) is answered by the store's adapters through
 * its ports (store/Database.ts).
 */
import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"

/** The auto-increment primary key of `actions` and `events`. */
export const autoIncrementKey = (sql: SqlClient.SqlClient): Fragment =>
  sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })
