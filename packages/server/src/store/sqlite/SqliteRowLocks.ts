/**
 * Row locks on the embedded SQLite store: none needed. One process writes, one transaction at a time, and a
 * writing transaction holds the database's single write lock until it ends, so locking an organisation runs
 * no statement and a claim skips nothing.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { RowLocks } from "../RowLocks.js"

export const layer: Layer.Layer<RowLocks, never, SqlClient.SqlClient> = Layer.effect(
  RowLocks,
  Effect.map(SqlClient.SqlClient, (sql) =>
    RowLocks.of({
      lockOrganisation: () => Effect.void,
      skipLocked: sql.literal("")
    }))
)
