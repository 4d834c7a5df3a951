/**
 * DirectReads on the embedded SQLite store. The SqlClient takes the connection's permit and opens a span
 * scope in many steps — most of a GET /messages/{id} — and, through the permit's semaphore, resumes the
 * request in a later microtask, so that requests in flight interleave and keep more alive at each garbage
 * collection (docs/benchmarks.md). Here each read is a prepared statement run through
 * `SqliteHandle.use` — at once while no transaction is open on the connection (better-sqlite3 is
 * synchronous, so the statement runs whole between two steps of other fibers and reads committed data, as
 * the SqlClient's would), within the fiber's own transaction, or once another fiber's transaction — which
 * may be between two of its statements — has ended.
 */
import { Effect, Layer } from "effect"
import { DirectReads } from "../DirectReads.js"
import { SqliteHandle } from "./SqliteDriver.js"

export const layer: Layer.Layer<DirectReads, never, SqliteHandle> = Layer.effect(
  DirectReads,
  Effect.map(SqliteHandle, ({ prepared, use }) => ({
    values: (text, params) => use(() => prepared(text).values(...params)),
    statement: (statement) =>
      use(() => {
        const [text, params] = statement.compile()
        return prepared(text).values(...params)
      })
  }))
)
