/**
 * The embedded SQLite store's SqlClient: one better-sqlite3 connection behind
 * `@effect/sql`'s client (the repositories' SQL, transactions and migrations
 * are the library's), plus the connection itself as `SqliteHandle` for the
 * few reads on every request that are served from memory (SettingsCache) and
 * for page reads run straight on it (`readValues`, SqlActionStore).
 *
 * Why not `@effect/sql-sqlite-node`: its connection keeps prepared statements
 * in an Effect `Cache` with a time to live, a clock read and a hash-map
 * lookup through several Effect steps per statement; a plain Map does the
 * same here. It also keeps the connection to itself.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlConnection, SqlError, Statement } from "@effect/sql"
import Sqlite from "better-sqlite3"
import { Context, Effect, Layer, Scope } from "effect"

/** The connection every statement of this process runs on, how many statements have run on it, and reads outside the client. */
export class SqliteHandle extends Context.Tag("@parley/server/SqliteHandle")<SqliteHandle, {
  readonly db: Sqlite.Database
  /** Statements run so far, through the SqlClient or `readValues` (the tests' guard that cached reads run none). */
  readonly statements: () => number
  /**
   * Runs a compiled read on the connection at once and returns its rows as value arrays, or undefined (and
   * runs nothing) while a transaction is open on the connection: the caller then goes through the SqlClient,
   * which waits for it, so a read never sees another fiber's uncommitted writes. Outside a transaction the
   * read is what the client would run (the same prepared statement), without its span, scope and connection
   * acquisition, which cost about as much as a page's whole query.
   */
  readonly readValues: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<ReadonlyArray<unknown>> | undefined
}>() {}

/** Statements are prepared once and kept: the repositories' SQL is a fixed set of texts. */
const MAX_PREPARED = 500

const makeConnection = (db: Sqlite.Database, count: () => void) => {
  const prepared = new Map<string, Sqlite.Statement>()
  const prepare = (sql: string): Sqlite.Statement => {
    let statement = prepared.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (prepared.size >= MAX_PREPARED) prepared.clear()
      prepared.set(sql, statement)
    }
    return statement
  }
  const values = (sql: string, params: ReadonlyArray<unknown>): ReadonlyArray<ReadonlyArray<unknown>> => {
    count()
    const statement = prepare(sql)
    if (!statement.reader) {
      statement.run(...params)
      return []
    }
    statement.raw(true)
    try {
      return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
    } finally {
      statement.raw(false)
    }
  }
  const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean, unprepared = false) =>
    Effect.try({
      try: (): ReadonlyArray<any> => {
        count()
        const statement = unprepared ? db.prepare(sql) : prepare(sql)
        if (statement.reader) return statement.all(...params)
        const result = statement.run(...params)
        return raw ? result as unknown as ReadonlyArray<any> : []
      },
      catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
    })
  const connection: SqlConnection.Connection = {
    execute: (sql, params, transformRows) =>
      transformRows === undefined ? run(sql, params, false) : Effect.map(run(sql, params, false), transformRows),
    executeRaw: (sql, params) => run(sql, params, true),
    executeValues: (sql, params) =>
      Effect.try({
        try: () => values(sql, params),
        catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
      }),
    executeUnprepared: (sql, params, transformRows) =>
      transformRows === undefined
        ? run(sql, params ?? [], false, true)
        : Effect.map(run(sql, params ?? [], false, true), transformRows),
    executeStream: () => Effect.dieMessage("executeStream is not supported on SQLite") as never
  }
  const readValues = (sql: string, params: ReadonlyArray<unknown>) => (db.inTransaction ? undefined : values(sql, params))
  return { connection, readValues }
}

const make = (filename: string) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Sqlite(filename)),
      (db) => Effect.sync(() => db.close())
    )
    db.pragma("journal_mode = WAL")
    let statements = 0
    const { connection, readValues } = makeConnection(db, () => {
      statements++
    })
    // One connection: statements take turns, and a transaction holds it from BEGIN to COMMIT.
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )
    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    return Context.make(SqlClient.SqlClient, client).pipe(Context.add(SqliteHandle, { db, statements: () => statements, readValues }))
  })

export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient | SqliteHandle> =>
  Layer.scopedContext(make(filename)).pipe(Layer.provide(Reactivity.layer))
