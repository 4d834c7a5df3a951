/**
 * The dispatcher's queue on Postgres: replicas claim concurrently, and `FOR UPDATE SKIP LOCKED` lets each
 * take rows no other is taking instead of queueing behind it, so no two ever take the same row.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { dueTime, WorkQueue } from "../WorkQueue.js"

export const layer: Layer.Layer<WorkQueue, never, SqlClient.SqlClient> = Layer.effect(
  WorkQueue,
  Effect.map(SqlClient.SqlClient, (sql) =>
    WorkQueue.of({
      claimer: (columns, limit, rechecks) => {
        const returning = sql.literal(columns.join(", "))
        return ({ now, owner, until }) =>
          sql`WITH due AS (
                SELECT id FROM actions
                WHERE work_at IS NOT NULL AND work_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
                ORDER BY work_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
              ), rechecks AS (
                SELECT id FROM actions
                WHERE work_at IS NOT NULL AND sid IS NOT NULL AND work_at <= ${now}
                  AND (lease_until IS NULL OR lease_until <= ${now})
                ORDER BY work_at LIMIT ${rechecks} FOR UPDATE SKIP LOCKED
              )
              UPDATE actions SET lease_owner = ${owner}, lease_until = ${until}
              WHERE id IN (SELECT id FROM due UNION SELECT id FROM rechecks)
              RETURNING ${returning}`.values
      },
      nextDue: (now) =>
        Effect.map(
          sql`SELECT work_at FROM actions WHERE work_at IS NOT NULL AND (lease_until IS NULL OR lease_until <= ${now})
              ORDER BY work_at LIMIT 1`.values,
          dueTime
        )
    }))
)
