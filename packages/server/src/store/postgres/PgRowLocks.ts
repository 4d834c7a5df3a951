/**
 * Row locks on Postgres, where replicas write concurrently: `FOR UPDATE` holds an organisation's row until
 * the transaction ends, and `FOR UPDATE SKIP LOCKED` lets each replica claim queue rows no other is claiming.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { RowLocks } from "../RowLocks.js"

export const layer: Layer.Layer<RowLocks, never, SqlClient.SqlClient> = Layer.effect(
  RowLocks,
  Effect.map(SqlClient.SqlClient, (sql) =>
    RowLocks.of({
      lockOrganisation: (orgId) => Effect.asVoid(sql`SELECT id FROM organisations WHERE id = ${orgId} FOR UPDATE`),
      skipLocked: sql.literal("FOR UPDATE SKIP LOCKED")
    }))
)
