/**
 * The events written for one record, however old: looked up by the record id each event's payload carries
 * (`data.id`, the id the API answers), through the expression index `events_by_record` (migration 0044). The
 * expression here must stay the index's, word for word, or the database scans the organisation's events.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { storage } from "../store/rows.js"

/** More than any record gets (a text has at most a handful); a bound, not a page. */
export const RECORD_EVENTS_SHOWN = 200

const RecordEvent = Schema.Struct({ id: Schema.String, type: Schema.String, timestamp: Schema.String })
export type RecordEvent = typeof RecordEvent.Type

export const recordEvents = (orgId: string, recordId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const recordIdOf = sql.onDialectOrElse({
      pg: () => sql`((payload::jsonb -> 'data') ->> 'id')`,
      orElse: () => sql`json_extract(payload, '$.data.id')`
    })
    return yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: RecordEvent,
      execute: () =>
        sql`SELECT id, type, timestamp FROM events WHERE org_id = ${orgId} AND ${recordIdOf} = ${recordId}
            ORDER BY seq LIMIT ${RECORD_EVENTS_SHOWN}`
    })(undefined)
  }).pipe(storage("console.recordEvents"))
