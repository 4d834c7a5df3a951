/** The inserts of every accepted creation on Postgres, through the SqlClient (the port: CreationWrites). */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { CreationWrites } from "../CreationWrites.js"
import { endpointWants } from "../SqlEventOutbox.js"

const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.Union(Schema.Number, Schema.String) })))

export const layer: Layer.Layer<CreationWrites, never, SqlClient.SqlClient> = Layer.effect(
  CreationWrites,
  Effect.map(SqlClient.SqlClient, (sql) =>
    CreationWrites.of({
      insertAction: (row) =>
        Effect.gen(function*() {
          const rows = yield* sql`INSERT INTO actions ${sql.insert(row)} RETURNING id`
          const [inserted] = yield* Effect.orDie(decodeIds(rows))
          if (inserted === undefined) return yield* Effect.dieMessage("INSERT … RETURNING returned no row")
          return String(inserted.id)
        }),
      appendEvent: (e) =>
        Effect.asVoid(Effect.zipRight(
          sql`INSERT INTO events ${sql.insert({ id: e.id, org_id: e.orgId, type: e.type, timestamp: e.timestamp, payload: e.payload })}`,
          sql`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
              SELECT ${e.id}, id, 0, ${Date.parse(e.timestamp)}, 'pending', ${e.timestamp}
              FROM webhooks w WHERE org_id = ${e.orgId} AND disabled_at IS NULL AND ${endpointWants(sql, sql`w.id`, sql`${e.type}`)}`
        ))
    }))
)
