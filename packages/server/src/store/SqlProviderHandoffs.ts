/**
 * Which provider an action was handed to, and under which provider id: what a provider's callback is
 * checked against before it may move the action (a report only moves an action that was handed to that
 * provider, and only under the id the provider gave it), and how a callback that names only the
 * provider's id (a call reported without Parley's metadata) finds its action.
 */
import { SqlClient } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { type ActionStore, DispatchPlan } from "@parley/core/internal"

type ActionKind = ActionStore.ActionKind
import { Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "./rows.js"

export interface Handoff {
  readonly actionId: string
  readonly kind: ActionKind
  /** The provider's id for the action, once known. */
  readonly sid: string | null
  /** The provider the action was handed to (its journal row), or null when it never was. */
  readonly provider: string | null
}

/** What a provider said about an action it ended without placing it. */
export interface NotPlaced {
  /** The provider's id for the call (or message) it ended. */
  readonly sid: string
  readonly providerStatus: string
}

export interface ProviderHandoffsService {
  readonly byAction: (orgId: string, actionId: string) => Effect.Effect<Option.Option<Handoff>, StorageError>
  readonly bySid: (orgId: string, kind: ActionKind, sid: string) => Effect.Effect<Option.Option<Handoff>, StorageError>
  /**
   * Puts back in the queue an action its provider ended without placing it, for a reason that passes (its
   * concurrency limit): the attempt is journalled as not sent (the next one sends without looking), the
   * provider id is forgotten (a late report about the ended call no longer matches), and the action is due
   * again after DispatchPlan's backoff for its attempts. Only while the action is still waiting under that
   * id (`not_waiting` otherwise: its provider's answer is still on its way, and the recheck after it will
   * tell again), and while attempts are left (`exhausted` after DispatchPlan.MAX_ATTEMPTS: the caller then
   * applies the provider's report, Failed).
   */
  readonly placeAgain: (
    orgId: string,
    actionId: string,
    notPlaced: NotPlaced,
    now: number
  ) => Effect.Effect<"again" | "not_waiting" | "exhausted", StorageError>
}

export class ProviderHandoffs extends Context.Tag("@parley/server/store/ProviderHandoffs")<
  ProviderHandoffs,
  ProviderHandoffsService
>() {}

const Row = Schema.Struct({
  id: Schema.Union(DbInt, Schema.String),
  kind: Schema.Literal("message", "ai_call"),
  sid: NullableString,
  provider: NullableString
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))
const decodeAttempts = Schema.decodeUnknown(Schema.Array(Schema.Struct({ attempts: DbInt })))

const toHandoff = (row: typeof Row.Type): Handoff => ({
  actionId: String(row.id),
  kind: row.kind,
  sid: row.sid,
  provider: row.provider
})

export const layer = Layer.effect(
  ProviderHandoffs,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = (rows: ReadonlyArray<typeof Row.Type>) => Option.map(Option.fromNullable(rows[0]), toHandoff)
    return ProviderHandoffs.of({
      byAction: (orgId, actionId) =>
        /^\d{1,18}$/.test(actionId)
          ? storage("providers.handoff")(Effect.map(
            Effect.flatMap(
              sql`SELECT a.id, a.kind, a.sid, s.provider FROM actions a
                  LEFT JOIN provider_submissions s ON s.action_id = ${actionId}
                  WHERE a.org_id = ${orgId} AND a.id = ${Number(actionId)}`,
              decodeRows
            ),
            first
          ))
          : Effect.succeed(Option.none()),
      placeAgain: (orgId, actionId, { providerStatus, sid }, now) =>
        !/^\d{1,18}$/.test(actionId)
          ? Effect.succeed("not_waiting" as const)
          : storage("providers.placeAgain")(Effect.gen(function*() {
            const [journal] = yield* Effect.flatMap(
              sql`SELECT attempts FROM provider_submissions WHERE action_id = ${actionId}`,
              decodeAttempts
            )
            if (journal === undefined) return "not_waiting" as const
            if (journal.attempts >= DispatchPlan.MAX_ATTEMPTS) return "exhausted" as const
            // Waiting under this id: not yet reported placed (Ringing at most), nor final.
            const waiting = sql`SELECT 1 FROM actions WHERE org_id = ${orgId} AND id = ${Number(actionId)} AND sid = ${sid}
              AND status IN ('Queued', 'Ringing')`
            // The journal first: a crash before the action's update leaves it waiting under the id, to be put
            // back when its provider is asked again; the other order could have it reconciled with the ended call.
            const journalled = yield* sql`UPDATE provider_submissions SET last_outcome = 'not_sent'
                WHERE action_id = ${actionId} AND EXISTS (${waiting}) RETURNING action_id`
            if (journalled.length === 0) return "not_waiting" as const
            const due = now + DispatchPlan.backoffMs(journal.attempts, null)
            const placed = yield* sql`UPDATE actions SET status = 'Queued', sid = NULL, provider_status = ${providerStatus},
                work_at = ${due}, lease_owner = NULL, lease_until = NULL, modified = ${new Date(now).toISOString()}
              WHERE org_id = ${orgId} AND id = ${Number(actionId)} AND sid = ${sid} AND status IN ('Queued', 'Ringing')
              RETURNING id`
            return placed.length > 0 ? "again" as const : "not_waiting" as const
          })),
      bySid: (orgId, kind, sid) =>
        storage("providers.handoffBySid")(Effect.map(
          Effect.flatMap(
            sql`SELECT a.id, a.kind, a.sid, s.provider FROM actions a
                LEFT JOIN provider_submissions s ON s.action_id = CAST(a.id AS TEXT)
                WHERE a.org_id = ${orgId} AND a.sid = ${sid} AND a.kind = ${kind}`,
            decodeRows
          ),
          first
        ))
    })
  })
)
