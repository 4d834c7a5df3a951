/**
 * A CRM's records of inbound texts stored without one: the CRM failed, throttled, had lapsed or was slow when
 * the text arrived, and Parley kept the text anyway (Inbound.receive). The CRM's migration fills its durable
 * outbox (`table`) by trigger in the transaction that stores each such text; this loop makes the record —
 * linked to the record with the sender's phone, as at arrival — through the CRM port with the same key the
 * arrival used (the carrier's message id, else Parley's own id), so a record the arrival's attempt made after
 * all is found again, not duplicated. Then the text takes the record's id as its API id (its first id,
 * announced in `message.received`, still finds it).
 *
 * Failures follow crm/Outbox (never dropped while the CRM may yet accept the record; a reconnect resumes at
 * once). Rows are claimed under a lease (SKIP LOCKED on Postgres), so replicas share the work.
 */
import { SqlClient } from "@effect/sql"
import { ActionStore, Crm, Inbound } from "@parley/core/internal"
import { Clock, Effect, Layer, Option } from "effect"
import { type Claimed, isPermanent, makeOutbox, outboxLoop, type RefusingCrm, recordRefusal } from "./Outbox.js"

const CLAIM = 100
const LEASE_MS = 60_000
const POLL_MS = 500

export const make = (table: string, crmOf: RefusingCrm, options: { readonly concurrency: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const crm = yield* Crm.Crm
    const store = yield* ActionStore.ActionStore
    const outbox = yield* makeOutbox(table, { leaseMs: LEASE_MS, versioned: false })
    const name = sql(table)

    const done = (row: Claimed) => sql`DELETE FROM ${name} WHERE action_id = ${row.action_id}`

    /** One text's record: link, create (or find again by its key), then the text takes the record's id. */
    const createOne = (row: Claimed, now: number) =>
      Effect.gen(function*() {
        const found = yield* store.findAction(row.org_id, row.action_id)
        if (Option.isNone(found) || found.value.crmId !== null && found.value.crmId !== undefined) return yield* done(row)
        const text = found.value
        const linked = text.record !== null
          ? Option.some(text.record)
          : Option.map(yield* crm.findByPhone(text.orgId, text.counterpart), (r) => ({ module: r.module, id: r.id, name: r.name }))
        const recordId = yield* crm.recordAction({
          orgId: text.orgId,
          key: Inbound.inboundCrmKey(text.orgId, text.sid ?? `local:${text.id}`),
          kind: "message",
          direction: "Inbound",
          type: text.type,
          status: text.status,
          line: text.line,
          counterpart: text.counterpart,
          body: text.body,
          mediaUrls: text.mediaUrls,
          at: text.at,
          scheduledFor: null,
          botId: null,
          sentBy: null,
          record: Option.match(linked, { onNone: () => null, onSome: (l) => ({ module: l.module, id: l.id }) })
        })
        // None: the organisation no longer uses a CRM that keeps records of texts; nothing is owed any more.
        if (Option.isSome(recordId)) {
          const link = Option.getOrNull(linked)
          yield* sql`UPDATE actions SET crm_id = ${recordId.value},
              record_module = ${link?.module ?? null}, record_id = ${link?.id ?? null}, record_name = ${link?.name ?? null},
              linked_records = ${JSON.stringify(link === null ? [] : [link])}
            WHERE org_id = ${text.orgId} AND id = ${Number(text.id)} AND crm_id IS NULL`
        }
        yield* done(row)
      }).pipe(
        Effect.catchTag("CrmError", (error) =>
          isPermanent(error)
            ? Effect.zipRight(
              done(row),
              recordRefusal(crmOf, "inbound", row.org_id, row.action_id, { code: error.code ?? "REFUSED", field: error.field }, now)
            )
            : outbox.retryLater([row], now))
      )

    const round = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* outbox.claim(now, CLAIM)
      yield* Effect.forEach(claimed, (row) => createOne(row, now), { concurrency: options.concurrency, discard: true })
      return claimed.length
    })

    return { round }
  })

/** The inbound-records loop of a server process, over the CRM's outbox `table`. */
export const layer = (table: string, crmOf: RefusingCrm, options: { readonly concurrency: number }) =>
  Layer.scopedDiscard(
    Effect.flatMap(make(table, crmOf, options), ({ round }) => outboxLoop(`${crmOf.name} inbound-records`, round, { claim: CLAIM, pollMs: POLL_MS }))
  )
