/**
 * Parley's opt-out list, mirrored on the Zoho records of each number (issue 32): every Lead and Contact whose
 * phone fields hold a number gets the boxes `Parley_SMS_Opt_Out` / `Parley_Call_Opt_Out` (ZohoSchema) ticked
 * while the list stops that channel to the number, and cleared when it no longer does.
 *
 * Migration 0047's trigger puts the number in the durable outbox `zoho_optout_syncs` in the transaction that
 * records or removes its opt-out, whoever does it; this loop then reads the number's entry as it is now, finds
 * its records with Zoho's search by phone (`GET /{module}/search?phone=`, every phone field of the module) and
 * writes the boxes (`PUT /{module}`, no workflow rules). A row is gone only when every record took the write
 * and the number did not change since its claim. Anything Zoho may yet accept is retried with crm/Outbox's
 * backoff (up to 15 minutes, at once after a reconnect) for as long as it takes: an outage, a 429, a lapsed
 * connection, and boxes `crm setup` has not made yet (the connection's last error then says to run it). Only a
 * refusal of one record as such (NO_PERMISSION on it…) leaves that record as it is, recorded in the log.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Schema } from "effect"
import { DbInt } from "../../store/rows.js"
import { RowLocks } from "../../store/RowLocks.js"
import { backoffMs, outboxLoop } from "../Outbox.js"
import { dataOf, isRecord, refusalOf, text } from "./ZohoApi.js"
import { ZohoConfig } from "./ZohoConfig.js"
import { ZohoConnections } from "./ZohoConnections.js"
import { OPT_OUT_FIELDS, OPT_OUT_MODULES, optOutBoxes } from "./ZohoSchema.js"
import { ZohoSession } from "./ZohoSession.js"

const CLAIM = 100
const LEASE_MS = 60_000
const POLL_MS = 500
/** Zoho's most records a page of search and a write. */
const PAGE = 200
const WRITE_BATCH = 100
/** A bound on the records of one number (2,000 a module): a number shared that widely is not a person's. */
const MAX_PAGES = 10

const ClaimedSync = Schema.Struct({ org_id: Schema.String, phone: Schema.String, version: DbInt, attempts: DbInt })
type ClaimedSync = typeof ClaimedSync.Type
const EntryChannels = Schema.Struct({ channels: Schema.String })

/** Zoho refused the boxes themselves (`crm setup` has not made them): the row waits for it, never dropped. */
class BoxesMissing extends Schema.TaggedError<BoxesMissing>()("BoxesMissing", { module: Schema.String, field: Schema.String }) {}

/** Zoho answered a write without a verdict for a record: retried, as for an outage. */
class NoVerdict extends Schema.TaggedError<NoVerdict>()("NoVerdict", { cause: Schema.String }) {}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const session = yield* ZohoSession
  const connections = yield* ZohoConnections
  const config = yield* ZohoConfig
  const { skipLocked } = yield* RowLocks
  const decodeClaimed = Schema.decodeUnknown(Schema.Array(ClaimedSync))
  const decodeEntry = Schema.decodeUnknown(Schema.Array(EntryChannels))
  const boxNames = new Set(OPT_OUT_FIELDS.map((f) => f.api_name))

  const claim = (now: number) =>
    Effect.flatMap(
      sql`UPDATE zoho_optout_syncs SET lease_until = ${now + LEASE_MS}
          WHERE (org_id, phone) IN (SELECT org_id, phone FROM zoho_optout_syncs
                                    WHERE due_at <= ${now} AND lease_until < ${now}
                                    ORDER BY due_at LIMIT ${CLAIM} ${skipLocked})
          RETURNING org_id, phone, version, attempts`,
      decodeClaimed
    )

  /** The channels the number's entry stops now (none: it may be texted and called). */
  const channelsOf = (row: ClaimedSync) =>
    Effect.map(
      Effect.flatMap(sql`SELECT channels FROM opt_outs WHERE org_id = ${row.org_id} AND phone = ${row.phone}`, decodeEntry),
      (rows) => (rows[0]?.channels ?? "").split(",").filter((c): c is "SMS" | "WhatsApp" | "Call" => c === "SMS" || c === "WhatsApp" || c === "Call")
    )

  /** The ids of every record of the module with the number in a phone field. */
  const recordsOf = (orgId: string, module: string, phone: string) =>
    Effect.gen(function*() {
      const ids: Array<string> = []
      for (let page = 1; page <= MAX_PAGES; page++) {
        const answer = yield* session.call(
          orgId,
          "GET",
          `/${module}/search?phone=${encodeURIComponent(phone)}&fields=Phone&per_page=${PAGE}&page=${page}`
        )
        for (const r of dataOf(answer)) {
          const id = text(r, "id")
          if (id !== undefined) ids.push(id)
        }
        const info = isRecord(answer.json) && isRecord(answer.json["info"]) ? answer.json["info"] : {}
        if (info["more_records"] !== true) break
      }
      return ids
    })

  /** Writes the boxes on the records; fails (to be retried) unless Zoho took each, or refused one for good. */
  const writeBoxes = (row: ClaimedSync, module: string, ids: ReadonlyArray<string>, boxes: Record<string, boolean>) =>
    Effect.gen(function*() {
      for (let i = 0; i < ids.length; i += WRITE_BATCH) {
        const batch = ids.slice(i, i + WRITE_BATCH)
        const answer = yield* session.call(row.org_id, "PUT", `/${module}`, {
          data: batch.map((id) => ({ id, ...boxes })),
          trigger: []
        })
        const items = dataOf(answer)
        for (let j = 0; j < batch.length; j++) {
          const item = items[j]
          if (item !== undefined && text(item, "status") === "success") continue
          if (item === undefined || text(item, "code") === undefined) {
            return yield* new NoVerdict({ cause: `status ${answer.status}` })
          }
          const refusal = refusalOf("zoho.optOutSync", item)
          if (refusal.field !== undefined && boxNames.has(refusal.field)) {
            return yield* new BoxesMissing({ module, field: refusal.field })
          }
          // This record as such (NO_PERMISSION, a locked record…): left as it is; the others are written.
          yield* Effect.annotateLogs(Effect.logWarning("zoho refused an opt-out checkbox on a record"), {
            orgId: row.org_id,
            module,
            recordId: batch[j] ?? "",
            zohoCode: refusal.code ?? "REFUSED"
          })
        }
      }
    })

  /** One number: its entry now, written on every record of it in each module. */
  const syncOne = (row: ClaimedSync) =>
    Effect.gen(function*() {
      const boxes = optOutBoxes(yield* channelsOf(row))
      for (const module of OPT_OUT_MODULES) {
        const ids = yield* recordsOf(row.org_id, module, row.phone)
        if (ids.length > 0) yield* writeBoxes(row, module, ids, boxes)
      }
    })

  const done = (row: ClaimedSync) =>
    Effect.zipRight(
      // Gone only if nothing changed since the claim; a number that changed stays, due again at once.
      sql`DELETE FROM zoho_optout_syncs WHERE org_id = ${row.org_id} AND phone = ${row.phone} AND version = ${row.version}`,
      sql`UPDATE zoho_optout_syncs SET lease_until = 0 WHERE org_id = ${row.org_id} AND phone = ${row.phone}`
    )

  const retryLater = (row: ClaimedSync, now: number) =>
    sql`UPDATE zoho_optout_syncs SET attempts = attempts + 1, due_at = ${now + backoffMs(row.attempts)}, lease_until = 0
        WHERE org_id = ${row.org_id} AND phone = ${row.phone}`

  const one = (row: ClaimedSync, now: number) =>
    Effect.flatMap(Effect.either(syncOne(row)), (result) => {
      if (result._tag === "Right") return done(row)
      const failure = result.left
      const note = failure._tag === "BoxesMissing"
        ? connections.recordError(
          row.org_id,
          `Zoho refused Parley's opt-out checkbox ${failure.field} on ${failure.module}: run \`parley crm setup ${row.org_id}\` ` +
            "(or create it by hand as it says); Parley keeps the opt-outs and writes them once it exists.",
          new Date(now).toISOString()
        )
        : Effect.void
      return Effect.zipRight(Effect.ignore(note), retryLater(row, now))
    })

  /** One round: every due number, a few at a time per process (each organisation within Zoho's cap). */
  const round = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const claimed = yield* claim(now)
    yield* Effect.forEach(claimed, (row) => one(row, now), { concurrency: config.zohoConcurrency, discard: true })
    return claimed.length
  })

  return { round }
})

/** The opt-out sync loop of a server process. */
export const ZohoOptOutSyncLive = Layer.scopedDiscard(
  Effect.flatMap(make, ({ round }) => outboxLoop("zoho opt-out sync", round, { claim: CLAIM, pollMs: POLL_MS }))
)
