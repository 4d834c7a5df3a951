/**
 * The reads requests make most (an action by id, a page of actions or of
 * conversations), as a port the store adapter answers its fastest way: on
 * the embedded SQLite store straight on the connection, a prepared statement
 * in one Effect step (store/sqlite/SqliteDirectReads.ts); on Postgres
 * through the SqlClient (store/postgres/PgDirectReads.ts).
 *
 * Statements are written with `?` placeholders, one per parameter, and no `?`
 * anywhere else; on Postgres they become `$1`, `$2`, ….
 */
import type { SqlError, Statement } from "@effect/sql"
import { Context, type Effect } from "effect"

export type Param = string | number | null

export interface DirectReadsService {
  /** The statement's rows as arrays of column values, in its column order. */
  readonly values: (
    sql: string,
    params: ReadonlyArray<Param>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>
  /** The same for a statement built with the SqlClient (a page's keyset query), compiled when it runs. */
  readonly statement: (
    statement: Statement.Statement<unknown>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>
}

export class DirectReads extends Context.Tag("@parley/server/DirectReads")<DirectReads, DirectReadsService>() {}
