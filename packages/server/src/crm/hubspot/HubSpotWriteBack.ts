/**
 * HubSpot's write-back: what happens to an action after its creation (status, an AI call's transcript,
 * recording and duration, the reason of a failure) is written to its HubSpot call or communication
 * asynchronously, from the durable outbox `hubspot_writebacks` that a trigger fills in the transaction of the
 * change (migration 0041) — so a kill -9 loses nothing, and dispatch and the API never wait on HubSpot.
 *
 * Each round claims due rows under a lease (crm/Outbox: SKIP LOCKED on Postgres, so replicas share the work)
 * and writes them per organisation and object type in `POST /crm/v3/objects/{calls|communications}/batch/update`
 * calls of at most 100 inputs; a row is removed only if it did not change meanwhile. Failures follow
 * crm/Outbox: an outage, a 429, a lapsed connection or a property `crm setup` has not made yet is retried for as
 * long as it takes (a reconnect makes it due at once). HubSpot refuses a whole batch for one bad input, so a
 * refused batch is split until the refused input stands alone; only that one is given up (and recorded where
 * the administrator looks), as is an object deleted in HubSpot (207 OBJECT_NOT_FOUND).
 */
import { SqlClient } from "@effect/sql"
import type { Crm } from "@parley/core/domain"
import { Clock, Effect, Layer, Schema } from "effect"
import { NullableString } from "../../store/rows.js"
import { type Claimed, isPermanent, makeOutbox, outboxLoop, recordRefusal } from "../Outbox.js"
import { isRecord, text } from "./HubSpotApi.js"
import { HubSpotConnections, refusing } from "./HubSpotConnections.js"
import { BATCH_LIMIT, engagementType, setupAware, type WriteBackChange, writeBackProperties } from "./HubSpotRecords.js"
import type { HubSpotSessionService } from "./HubSpotSession.js"

const CLAIM = 1000
const LEASE_MS = 60_000
/** A round a second at most while rows trickle in: HubSpot counts calls against a ten-secondly budget. */
const POLL_MS = 1000

const Pending = Schema.Struct({
  id: Schema.Union(Schema.Number, Schema.String),
  kind: Schema.Literal("message", "ai_call"),
  crm_id: Schema.String,
  status: Schema.String,
  body: Schema.String,
  error_message: NullableString,
  audio_file_id: NullableString,
  modified: Schema.String,
  started_at: NullableString
})

interface Entry {
  readonly row: Claimed
  readonly change: WriteBackChange
}

/** A call's duration from Parley's own status times, once it ended after being answered. */
const durationOf = (pending: typeof Pending.Type): number | null => {
  if (pending.kind !== "ai_call" || pending.status !== "Completed" || pending.started_at === null) return null
  const ms = Date.parse(pending.modified) - Date.parse(pending.started_at)
  return Number.isFinite(ms) && ms >= 0 ? ms : null
}

/** The OBJECT_NOT_FOUND ids of a 207 answer (objects deleted in HubSpot). */
const missingIds = (json: unknown): ReadonlySet<string> => {
  const ids = new Set<string>()
  const errors = isRecord(json) && Array.isArray(json["errors"]) ? json["errors"].filter(isRecord) : []
  for (const error of errors) {
    if (text(error, "category") !== "OBJECT_NOT_FOUND" || !isRecord(error["context"])) continue
    const listed = error["context"]["ids"]
    if (Array.isArray(listed)) for (const id of listed) if (typeof id === "string") ids.add(id)
  }
  return ids
}

export const make = (session: HubSpotSessionService) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* HubSpotConnections
    const outbox = yield* makeOutbox("hubspot_writebacks", { leaseMs: LEASE_MS, versioned: true })
    const decodePending = Schema.decodeUnknown(Schema.Array(Pending))

    const giveUp = (row: Claimed, now: number, refusal: { readonly code: string; readonly field?: string | undefined }) =>
      Effect.zipRight(
        sql`DELETE FROM hubspot_writebacks WHERE action_id = ${row.action_id} AND version = ${row.version ?? 0}`,
        recordRefusal(refusing(connections), "writeback", row.org_id, row.action_id, refusal, now)
      )

    /** Rows HubSpot took: gone unless they changed since the claim (then they stay due, with their newer version). */
    const written = (entries: ReadonlyArray<Entry>) =>
      Effect.gen(function*() {
        if (entries.length === 0) return
        const rows = entries.map((e) => e.row)
        yield* sql`DELETE FROM hubspot_writebacks WHERE (action_id, version) IN (${
          sql.csv(rows.map((r) => sql`(${r.action_id}, ${r.version ?? 0})`))
        })`
        yield* sql`UPDATE hubspot_writebacks SET lease_until = 0 WHERE action_id IN ${sql.in(rows.map((r) => r.action_id))}`
        // A call's start is needed until its duration was written.
        const ended = entries.filter((e) => e.change.durationMs !== null).map((e) => e.row.action_id)
        if (ended.length > 0) yield* sql`DELETE FROM hubspot_call_starts WHERE action_id IN ${sql.in(ended)}`
      })

    /** One `/batch/update` of one organisation's objects of one type; a refused batch is split (see the module's comment). */
    type Step = ReturnType<typeof giveUp> | ReturnType<typeof written>
    const writeBatch = (
      orgId: string,
      type: "communications" | "calls",
      entries: ReadonlyArray<Entry>,
      now: number
    ): Effect.Effect<void, Effect.Effect.Error<Step>, Effect.Effect.Context<Step>> =>
      Effect.gen(function*() {
        const answer = yield* Effect.either(Effect.mapError(
          session.call(orgId, "POST", `/crm/v3/objects/${type}/batch/update`, {
            inputs: entries.map((e) => ({ id: e.change.crmId, properties: writeBackProperties(e.change) }))
          }),
          setupAware
        ))
        if (answer._tag === "Left") {
          const error: Crm.CrmError = answer.left
          if (!isPermanent(error)) return yield* outbox.retryLater(entries.map((e) => e.row), now)
          if (entries.length > 1) {
            const half = Math.ceil(entries.length / 2)
            yield* writeBatch(orgId, type, entries.slice(0, half), now)
            return yield* writeBatch(orgId, type, entries.slice(half), now)
          }
          const [only] = entries
          if (only !== undefined) yield* giveUp(only.row, now, { code: error.code ?? "REFUSED", field: error.field })
          return
        }
        if (answer.right.status >= 300) return yield* outbox.retryLater(entries.map((e) => e.row), now)
        const missing = missingIds(answer.right.json)
        for (const entry of entries.filter((e) => missing.has(e.change.crmId))) {
          yield* giveUp(entry.row, now, { code: "OBJECT_NOT_FOUND" })
        }
        yield* written(entries.filter((e) => !missing.has(e.change.crmId)))
      })

    /** One organisation's claimed rows: read from their actions, then written by type in batches. */
    const writeOrg = (orgId: string, rows: ReadonlyArray<Claimed>, now: number) =>
      Effect.gen(function*() {
        const pending = yield* Effect.flatMap(
          sql`SELECT a.id, a.kind, a.crm_id, a.status, a.body, a.error_message, a.audio_file_id, a.modified, s.started_at
              FROM actions a LEFT JOIN hubspot_call_starts s ON s.action_id = CAST(a.id AS TEXT)
              WHERE a.org_id = ${orgId} AND a.id IN ${sql.in(rows.map((r) => Number(r.action_id)))} AND a.crm_id IS NOT NULL`,
          decodePending
        )
        const byId = new Map(pending.map((p) => [String(p.id), p]))
        const gone = rows.filter((r) => !byId.has(r.action_id)).map((r) => r.action_id)
        if (gone.length > 0) yield* sql`DELETE FROM hubspot_writebacks WHERE action_id IN ${sql.in(gone)}`
        const entries = rows.flatMap((row): Array<Entry> => {
          const p = byId.get(row.action_id)
          if (p === undefined) return []
          return [{
            row,
            change: {
              kind: p.kind,
              crmId: p.crm_id,
              status: p.status,
              body: p.body,
              errorMessage: p.error_message,
              // The recording as the AI-call provider stores it: HubSpot plays an http(s) URL on the record.
              recordingUrl: p.audio_file_id !== null && /^https?:\/\//.test(p.audio_file_id) ? p.audio_file_id : null,
              durationMs: durationOf(p)
            }
          }]
        })
        for (const type of ["communications", "calls"] as const) {
          const ofType = entries.filter((e) => engagementType(e.change.kind) === type)
          for (let i = 0; i < ofType.length; i += BATCH_LIMIT) {
            yield* writeBatch(orgId, type, ofType.slice(i, i + BATCH_LIMIT), now)
          }
        }
      })

    /** One round: everything due, per organisation. Returns how many rows it took. */
    const round = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* outbox.claim(now, CLAIM)
      const byOrg = new Map<string, Array<Claimed>>()
      for (const row of claimed) byOrg.set(row.org_id, [...(byOrg.get(row.org_id) ?? []), row])
      yield* Effect.forEach([...byOrg], ([orgId, rows]) => writeOrg(orgId, rows, now), { concurrency: 4, discard: true })
      return claimed.length
    })

    return { round }
  })

/** The write-back loop of a server process. */
export const layer = (session: HubSpotSessionService) =>
  Layer.scopedDiscard(Effect.flatMap(make(session), ({ round }) => outboxLoop("hubspot write-back", round, { claim: CLAIM, pollMs: POLL_MS })))
