/**
 * The inserts of every accepted creation on the embedded SQLite store: prepared statements, each call in
 * one synchronous step (through the SqlClient a statement's compilation and span cost more than the insert
 * itself: docs/benchmarks.md, "Store adapters").
 */
import { Effect, Layer } from "effect"
import { CreationWrites } from "../CreationWrites.js"
import { INSERTED_COLUMNS } from "../SqlActionStore.js"
import { SqliteHandle } from "./SqliteDriver.js"

export const layer: Layer.Layer<CreationWrites, never, SqliteHandle> = Layer.effect(
  CreationWrites,
  Effect.map(SqliteHandle, (handle) => {
    const insertAction = handle.prepared(
      `INSERT INTO actions (${INSERTED_COLUMNS.join(", ")}) VALUES (${INSERTED_COLUMNS.map((c) => `@${c}`).join(", ")})
       RETURNING id`
    )
    const insertEvent = handle.prepared("INSERT INTO events (id, org_id, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)")
    // The endpoints that want the type as an uncorrelated IN: SQLite sets a correlated EXISTS up on every
    // run, even with no endpoint at all (docs/benchmarks.md, "Store adapters").
    const insertDeliveries = handle.prepared(
      `INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
       SELECT ?, id, 0, ?, 'pending', ? FROM webhooks WHERE org_id = ? AND disabled_at IS NULL
         AND id IN (SELECT webhook_id FROM webhook_event_types WHERE type IN ('*', ?))`
    )
    return CreationWrites.of({
      insertAction: (row) =>
        handle.use(() => {
          const inserted = insertAction.get(row)
          if (typeof inserted !== "object" || inserted === null || !("id" in inserted) || typeof inserted.id !== "number") {
            throw new Error("INSERT … RETURNING returned no id")
          }
          return String(inserted.id)
        }),
      appendEvent: (e) =>
        handle.use(() => {
          insertEvent.run(e.id, e.orgId, e.type, e.timestamp, e.payload)
          insertDeliveries.run(e.id, Date.parse(e.timestamp), e.timestamp, e.orgId, e.type)
        })
    })
  })
)
