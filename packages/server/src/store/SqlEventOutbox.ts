/**
 * The event outbox in SQL: each event with one pending delivery per enabled webhook endpoint of its
 * organisation that wants its type, written in the caller's transaction (a creation's single event
 * through the store adapter's CreationWrites; the dispatcher's batches here, in a few statements).
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { EventOutbox } from "@parley/core/domain"
import { Effect, Layer, Schema } from "effect"
import { countFinished } from "../observability/Metrics.js"
import * as TraceLinksModule from "../observability/TraceLinks.js"
import { CreationWrites } from "./CreationWrites.js"
import { storage } from "./rows.js"

/** Whether the endpoint wants events of the type: it names the type, or `*` (see SqlWebhooks). */
export const endpointWants = (sql: SqlClient.SqlClient, webhookId: Statement.Fragment, type: Statement.Fragment) =>
  sql`EXISTS (SELECT 1 FROM webhook_event_types t WHERE t.webhook_id = ${webhookId} AND t.type IN ('*', ${type}))`

const EventRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  type: Schema.String,
  timestamp: Schema.String,
  payload: Schema.String
})

export const layer = Layer.effect(
  EventOutbox.EventOutbox,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const writes = yield* CreationWrites
    const links = yield* TraceLinksModule.make
    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: EventRow,
      execute: (orgId) => sql`SELECT id, org_id, type, timestamp, payload FROM events WHERE org_id = ${orgId} ORDER BY seq`
    })
    const eventRow = (e: EventOutbox.OutboxEvent) =>
      ({ id: e.id, org_id: e.orgId, type: e.type, timestamp: e.timestamp, payload: e.payload })
    const wants = (webhookId: Statement.Fragment, type: Statement.Fragment) => endpointWants(sql, webhookId, type)
    /** The pending deliveries of already inserted events that share a timestamp: one per enabled endpoint of their organisation that wants their type. */
    const deliveries = (timestamp: string, eventIds: ReadonlyArray<string>) =>
      sql`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
          SELECT e.id, w.id, 0, ${Date.parse(timestamp)}, 'pending', ${timestamp}
          FROM events e JOIN webhooks w ON w.org_id = e.org_id AND w.disabled_at IS NULL
          WHERE e.id IN ${sql.in(eventIds)} AND ${wants(sql`w.id`, sql`e.type`)}`
    return EventOutbox.EventOutbox.of({
      // The event and one pending delivery per enabled endpoint that wants its type, in the caller's transaction.
      append: (e) =>
        Effect.zipLeft(
          storage("events.append")(writes.appendEvent(e)),
          Effect.zipRight(countFinished([e]), links.linkEvents([e]))
        ),
      // A batch in a few statements rather than two per event; the dispatcher appends hundreds at a time.
      appendAll: (events) => {
        if (events.length === 0) return Effect.void
        const byTimestamp = new Map<string, Array<string>>()
        for (const e of events) {
          const ids = byTimestamp.get(e.timestamp)
          if (ids === undefined) byTimestamp.set(e.timestamp, [e.id])
          else ids.push(e.id)
        }
        return Effect.zipLeft(
          storage("events.appendAll")(Effect.zipRight(
            sql`INSERT INTO events ${sql.insert(events.map(eventRow))}`,
            Effect.forEach(byTimestamp, ([timestamp, ids]) => deliveries(timestamp, ids), { discard: true })
          )),
          Effect.zipRight(countFinished(events), links.linkEvents(events))
        )
      },
      list: (orgId) =>
        storage("events.list")(Effect.map(list(orgId), (rows) =>
          rows.map((r) => ({ id: r.id, orgId: r.org_id, type: r.type, timestamp: r.timestamp, payload: r.payload }))))
    })
  })
)
