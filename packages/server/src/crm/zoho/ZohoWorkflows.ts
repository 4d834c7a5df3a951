/**
 * Which of Parley's writes to Zoho let the organisation's Zoho workflow rules run.
 *
 * Zoho runs workflow rules on an API write only when the request says `trigger: ["workflow"]`; with
 * `trigger: []` nothing runs. Parley sends `["workflow"]`, while the organisation's setting is on (the
 * default; `parley crm update ORG --workflows on|off`, the console's CRM page), for exactly two kinds of
 * write, the ones a sales team automates on:
 * - the creation of an inbound record (a reply arrived: "notify the owner");
 * - the first write of a record's final status (Delivered, Undelivered, Failed, Cancelled, Completed,
 *   No Answer, Busy: "create a task when a call ends No Answer").
 * Every other write (an outbound record's creation, intermediate statuses, a transcript or a recording
 * written after the final status) keeps `trigger: []`, so rules on Parley_Messages do not run on Parley's
 * bookkeeping. A write-back batch mixing both kinds is sent as two PUTs.
 */
import { SqlClient } from "@effect/sql"
import { FINAL_STATUSES } from "@parley/core/internal"
import { Crm, type StorageError } from "@parley/core/domain"
import { Effect } from "effect"
import { storage } from "../../store/rows.js"
import { type CrmAnswer, dataOf, text } from "./ZohoApi.js"
import type { ZohoSessionService } from "./ZohoSession.js"
import { MESSAGES_MODULE } from "./ZohoSchema.js"

/** The value of Zoho's `trigger` that runs workflow rules (the others, approval and blueprint, stay off). */
export const WORKFLOW_TRIGGER: ReadonlyArray<string> = ["workflow"]
export const NO_TRIGGER: ReadonlyArray<string> = []

const isFinalStatus = (status: unknown): boolean =>
  typeof status === "string" && [...FINAL_STATUSES].some((s) => s === status)

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** Whether the organisation lets Parley's writes run its Zoho workflow rules (on unless set off). */
  const enabled = (orgId: string): Effect.Effect<boolean, StorageError> =>
    storage("zoho.workflows")(
      Effect.map(
        sql<{ readonly workflows: number | string }>`SELECT workflows FROM zoho_settings WHERE org_id = ${orgId}`,
        (rows) => rows[0] === undefined || Number(rows[0].workflows) === 1
      )
    )

  const set = (orgId: string, on: boolean): Effect.Effect<void, StorageError> =>
    storage("zoho.setWorkflows")(
      sql`INSERT INTO zoho_settings ${sql.insert({ org_id: orgId, workflows: on ? 1 : 0 })}
          ON CONFLICT (org_id) DO UPDATE SET workflows = excluded.workflows`
    )

  /** The `trigger` of a new record's upsert: workflows for an inbound record or one already final. */
  const creationTrigger = (draft: Crm.CrmActionDraft): Effect.Effect<ReadonlyArray<string>, Crm.CrmError> =>
    draft.direction !== "Inbound" && !isFinalStatus(draft.status)
      ? Effect.succeed(NO_TRIGGER)
      : Effect.map(
        Effect.mapError(enabled(draft.orgId), (cause) => new Crm.CrmError({ operation: "zoho.workflows", cause, reason: "unavailable" })),
        (on) => (on ? WORKFLOW_TRIGGER : NO_TRIGGER)
      )

  /** Remembers that these records fired workflows for their final status (an inbound one is final at birth). */
  const markFired = (orgId: string, crmIds: ReadonlyArray<string>): Effect.Effect<void, StorageError> =>
    crmIds.length === 0 ? Effect.void : storage("zoho.workflowFired")(
      sql`INSERT INTO zoho_workflow_fired ${sql.insert(crmIds.map((crm_id) => ({ org_id: orgId, crm_id })))}
          ON CONFLICT (org_id, crm_id) DO NOTHING`
    )

  /**
   * The write-back's `PUT /Parley_Messages` of `data` (records with `id` and `Status`): records reaching their
   * final status for the first time go in a PUT with workflows (if the organisation has them on), the rest in
   * one without. The answer lists the items in the order of `data`, as one PUT would.
   */
  const put = (
    session: ZohoSessionService,
    orgId: string,
    data: ReadonlyArray<Readonly<Record<string, unknown>>>
  ): Effect.Effect<CrmAnswer, Crm.CrmError> =>
    Effect.gen(function*() {
      const asCrm = (cause: unknown) => new Crm.CrmError({ operation: "zoho.workflows", cause, reason: "unavailable" })
      const finals = data.filter((d) => isFinalStatus(d["Status"])).map((d) => text(d, "id") ?? "")
      let firing = new Set<string>()
      if (finals.length > 0 && (yield* Effect.mapError(enabled(orgId), asCrm))) {
        const fired = yield* Effect.mapError(
          storage("zoho.workflowFired")(
            sql<{ readonly crm_id: string }>`SELECT crm_id FROM zoho_workflow_fired WHERE org_id = ${orgId} AND crm_id IN ${sql.in(finals)}`
          ),
          asCrm
        )
        const done = new Set(fired.map((r) => r.crm_id))
        firing = new Set(finals.filter((id) => !done.has(id)))
      }
      const groups = [
        { trigger: WORKFLOW_TRIGGER, rows: data.filter((d) => firing.has(text(d, "id") ?? "")) },
        { trigger: NO_TRIGGER, rows: data.filter((d) => !firing.has(text(d, "id") ?? "")) }
      ].filter((g) => g.rows.length > 0)
      const items = new Map<Readonly<Record<string, unknown>>, Readonly<Record<string, unknown>>>()
      let status = 200
      for (const group of groups) {
        const answer = yield* session.call(orgId, "PUT", `/${MESSAGES_MODULE}`, { data: group.rows, trigger: group.trigger })
        status = Math.max(status, answer.status)
        const answered = dataOf(answer)
        group.rows.forEach((row, i) => {
          const item = answered[i]
          if (item !== undefined) items.set(row, item)
        })
        if (group.trigger === WORKFLOW_TRIGGER) {
          const written = group.rows.filter((row) => text(items.get(row) ?? {}, "status") === "success")
          yield* Effect.mapError(markFired(orgId, written.map((row) => text(row, "id") ?? "")), asCrm)
        }
      }
      const json = { data: data.map((row) => items.get(row) ?? {}) }
      const answer: CrmAnswer = { status, json }
      return answer
    })

  return { enabled, set, creationTrigger, markFired, put }
})
