/**
 * The write-back: what happens to an action after its creation (statuses,
 * an AI call's transcript and recording, the provider's id, the error) is
 * written to its Parley_Messages record asynchronously, from the durable
 * outbox `zoho_writebacks`, which a trigger fills in the same transaction as
 * the change (migration 0013) — so a kill -9 loses nothing, and dispatch and
 * the API never wait on Zoho.
 *
 * Each round claims due rows under a lease (SKIP LOCKED on Postgres, so
 * replicas share the work), writes them per organisation in batches of up to
 * 100 records a `PUT /Parley_Messages`, at most PARLEY_ZOHO_CONCURRENCY calls
 * at a time per organisation in a process, and removes a row only if it did
 * not change meanwhile. A failure is retried as crm/Outbox says: for as long
 * as Zoho may yet accept it (outage, 429, lapsed connection, missing module),
 * with backoff capped at 15 minutes and at once after a reconnect; only a
 * record Zoho refuses for good (INVALID_DATA…) is given up, and recorded.
 *
 * Full batches go at once; a partial one waits until its oldest row has been due for FLUSH_MS, so that
 * the changes of a steady flow of texts share PUTs instead of one PUT a round each (Zoho counts API
 * credits per call). A change therefore reaches Zoho at most 2 s (the outbox's own delay) + FLUSH_MS +
 * one poll after it was made, plus Zoho's answer time.
 */
import type { Crm } from "@parley/core/domain"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Schema } from "effect"
import { ZohoConfig } from "./ZohoConfig.js"
import { DbInt, NullableString } from "../../store/rows.js"
import { backoffMs, type Claimed, isPermanent, makeOutbox, outboxLoop, recordHeld, recordRefusal } from "../Outbox.js"
import { dataOf, refusalOf, text } from "./ZohoApi.js"
import { refusing, ZohoConnections } from "./ZohoConnections.js"
import { makeFieldLengths } from "./ZohoFieldLengths.js"
import { MESSAGES_MODULE, zohoTime } from "./ZohoSchema.js"
import { ZohoSession } from "./ZohoSession.js"
import * as ZohoWorkflows from "./ZohoWorkflows.js"

export const BATCH = 100
/** How long a partial batch waits past its oldest row's due time for more rows to fill it. */
export const FLUSH_MS = 3_000
const CLAIM = 1000
const LEASE_MS = 60_000
const POLL_MS = 250

const DueByOrg = Schema.Struct({ org_id: Schema.String, due: DbInt, oldest: DbInt })
const Pending = Schema.Struct({
  id: Schema.Union(Schema.Number, Schema.String),
  crm_id: Schema.String,
  status: Schema.String,
  body: Schema.String,
  error_message: NullableString,
  audio_file_id: NullableString,
  sid: NullableString,
  modified: Schema.String
})

/**
 * How many of an organisation's `due` rows (the oldest due since `oldest`) to write now: all of them (up to a
 * round's claim) once the oldest waited FLUSH_MS, otherwise only whole batches.
 */
export const flushable = (due: number, oldest: number, now: number): number =>
  Math.min(CLAIM, now - oldest >= FLUSH_MS ? due : Math.floor(due / BATCH) * BATCH)

export { backoffMs }

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const session = yield* ZohoSession
  const connections = yield* ZohoConnections
  const config = yield* ZohoConfig
  const fieldLengths = makeFieldLengths(session)
  const workflows = yield* ZohoWorkflows.make
  const outbox = yield* makeOutbox("zoho_writebacks", { leaseMs: LEASE_MS, versioned: true })
  const decodeDueByOrg = Schema.decodeUnknown(Schema.Array(DueByOrg))
  const decodePending = Schema.decodeUnknown(Schema.Array(Pending))

  /** What each organisation may write now: its full batches, or everything once its oldest due row waited FLUSH_MS. */
  const claim = (now: number) =>
    Effect.gen(function*() {
      const due = yield* Effect.flatMap(
        sql`SELECT org_id, COUNT(*) AS due, MIN(due_at) AS oldest FROM zoho_writebacks
            WHERE due_at <= ${now} AND lease_until < ${now} GROUP BY org_id`,
        decodeDueByOrg
      )
      const claimed = yield* Effect.forEach(due, (org) => {
        const limit = flushable(org.due, org.oldest, now)
        return limit === 0 ? Effect.succeed([]) : outbox.claim(now, limit, org.org_id)
      })
      return claimed.flat()
    })

  /** Rows Zoho did not take this time: due again after their backoff (crm/Outbox). */
  const retryLater = outbox.retryLater

  /** A row whose record Zoho refused for good: gone from the outbox (unless it changed since), and recorded. */
  const giveUp = (row: Claimed, now: number, refusal: Crm.CrmError) =>
    Effect.zipRight(
      sql`DELETE FROM zoho_writebacks WHERE action_id = ${row.action_id} AND version = ${row.version ?? 0}`,
      recordRefusal(refusing(connections), "writeback", row.org_id, row.action_id, { code: refusal.code ?? "REFUSED", field: refusal.field }, now)
    )

  /** A row whose record Zoho refused for a permission the connected user lacks: retried, and shown. */
  const hold = (row: Claimed, now: number, refusal: Crm.CrmError) =>
    recordHeld(refusing(connections), "writeback", row.org_id, row.action_id, { code: refusal.code ?? "REFUSED", field: refusal.field }, now)

  /** One PUT of up to BATCH records of one organisation. */
  const writeBatch = (orgId: string, rows: ReadonlyArray<Claimed>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const actions = yield* Effect.flatMap(
        sql`SELECT id, crm_id, status, body, error_message, audio_file_id, sid, modified FROM actions
            WHERE org_id = ${orgId} AND id IN ${sql.in(rows.map((r) => Number(r.action_id)))} AND crm_id IS NOT NULL`,
        decodePending
      )
      const byId = new Map(actions.map((a) => [String(a.id), a]))
      const gone = rows.filter((r) => !byId.has(r.action_id))
      for (const r of gone) yield* sql`DELETE FROM zoho_writebacks WHERE action_id = ${r.action_id}`
      const live = rows.filter((r) => byId.has(r.action_id))
      if (live.length === 0) return
      const data = live.flatMap((r) => {
        const a = byId.get(r.action_id)
        return a === undefined ? [] : [{
          id: a.crm_id,
          Status: a.status,
          Body: a.body,
          Error_Message: a.error_message,
          Recording_Id: a.audio_file_id,
          Provider_Sid: a.sid,
          Status_Changed_At: zohoTime(a.modified)
        }]
      })
      // A transcript or error longer than its field is cut to fit (ZohoFieldLengths), never refused for good;
      // one PUT, or two where some records reach their final status and workflow rules may run (ZohoWorkflows).
      const answer = yield* Effect.either(Effect.flatMap(
        fieldLengths.fit(orgId, MESSAGES_MODULE, data),
        (fitted) => workflows.put(session, orgId, fitted)
      ))
      if (answer._tag === "Left") {
        // A refusal of the whole PUT names no record: each is retried, as for an outage.
        return yield* retryLater(live, now)
      }
      const items = dataOf(answer.right)
      const failed: Array<Claimed> = []
      const written: Array<Claimed> = []
      for (let i = 0; i < live.length; i++) {
        const row = live[i]
        if (row === undefined) continue
        const item = items[i]
        if (item !== undefined && text(item, "status") === "success") {
          written.push(row)
        } else if (item !== undefined && text(item, "code") !== undefined) {
          const refusal = refusalOf("zoho.writeBack", item)
          if (isPermanent(refusal)) yield* giveUp(row, now, refusal)
          else {
            if (refusal.reason === "permission_denied") yield* hold(row, now, refusal)
            failed.push(row)
          }
        } else {
          failed.push(row)
        }
      }
      if (written.length > 0) {
        // Gone only if nothing changed since the claim; a row that changed stays due, with its newer version.
        yield* sql`DELETE FROM zoho_writebacks WHERE (action_id, version) IN (${
          sql.csv(written.map((r) => sql`(${r.action_id}, ${r.version ?? 0})`))
        })`
        yield* sql`UPDATE zoho_writebacks SET lease_until = 0 WHERE action_id IN ${sql.in(written.map((r) => r.action_id))}`
      }
      yield* retryLater(failed, now)
    })

  /** One round: everything due, per organisation, batched and bounded. Returns how many rows it took. */
  const round = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const claimed = yield* claim(now)
    const byOrg = new Map<string, Array<Claimed>>()
    for (const row of claimed) {
      const list = byOrg.get(row.org_id) ?? []
      list.push(row)
      byOrg.set(row.org_id, list)
    }
    yield* Effect.forEach([...byOrg], ([orgId, rows]) => {
      const batches: Array<ReadonlyArray<Claimed>> = []
      for (let i = 0; i < rows.length; i += BATCH) batches.push(rows.slice(i, i + BATCH))
      return Effect.forEach(batches, (batch) => writeBatch(orgId, batch), { concurrency: config.zohoConcurrency, discard: true })
    }, { concurrency: "unbounded", discard: true })
    return claimed.length
  })

  return { round }
})

/** The write-back loop of a server process. */
export const ZohoWriteBackLive = Layer.scopedDiscard(
  Effect.flatMap(make, ({ round }) => outboxLoop("zoho write-back", round, { claim: CLAIM, pollMs: POLL_MS }))
)
