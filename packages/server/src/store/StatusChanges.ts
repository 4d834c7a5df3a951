/**
 * The one writer of an action's status. Every status change is this one set-wise statement: the
 * dispatcher's batched transitions (dispatch/ActionBatches.ts) and a provider's reports (the core's
 * ProviderReports, through SqlActionStore.applyProviderReport, a batch of one). Whoever decides a change
 * (the core for reports, the dispatcher's lifecycle for its own steps) decides it from the status it read;
 * the change applies only while the row still shows that status — and, for the dispatcher, while its worker
 * still holds the lease — so of two writers racing for a row one changes it and the other finds it moved.
 *
 * What a change does to the row, whoever writes it:
 * - status, work_at and modified take the change's values; the lease is released (the action's next step is
 *   the queue's, at work_at, or a provider's report);
 * - the provider's id is recorded only when the action has none yet (a report can beat the send's answer,
 *   and a provider's id for an action never changes);
 * - any other field left undefined or null keeps its value, but for the error message, which null clears.
 * The rows that changed come back as they now are, for the events of the same transaction.
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import type { RecordStatus } from "@parley/core"
import type { ActionStore } from "@parley/core/internal"
import { Effect, type ParseResult, Schema } from "effect"
import { type ActionColumn, readActionValues, valuesToObjects } from "./ActionRowReader.js"
// SqlActionStore writes through this module and defines the row this module returns: the two import each
// other, so nothing of SqlActionStore is used here before `make` runs (no module-level use).
import { ActionRow, toAction } from "./SqlActionStore.js"

/** One action's status change. */
export interface StatusChange {
  readonly orgId: string
  readonly id: string | number
  /** The status the change was decided from: it applies only while the row still shows it. */
  readonly expected: RecordStatus
  readonly status: RecordStatus
  /** When the dispatcher's queue looks at the action again (epoch ms); null: it leaves the queue. */
  readonly workAt: number | null
  readonly modified: string
  /** The provider's id: recorded only when the action has none yet. */
  readonly sid?: string | null | undefined
  readonly providerStatus?: string | null | undefined
  readonly errorMessage?: string | null | undefined
  readonly body?: string | undefined
  readonly audioFileId?: string | null | undefined
  readonly at?: string | undefined
}

export interface WriteOptions {
  /** Apply only to rows this worker still leases (the dispatcher's changes). */
  readonly leaseOwner?: string | undefined
}

export interface StatusChangesService {
  /**
   * Applies the changes still applicable, at most one per action, in one statement: the actions that changed,
   * as they now are, in the order of `changes`. Run it in the transaction that appends their events.
   */
  readonly write: (
    changes: ReadonlyArray<StatusChange>,
    options?: WriteOptions
  ) => Effect.Effect<ReadonlyArray<ActionStore.Action>, SqlError.SqlError | ParseResult.ParseError>
  /** The statement `write` runs (the tests read its query plan). */
  readonly statement: (changes: ReadonlyArray<StatusChange>, options?: WriteOptions) => Statement.Statement<object>
}

export const make: Effect.Effect<StatusChangesService, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = Object.keys(ActionRow.fields) as ReadonlyArray<ActionColumn>
  const returning = sql.literal(columns.join(", "))
  const decodeRows = Schema.decodeUnknown(Schema.Array(ActionRow))
  const readRows = (rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
    const read = readActionValues(columns, rows)
    return read === undefined ? decodeRows(valuesToObjects(columns, rows)) : Effect.succeed(read)
  }

  const statement = (changes: ReadonlyArray<StatusChange>, options?: WriteOptions) => {
    // Casts: Postgres types a VALUES list's parameters as text unless told otherwise. `keep_error` tells a
    // kept error message (undefined) from a cleared one (null), which the value alone cannot.
    const values = changes.map((c) =>
      sql`(CAST(${Number(c.id)} AS BIGINT), ${c.orgId}, ${c.expected}, ${c.status}, CAST(${c.workAt} AS BIGINT),
           ${c.sid ?? null}, ${c.providerStatus ?? null}, CAST(${c.errorMessage === undefined ? 1 : 0} AS INTEGER),
           ${c.errorMessage ?? null}, ${c.body ?? null}, ${c.audioFileId ?? null}, ${c.at ?? null}, ${c.modified})`
    )
    // `actions.id IN (…)` repeats the join's ids on purpose: without it SQLite's planner scans the whole
    // actions table once per batch (SCAN actions + a bloom filter on the VALUES list, see EXPLAIN QUERY
    // PLAN), so each batch cost grew with the table (docs/benchmarks.md). With it both stores look the
    // rows up by primary key.
    const ids = changes.map((c) => Number(c.id))
    const leased = options?.leaseOwner === undefined
      ? sql.literal("")
      : sql`AND actions.lease_owner = ${options.leaseOwner}`
    // The changes' columns are named apart from the table's, so that RETURNING names only the row's.
    return sql`WITH changes (change_id, change_org, expected_status, new_status, new_work_at, new_sid,
                             new_provider_status, keep_error, new_error_message, new_body, new_audio_file_id,
                             new_at, new_modified)
          AS (VALUES ${sql.csv(values)})
        UPDATE actions SET status = changes.new_status, work_at = changes.new_work_at,
          sid = COALESCE(actions.sid, changes.new_sid),
          provider_status = COALESCE(changes.new_provider_status, actions.provider_status),
          error_message = CASE WHEN changes.keep_error = 1 THEN actions.error_message
                               ELSE changes.new_error_message END,
          body = COALESCE(changes.new_body, actions.body),
          audio_file_id = COALESCE(changes.new_audio_file_id, actions.audio_file_id),
          at = COALESCE(changes.new_at, actions.at),
          modified = changes.new_modified, lease_owner = NULL, lease_until = NULL
        FROM changes
        WHERE actions.id = changes.change_id AND actions.org_id = changes.change_org
          AND actions.status = changes.expected_status ${leased} AND actions.id IN ${sql.in(ids)}
        RETURNING ${returning}`
  }

  const write: StatusChangesService["write"] = (changes, options) =>
    Effect.gen(function*() {
      if (changes.length === 0) return []
      const rows = yield* readRows(yield* statement(changes, options).values)
      // RETURNING gives no order; the callers' events follow their changes' order.
      const changed = new Map(rows.map((row) => [String(row.id), row]))
      return changes.flatMap((c) => {
        const row = changed.get(String(Number(c.id)))
        return row === undefined ? [] : [toAction(row)]
      })
    })

  return { write, statement }
})
