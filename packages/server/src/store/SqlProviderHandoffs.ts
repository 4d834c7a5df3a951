/**
 * Which provider an action was handed to, and under which provider id: what a provider's callback is
 * checked against before it may move the action (a report only moves an action that was handed to that
 * provider, and only under the id the provider gave it), and how a callback that names only the
 * provider's id (a call reported without Parley's metadata) finds its action.
 */
import { SqlClient } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import type { ActionStore } from "@parley/core/internal"

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

export interface ProviderHandoffsService {
  readonly byAction: (orgId: string, actionId: string) => Effect.Effect<Option.Option<Handoff>, StorageError>
  readonly bySid: (orgId: string, kind: ActionKind, sid: string) => Effect.Effect<Option.Option<Handoff>, StorageError>
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
