/**
 * The dispatcher's queue in the `actions` table, as a port: claiming the due work nobody holds under a
 * lease, and asking when the next work falls due. Each store adapter states it in its own SQL: on Postgres
 * replicas claim concurrently (`FOR UPDATE SKIP LOCKED`, store/postgres/PgWorkQueue.ts); the embedded
 * SQLite store runs both as prepared statements (store/sqlite/SqliteWorkQueue.ts).
 */
import type { SqlError } from "@effect/sql"
import { Context, type Effect } from "effect"

/** Who takes the work, and until when: the lease an interrupted worker's claim lapses after. */
export interface Lease {
  readonly owner: string
  readonly now: number
  readonly until: number
}

export interface WorkQueueService {
  /**
   * A claim of the `limit` actions whose work is due soonest and that no live lease holds, and besides them
   * of up to `rechecks` due actions a provider already has (their id recorded: rechecks), leased in one
   * atomic statement; its rows are the `columns`' values, in their order, in no particular row order. The
   * share keeps rechecks going while a backlog of sends due before them fills every claim.
   */
  readonly claimer: (
    columns: ReadonlyArray<string>,
    limit: number,
    rechecks: number
  ) => (lease: Lease) => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>
  /** When the next action nobody holds falls due (epoch ms), if any. */
  readonly nextDue: (now: number) => Effect.Effect<number | null, SqlError.SqlError>
}

export class WorkQueue extends Context.Tag("@parley/server/store/WorkQueue")<WorkQueue, WorkQueueService>() {}

/** A due time as the database returns it (BIGINT: a number on SQLite, a decimal string from node-postgres). */
export const dueTime = (rows: ReadonlyArray<ReadonlyArray<unknown>>): number | null => {
  const workAt = Number(rows[0]?.[0])
  return Number.isFinite(workAt) ? workAt : null
}
