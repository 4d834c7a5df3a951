/**
 * The embedded SQLite store's SqlClient: one better-sqlite3 connection behind
 * `@effect/sql`'s client (the repositories' SQL, transactions and migrations
 * are the library's), plus the connection itself as `SqliteHandle` for the
 * few reads on every request that are served from memory (SettingsCache).
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

/** The connection every statement of this process runs on, and how many statements have run on it. */
export class SqliteHandle extends Context.Tag("@parley/server/SqliteHandle")<SqliteHandle, {
  readonly db: Sqlite.Database
  /** Statements run so far, through the SqlClient or `values` (the tests' guard of statements per request). */
  readonly statements: () => number
  /**
   * Runs a reading statement now, on the connection as it is, and answers its rows as arrays of values. For
   * DirectReads, which calls it only while no transaction holds the connection.
   */
  readonly values: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<ReadonlyArray<unknown>>
}>() {}

/** Statements are prepared once and kept: the repositories' SQL is a fixed set of texts. */
const MAX_PREPARED = 500

/** Prepares each statement text once and keeps it. */
const preparer = (db: Sqlite.Database) => {
  const prepared = new Map<string, Sqlite.Statement>()
  return (sql: string): Sqlite.Statement => {
    let statement = prepared.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (prepared.size >= MAX_PREPARED) prepared.clear()
      prepared.set(sql, statement)
    }
    return statement
  }
}

/** A reading statement's rows as arrays of values (raw mode, set for this run only: the statement is shared). */
const allValues = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>) => {
  statement.raw(true)
  try {
    return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
  } finally {
    statement.raw(false)
  }
}

const makeConnection = (
  db: Sqlite.Database,
  prepare: (sql: string) => Sqlite.Statement,
  count: () => void
): SqlConnection.Connection => {
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
  return {
    execute: (sql, params, transformRows) =>
      transformRows === undefined ? run(sql, params, false) : Effect.map(run(sql, params, false), transformRows),
    executeRaw: (sql, params) => run(sql, params, true),
    executeValues: (sql, params) =>
      Effect.try({
        try: () => {
          count()
          const statement = prepare(sql)
          if (!statement.reader) {
            statement.run(...params)
            return []
          }
          return allValues(statement, params)
        },
        catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
      }),
    executeUnprepared: (sql, params, transformRows) =>
      transformRows === undefined
        ? run(sql, params ?? [], false, true)
        : Effect.map(run(sql, params ?? [], false, true), transformRows),
    executeStream: () => Effect.dieMessage("executeStream is not supported on SQLite") as never
  }
}

const make = (filename: string) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Sqlite(filename)),
      (db) => Effect.sync(() => db.close())
    )
    db.pragma("journal_mode = WAL")
    let statements = 0
    const count = () => {
      statements++
    }
    const prepare = preparer(db)
    const connection = makeConnection(db, prepare, count)
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
    const values = (sql: string, params: ReadonlyArray<unknown>) => {
      count()
      return allValues(prepare(sql), params)
    }
    return Context.make(SqlClient.SqlClient, client).pipe(
      Context.add(SqliteHandle, { db, statements: () => statements, values })
    )
  })

export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient | SqliteHandle> =>
  Layer.scopedContext(make(filename)).pipe(Layer.provide(Reactivity.layer))
