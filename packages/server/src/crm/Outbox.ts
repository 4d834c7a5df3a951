/**
 * What every CRM's durable outboxes share (a write-back of statuses, the records of inbound texts): rows
 * claimed under a lease (SKIP LOCKED on Postgres, so replicas share the work), and how a failure is
 * treated — nothing the CRM may yet accept is ever dropped. An outage, a 429, a lapsed connection or a
 * missing module is retried with a backoff that doubles from 2 seconds up to MAX_BACKOFF_MS, for as long
 * as it takes (a reconnect makes everything due at once: the outbox's triggers). Only a refusal of the
 * record itself, which the same record will meet again, ends the retries — and is recorded where the
 * administrator looks: the connection's last error (`parley crm status`, the console's CRM page), the
 * metric `parley_<crm>_refused_total`, a `crm.record_refused` event and a warning in the log with the CRM's code.
 *
 * An outbox table has the columns `action_id` (key), `org_id`, `due_at`, `attempts`, `lease_until`
 * (epoch ms), and optionally `version` (a row whose version changed since its claim stays due).
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { ActionStore, type Crm, Events, type StorageError } from "@parley/core/internal"
import { Cause, Effect, Option, Schema } from "effect"
import { Metrics } from "../observability/Metrics.js"
import { DbInt } from "../store/rows.js"
import { RowLocks } from "../store/RowLocks.js"

export const MAX_BACKOFF_MS = 15 * 60_000

export const backoffMs = (attempts: number): number => Math.min(2000 * 2 ** Math.min(attempts, 20), MAX_BACKOFF_MS)

/** A refusal no retry can change: the record as Parley sends it is what the CRM refuses. */
export const isPermanent = (error: Crm.CrmError): boolean => error.reason === "rejected"

/** A claimed row: its key, organisation and attempts so far, and its version where the outbox keeps one. */
export const Claimed = Schema.Struct({
  action_id: Schema.String,
  org_id: Schema.String,
  attempts: DbInt,
  version: Schema.optional(DbInt)
})
export type Claimed = typeof Claimed.Type

/** The outbox in table `table`: claiming due rows under a lease, and putting back those not taken this time. */
export const makeOutbox = (table: string, options: { readonly leaseMs: number; readonly versioned: boolean }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { skipLocked } = yield* RowLocks
    const decode = Schema.decodeUnknown(Schema.Array(Claimed))
    const name = sql(table)
    const returning = options.versioned ? sql.literal("action_id, org_id, attempts, version") : sql.literal("action_id, org_id, attempts")

    /** Up to `limit` due rows (of one organisation, when given), oldest first, leased for `leaseMs`. */
    const claim = (now: number, limit: number, orgId?: string) =>
      Effect.flatMap(
        sql`UPDATE ${name} SET lease_until = ${now + options.leaseMs}
            WHERE action_id IN (SELECT action_id FROM ${name}
                                WHERE ${orgId === undefined ? sql.literal("") : sql`org_id = ${orgId} AND `}due_at <= ${now} AND lease_until < ${now}
                                ORDER BY due_at LIMIT ${limit} ${skipLocked})
            RETURNING ${returning}`,
        decode
      )

    /** Rows the CRM did not take this time: due again after their backoff. */
    const retryLater = (rows: ReadonlyArray<Claimed>, now: number): Effect.Effect<void, SqlError.SqlError> =>
      Effect.forEach(rows, (row) =>
        sql`UPDATE ${name} SET attempts = attempts + 1, due_at = ${now + backoffMs(row.attempts)}, lease_until = 0
            WHERE action_id = ${row.action_id}`, { discard: true })

    return { claim, retryLater }
  })

/** The CRM as its refusals name it. */
export interface RefusingCrm {
  readonly name: string
  readonly vendor: string
  /** The connection's last error (what `crm status` and the console show). */
  readonly recordError: (orgId: string, message: string | null, at: string) => Effect.Effect<void, StorageError>
}

/** Records a record Parley gave up on (see the module's comment). */
export const recordRefusal = (
  crm: RefusingCrm,
  outbox: "writeback" | "inbound" | "optout",
  orgId: string,
  /** The action's id; for the opt-out outbox, the number whose opt-out the CRM refused. */
  actionId: string,
  refusal: { readonly code: string; readonly field?: string | undefined },
  now: number
) =>
  Effect.gen(function*() {
    const what = outbox === "writeback" ? "a write-back of action" : outbox === "inbound" ? "the record of inbound text" : "the opt-out of"
    const field = refusal.field === undefined ? "" : ` on field ${refusal.field}`
    yield* Effect.ignore(crm.recordError(
      orgId,
      `${crm.vendor} refused ${what} ${actionId} for good (${refusal.code}${field}); Parley keeps the action, ${crm.vendor} does not have it.`,
      new Date(now).toISOString()
    ))
    const metrics = yield* Effect.serviceOption(Metrics)
    if (Option.isSome(metrics)) metrics.value.crmRefused(crm.name, outbox, refusal.code)
    // Where an integration hears of it: the action's own record as the event's data (an opt-out has none).
    if (outbox !== "optout") {
      const action = yield* ActionStore.ActionStore.pipe(Effect.flatMap((store) => store.findAction(orgId, actionId)))
      if (Option.isSome(action)) yield* Effect.ignore(Events.emit("crm.record_refused", action.value))
    }
    yield* Effect.annotateLogs(Effect.logWarning(`${crm.name} refused a record for good`), {
      outbox,
      orgId,
      actionId,
      [`${crm.name}Code`]: refusal.code,
      ...(refusal.field === undefined ? {} : { field: refusal.field })
    })
  })

/**
 * Records a record the CRM refused for now, for a reason an administrator can mend (a permission the
 * connected user lacks): kept and retried with the outbox's backoff, and named where the administrator looks
 * (`crm status`, the console) and in the log with the CRM's code, so that it does not wait unseen.
 */
export const recordHeld = (
  crm: RefusingCrm,
  outbox: "writeback" | "inbound" | "optout",
  orgId: string,
  actionId: string,
  refusal: { readonly code: string; readonly field?: string | undefined },
  now: number
) =>
  Effect.gen(function*() {
    const what = outbox === "writeback" ? "a write-back of action" : outbox === "inbound" ? "the record of inbound text" : "the opt-out of"
    const field = refusal.field === undefined ? "" : `: ${refusal.field}`
    yield* Effect.ignore(crm.recordError(
      orgId,
      `${crm.vendor} refused ${what} ${actionId} (${refusal.code}${field}); Parley retries it until the connected user is given the permission.`,
      new Date(now).toISOString()
    ))
    yield* Effect.annotateLogs(Effect.logWarning(`${crm.name} refused a record for now`), {
      outbox,
      orgId,
      actionId,
      [`${crm.name}Code`]: refusal.code,
      ...(refusal.field === undefined ? {} : { field: refusal.field })
    })
  })

/**
 * An outbox's loop in a server process: a round after another, at once while a round takes a whole claim,
 * else after `pollMs`. A failed round is logged by kind only (a cause could carry the CRM's answer).
 */
export const outboxLoop = <E extends { readonly _tag: string }, R>(
  what: string,
  round: Effect.Effect<number, E, R>,
  options: { readonly claim: number; readonly pollMs: number }
) =>
  Effect.forkScoped(Effect.forever(
    Effect.flatMap(
      Effect.catchAllCause(round, (cause) =>
        Effect.as(
          Effect.annotateLogs(Effect.logWarning(`${what} round failed`), {
            cause: Cause.isFailType(cause) ? String(cause.error._tag) : "defect"
          }),
          0
        )),
      (taken) => (taken >= options.claim ? Effect.void : Effect.sleep(options.pollMs))
    )
  ))
