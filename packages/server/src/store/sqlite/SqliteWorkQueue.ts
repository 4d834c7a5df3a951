/**
 * The dispatcher's queue on the embedded SQLite store: the two statements every dispatcher round runs
 * whatever it finds, prepared, each one synchronous step. SQLite has one writer at a time, so a claim
 * cannot race another and needs no row locks.
 */
import { Effect, Layer } from "effect"
import { dueTime, WorkQueue } from "../WorkQueue.js"
import { SqliteHandle } from "./SqliteDriver.js"

export const layer: Layer.Layer<WorkQueue, never, SqliteHandle> = Layer.effect(
  WorkQueue,
  Effect.map(SqliteHandle, (handle) => {
    const next = handle.prepared(`SELECT work_at FROM actions
      WHERE work_at IS NOT NULL AND (lease_until IS NULL OR lease_until <= ?) ORDER BY work_at LIMIT 1`)
    return WorkQueue.of({
      claimer: (columns, limit, rechecks) => {
        const claim = handle.prepared(`UPDATE actions SET lease_owner = ?, lease_until = ?
          WHERE id IN (
            SELECT id FROM (
              SELECT id FROM actions WHERE work_at IS NOT NULL AND work_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
              ORDER BY work_at LIMIT ${limit}
            ) UNION SELECT id FROM (
              SELECT id FROM actions WHERE work_at IS NOT NULL AND sid IS NOT NULL AND work_at <= ?
                AND (lease_until IS NULL OR lease_until <= ?)
              ORDER BY work_at LIMIT ${rechecks}
            )
          )
          RETURNING ${columns.join(", ")}`)
        return ({ now, owner, until }) => handle.use(() => claim.values(owner, until, now, now, now, now))
      },
      nextDue: (now) => handle.use(() => dueTime(next.values(now)))
    })
  })
)
