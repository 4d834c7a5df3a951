/**
 * The dispatcher's writes, set-wise: a claimed batch is held, committed and
 * moved on in a few statements instead of a few per action. Every update is
 * guarded by the lease (`lease_owner = worker`) and by the status this worker
 * expects, so a lapsed lease or a cancellation that won the row makes the
 * update skip that row rather than overwrite it. Status changes go through
 * the store's one status writer (store/StatusChanges.ts), as providers'
 * reports do.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { AllowancePeriods, DispatchRules, type EventOutbox, Events, Segments, type StorageError } from "@parley/core/internal"
import { Effect, type ParseResult, Schema } from "effect"
import { DbInt } from "../store/rows.js"
import { RowLocks } from "../store/RowLocks.js"
import { addAllowanceUsage, UsageRow } from "../store/SqlOrganisations.js"
import * as StatusChanges from "../store/StatusChanges.js"
import { transactions } from "../store/Transactions.js"
import { type ClaimedRow, fail, type Transition } from "./ClaimedAction.js"

const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.Union(DbInt, Schema.String) })))
const Allowances = Schema.Struct({
  sms_allowance: Schema.NullOr(DbInt),
  call_allowance: Schema.NullOr(DbInt),
  timezone: Schema.String
})
const decodeAllowances = Schema.decodeUnknown(Schema.Array(Allowances))
const decodeUsage = Schema.decodeUnknown(Schema.Array(UsageRow))

const idsOf = (rows: ReadonlyArray<{ readonly id: number | string }>) => rows.map((r) => r.id)
const idSet = (rows: ReadonlyArray<{ readonly id: number | string }>) => new Set(rows.map((r) => String(r.id)))

/** Units granted out of `wanted` by an allowance with `left` units (null: unlimited). */
export const granted = (wanted: number, left: number | null): number => (left === null ? wanted : Math.max(0, Math.min(wanted, left)))

/**
 * How many of the texts (in due order) an allowance with `left` units pays for, each taking its SMS segments,
 * and the units they take: the first that does not fit stops the count, so a later, shorter text never
 * overtakes it.
 */
export const grantedTexts = (
  texts: ReadonlyArray<Pick<ClaimedRow, "type" | "body">>,
  left: number | null
): { readonly count: number; readonly units: number } => {
  let count = 0
  let units = 0
  for (const text of texts) {
    const needed = Segments.allowanceUnits(text.type, text.body)
    if (left !== null && units + needed > left) break
    count++
    units += needed
  }
  return { count, units }
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Two transactions a round at least (commit, status changes): on SQLite the connection's lighter one.
  const transaction = yield* transactions
  const outbox = yield* Effect.context<EventOutbox.EventOutbox>()
  const statusChanges = yield* StatusChanges.make
  const locks = yield* RowLocks

  /** Outside the sending window: back in the queue until it opens. */
  const hold = (worker: string, until: number, rows: ReadonlyArray<ClaimedRow>) =>
    rows.length === 0 ? Effect.void : sql`UPDATE actions SET work_at = ${until}, lease_owner = NULL, lease_until = NULL
      WHERE id IN ${sql.in(idsOf(rows))} AND lease_owner = ${worker} AND status = 'Queued' AND charged_at IS NULL`

  /**
   * Applies the status changes this worker still may (lease held, status as expected) in one statement of the
   * store's status writer, and appends the events of those that changed status. Call it inside a transaction.
   */
  const apply = (worker: string, transitions: ReadonlyArray<Transition>) =>
    Effect.gen(function*() {
      if (transitions.length === 0) return
      // `after` is the row as this worker means it to be: under its lease, a field the transition did not
      // change is what the row already holds.
      const changed = yield* statusChanges.write(
        transitions.map(({ after, before, workAt }) => ({
          orgId: after.org_id,
          id: after.id,
          expected: before.status,
          status: after.status,
          workAt,
          modified: after.modified,
          sid: after.sid,
          providerStatus: after.provider_status,
          errorMessage: after.error_message,
          body: after.body,
          audioFileId: after.audio_file_id,
          at: after.at
        })),
        { leaseOwner: worker }
      )
      const expected = new Map(transitions.map(({ before }) => [String(before.id), before.status]))
      const events = changed.flatMap((action) => {
        if (action.status === expected.get(action.id)) return []
        const type = Events.eventForStatus(action.kind, action.status)
        return type === null ? [] : [{ type, action }]
      })
      yield* Effect.provide(Events.emitAll(events), outbox)
    })

  /**
   * Commits the rows to their send: marks them charged (no longer cancellable) and takes their allowance
   * (a text its SMS segments, a call one unit; a keyword's answer none), per organisation, atomically. Rows a cancellation won are
   * skipped; committed rows beyond what is left of a finite allowance fail. Returns the committed rows that
   * got their units, as they now are.
   */
  const commit = (
    worker: string,
    rows: ReadonlyArray<ClaimedRow>,
    now: number,
    modified: string
  ): Effect.Effect<ReadonlyArray<ClaimedRow>, SqlError.SqlError | ParseResult.ParseError | StorageError> =>
    rows.length === 0 ? Effect.succeed([]) : transaction(Effect.gen(function*() {
      // Mirror of the cancellation's condition: only one of the two can move a Queued, uncommitted row.
      const won = idSet(
        yield* Effect.flatMap(
          sql`UPDATE actions SET charged_at = ${now}, status = CASE WHEN kind = 'message' THEN 'Sending' ELSE 'Queued' END
              WHERE id IN ${sql.in(idsOf(rows))} AND lease_owner = ${worker} AND status = 'Queued' AND charged_at IS NULL
              RETURNING id`,
          decodeIds
        )
      )
      const committed: Array<ClaimedRow> = rows.filter((r) => won.has(String(r.id))).map((r) => ({
        ...r,
        charged_at: now,
        status: r.kind === "message" ? "Sending" : "Queued"
      }))
      const sent: Array<ClaimedRow> = []
      const refused: Array<Transition> = []
      // Organisations in id order, so that concurrent replicas lock them in the same order.
      const orgIds = [...new Set(committed.map((r) => r.org_id))].sort()
      for (const orgId of orgIds) {
        // Keywords' answers take no allowance (DispatchRules.isKeywordReply).
        const mine = committed.filter((r) => r.org_id === orgId)
        sent.push(...mine.filter((r) => r.keyword_reply_to !== null))
        const texts = mine.filter((r) => r.kind === "message" && r.keyword_reply_to === null)
        const calls = mine.filter((r) => r.kind === "ai_call")
        // Locked until the commit, so two replicas never grant the same units.
        yield* locks.lockOrganisation(orgId)
        const [limits] = yield* Effect.flatMap(
          sql`SELECT sms_allowance, call_allowance, timezone FROM organisations WHERE id = ${orgId}`,
          decodeAllowances
        )
        // A deleted organisation has nothing left to grant.
        let textGrant = { count: 0, units: 0 }
        let callUnits = 0
        if (limits !== undefined) {
          // Units count in the month the send is committed in, in the organisation's time zone.
          const period = AllowancePeriods.periodOf(now, limits.timezone)
          const [used] = yield* Effect.flatMap(
            sql`SELECT sms_used, call_used FROM allowance_usage WHERE org_id = ${orgId} AND period = ${period}`,
            decodeUsage
          )
          textGrant = grantedTexts(texts, AllowancePeriods.remaining(limits.sms_allowance, used?.sms_used ?? 0))
          callUnits = granted(calls.length, AllowancePeriods.remaining(limits.call_allowance, used?.call_used ?? 0))
          yield* addAllowanceUsage(sql, orgId, period, textGrant.units, callUnits)
        }
        const textUnits = textGrant.count
        // The rows came in claim order (due time first), so the earliest due get the units.
        sent.push(...texts.slice(0, textUnits), ...calls.slice(0, callUnits))
        for (const r of [...texts.slice(textUnits), ...calls.slice(callUnits)]) {
          refused.push(fail(r, DispatchRules.ALLOWANCE_FAILURE[r.kind], modified))
        }
      }
      yield* apply(worker, refused)
      return sent
    }))

  return { hold, apply, commit, transaction }
})
