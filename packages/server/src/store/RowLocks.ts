/**
 * Row locks, as a port: what keeps concurrent writers of the same rows apart differs per store, so each
 * adapter answers it in its own SQL (store/sqlite/SqliteRowLocks.ts, store/postgres/PgRowLocks.ts). On
 * Postgres replicas write concurrently and lock rows; on SQLite a writing transaction already holds the
 * database's single write lock, so nothing more is needed.
 */
import type { SqlError } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Context, type Effect } from "effect"

export interface RowLocksService {
  /**
   * Locks the organisation's row until the transaction ends: decisions that must be taken one at a time per
   * organisation across replicas (granting its allowance, adopting a provider's candidate) wait for each
   * other. Call it inside a transaction, before reading what the decision depends on.
   */
  readonly lockOrganisation: (orgId: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * The end of a queue claim's inner SELECT (`… ORDER BY … LIMIT n ${skipLocked}`): rows another replica is
   * claiming at that moment are skipped instead of waited for, so replicas share a queue.
   */
  readonly skipLocked: Fragment
}

export class RowLocks extends Context.Tag("@parley/server/store/RowLocks")<RowLocks, RowLocksService>() {}
