/**
 * The reads requests make most (an action by id, a page of actions or of
 * conversations), run straight on the embedded SQLite connection: a prepared
 * statement in one Effect step, where the SqlClient takes the connection's
 * permit and opens a span scope in many steps — most of a GET /messages/{id}
 * — and, through the permit's semaphore, resumes the request in a later
 * microtask, so that requests in flight interleave and keep more alive at
 * each garbage collection (docs/benchmarks.md).
 *
 * Straight only while no transaction holds the connection: better-sqlite3 is
 * synchronous, so the statement runs whole between two steps of other fibers
 * and reads committed data, as the SqlClient's would. During a transaction —
 * this fiber's own, or another's that may be between two of its statements —
 * the read goes through the SqlClient, which uses the transaction's
 * connection or waits for it. On Postgres it always does.
 *
 * Statements are written with `?` placeholders, one per parameter, and no `?`
 * anywhere else; on Postgres they become `$1`, `$2`, ….
 */
import { SqlClient, SqlError, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { SqliteHandle } from "./SqliteDriver.js"

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

const numbered = (sql: string): string => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

export const layer: Layer.Layer<DirectReads, never, SqlClient.SqlClient> = Layer.effect(
  DirectReads,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const handle = yield* Effect.serviceOption(SqliteHandle)
    const dialectText = new Map<string, string>()
    const throughClient = (text: string, params: ReadonlyArray<Param>) => {
      let own = dialectText.get(text)
      if (own === undefined) {
        own = Option.isSome(handle) ? text : numbered(text)
        dialectText.set(text, own)
      }
      return sql.unsafe(own, params).values
    }
    if (Option.isNone(handle)) return { values: throughClient, statement: (statement) => statement.values }
    const { db, prepared } = handle.value
    /** Straight on the connection, or through the client while a transaction holds it (decided when it runs). */
    const straight = (
      run: () => ReadonlyArray<ReadonlyArray<unknown>>,
      otherwise: () => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>
    ) =>
      Effect.suspend(() => {
        if (db.inTransaction) return otherwise()
        try {
          return Effect.succeed(run())
        } catch (cause) {
          return Effect.fail(new SqlError.SqlError({ cause, message: "Failed to execute statement" }))
        }
      })
    return {
      values: (text, params) => straight(() => prepared(text).values(...params), () => throughClient(text, params)),
      statement: (statement) =>
        straight(() => {
          const [text, params] = statement.compile()
          return prepared(text).values(...params)
        }, () => statement.values)
    }
  })
)
