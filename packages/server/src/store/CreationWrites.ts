/**
 * The two inserts every accepted creation makes — its action, and its `*.queued` event with the event's
 * pending webhook deliveries — as a port, so that each store adapter writes them its own way: the embedded
 * SQLite store as prepared statements in one synchronous step each (store/sqlite/SqliteCreationWrites.ts),
 * Postgres through the SqlClient (store/postgres/PgCreationWrites.ts). The row itself is defined once, in
 * SqlActionStore (`fromAction`, `INSERTED_COLUMNS`).
 */
import type { SqlError } from "@effect/sql"
import type { EventOutbox } from "@parley/core/domain"
import { Context, type Effect } from "effect"

/** An `actions` row to insert, keyed by column (SqlActionStore's `fromAction`). */
export type InsertedActionRow = { readonly [column: string]: string | number | null }

export interface CreationWritesService {
  /** Inserts the action; its id, given by the auto-increment key. Runs in the caller's transaction. */
  readonly insertAction: (row: InsertedActionRow) => Effect.Effect<string, SqlError.SqlError>
  /** Inserts the event and one pending delivery per enabled endpoint of its organisation that wants its type. */
  readonly appendEvent: (event: EventOutbox.OutboxEvent) => Effect.Effect<void, SqlError.SqlError>
}

export class CreationWrites extends Context.Tag("@parley/server/store/CreationWrites")<
  CreationWrites,
  CreationWritesService
>() {}
