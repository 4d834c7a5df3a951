/**
 * The reads requests make most (an action by id, a page of actions or of
 * conversations), run straight on the embedded SQLite connection: a prepared
 * statement in one Effect step, where the SqlClient takes the connection's
 * permit and opens a span scope in many steps — most of a GET /messages/{id}
 * — and, through the permit's semaphore, resumes the request in a later
 * microtask, so that requests in flight interleave and keep more alive at
 * each garbage collection (docs/benchmarks.md).
 *
 * It runs through `SqliteHandle.use`: at once while no transaction is open
 * on the connection (better-sqlite3 is synchronous, so the statement runs
 * whole between two steps of other fibers and reads committed data, as the
 * SqlClient's would), within the fiber's own transaction, or once another
 * fiber's transaction — which may be between two of its statements — has
 * ended. On Postgres the SqlClient runs it.
 *
 * Statements are written with `?` placeholders, one per parameter, and no `?`
 * anywhere else; on Postgres they become `$1`, `$2`, ….
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
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
    const handle = yield* Effect.serviceOption(SqliteHandle)
    if (Option.isSome(handle)) {
      const { prepared, use } = handle.value
      return {
        values: (text, params) => use(() => prepared(text).values(...params)),
        statement: (statement) =>
          use(() => {
            const [text, params] = statement.compile()
            return prepared(text).values(...params)
          })
      }
    }
    const sql = yield* SqlClient.SqlClient
    const numberedText = new Map<string, string>()
    return {
      values: (text, params) => {
        let own = numberedText.get(text)
        if (own === undefined) {
          own = numbered(text)
          numberedText.set(text, own)
        }
        return sql.unsafe(own, params).values
      },
      statement: (statement) => statement.values
    }
  })
)
