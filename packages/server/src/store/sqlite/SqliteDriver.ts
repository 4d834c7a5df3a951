/**
 * The embedded SQLite store's SqlClient: one better-sqlite3 connection behind
 * `@effect/sql`'s client (the repositories' SQL, transactions and migrations
 * are the library's), plus the connection itself as `SqliteHandle` for the
 * SQLite adapter's fast paths in this folder (the settings cache, direct
 * reads, the creation's inserts, idempotency records, the dispatcher's
 * queue), which run prepared statements in one synchronous step each instead
 * of through the client (why: docs/benchmarks.md, "Store adapters").
 *
 * Why not `@effect/sql-sqlite-node`: its connection keeps prepared statements
 * in an Effect `Cache` with a time to live, a clock read and a hash-map
 * lookup through several Effect steps per statement; a plain Map does the
 * same here. It also keeps the connection to itself.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlConnection, SqlError, Statement } from "@effect/sql"
import Sqlite from "better-sqlite3"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"

/** A statement prepared once, on first use; every run counts in `SqliteHandle.statements()`. */
export interface PreparedStatement {
  readonly run: (...params: ReadonlyArray<unknown>) => Sqlite.RunResult
  readonly get: (...params: ReadonlyArray<unknown>) => unknown
  readonly all: (...params: ReadonlyArray<unknown>) => ReadonlyArray<unknown>
  /** The rows as value arrays in the statement's column order (no object per row). */
  readonly values: (...params: ReadonlyArray<unknown>) => ReadonlyArray<ReadonlyArray<unknown>>
}

/** The connection every statement of this process runs on, and how many statements have run on it. */
export class SqliteHandle extends Context.Tag("@parley/server/SqliteHandle")<SqliteHandle, {
  readonly db: Sqlite.Database
  /**
   * Statements run so far, through the SqlClient and through `prepared` alike (the tests' guards: cached
   * reads run none, an accepted message runs a fixed few).
   */
  readonly statements: () => number
  /**
   * Write transactions committed so far: each COMMIT of `withTransaction`, and each statement that wrote
   * outside a transaction (its own). A commit is the dearest step of a write (the tests' guard: one per
   * accepted message).
   */
  readonly commits: () => number
  /**
   * Whether the transaction open on the connection has changed anything yet (any statement that writes,
   * since the last statement run outside a transaction — its BEGIN). False outside a transaction.
   */
  readonly writtenInTransaction: () => boolean
  /** A fixed statement of the repositories, prepared on first use and kept. Run it inside `use`. */
  readonly prepared: (sql: string) => PreparedStatement
  /**
   * Runs synchronous work on the connection as one step: inside the fiber's transaction when it has one
   * (the same connection), otherwise once no other fiber's transaction holds the connection — so a
   * statement never lands inside someone else's transaction. A thrown error becomes a SqlError.
   */
  readonly use: <A>(work: () => A) => Effect.Effect<A, SqlError.SqlError>
  /**
   * `sql.withTransaction` for this connection, without its per-transaction scope, span and statement
   * preparation: BEGIN, the effect (its SqlClient statements join the transaction), COMMIT or ROLLBACK.
   * Nested in another transaction it is the client's own (a savepoint).
   */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
}>() {}

/** WAL pages between two automatic checkpoints (SQLite's default is 1,000). */
export const WAL_AUTOCHECKPOINT_PAGES = 4000

/** Statements are prepared once and kept: the repositories' SQL is a fixed set of texts. */
const MAX_PREPARED = 500

/** Prepares each statement text once and keeps it (the client's statements and `prepared` share them). */
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

/**
 * Counts statements before they run, and commits after: a COMMIT that ended a transaction, or a statement
 * that wrote on its own.
 */
interface Counter {
  /** Answers whether a transaction was open before the statement, for `ran`. */
  readonly statement: (statement: Sqlite.Statement) => boolean
  readonly ran: (statement: Sqlite.Statement, inTransactionBefore: boolean) => void
}

const COMMIT = /^\s*(COMMIT|END)\b/i

const makeConnection = (
  db: Sqlite.Database,
  prepare: (sql: string) => Sqlite.Statement,
  count: Counter
): SqlConnection.Connection => {
  const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean, unprepared = false) =>
    Effect.try({
      try: (): ReadonlyArray<any> => {
        const statement = unprepared ? db.prepare(sql) : prepare(sql)
        const before = count.statement(statement)
        if (statement.reader) {
          const rows = statement.all(...params)
          count.ran(statement, before)
          return rows
        }
        const result = statement.run(...params)
        count.ran(statement, before)
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
          const statement = prepare(sql)
          const before = count.statement(statement)
          if (!statement.reader) {
            statement.run(...params)
            count.ran(statement, before)
            return []
          }
          const rows = allValues(statement, params)
          count.ran(statement, before)
          return rows
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
    // A checkpoint (copying the WAL into the database, two fsyncs) runs inside whichever commit crosses the
    // threshold and holds the event loop meanwhile; with a larger threshold there are fewer, and pages written
    // again and again between two are copied once (the WAL's size between checkpoints: docs/benchmarks.md).
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
    let statements = 0
    let commits = 0
    let written = false
    const counter: Counter = {
      statement: (statement) => {
        statements++
        const inTransaction = db.inTransaction
        if (!inTransaction) written = false
        else if (!statement.readonly) written = true
        return inTransaction
      },
      ran: (statement, inTransactionBefore) => {
        if (db.inTransaction) return
        if (inTransactionBefore ? COMMIT.test(statement.source) : !statement.readonly) commits++
      }
    }
    const prepare = preparer(db)
    const connection = makeConnection(db, prepare, counter)
    // One connection: statements take turns, and a transaction holds it from BEGIN to COMMIT.
    const semaphore = yield* Effect.makeSemaphore(1)
    // A statement holds the permit until its scope closes, after it has run: released as soon as the
    // connection is handed over, another fiber could BEGIN before the statement runs, which would then
    // commit or roll back with that fiber's transaction.
    const acquirer = Effect.uninterruptibleMask((restore) =>
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
      transactionAcquirer: acquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const prepared = (sql: string): PreparedStatement => {
      const counted = <A>(execute: (statement: Sqlite.Statement) => A): A => {
        const statement = prepare(sql)
        const before = counter.statement(statement)
        const result = execute(statement)
        counter.ran(statement, before)
        return result
      }
      return {
        run: (...params) => counted((s) => s.run(...params)),
        get: (...params) => counted((s) => s.get(...params)),
        all: (...params) => counted((s) => s.all(...params)),
        values: (...params) => counted((s) => allValues(s, params))
      }
    }
    const attempt = <A>(work: () => A) =>
      Effect.try({ try: work, catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" }) })
    const inTransaction = Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), Option.isSome)
    // With no transaction open on the connection the work runs at once: it is synchronous, so no other
    // fiber's statement can come between; otherwise in the fiber's own transaction, or after another's.
    // Outside a transaction (the usual case) one step: the work runs inside the suspension itself.
    const use = <A>(work: () => A) =>
      Effect.suspend((): Effect.Effect<A, SqlError.SqlError> => {
        if (db.inTransaction) {
          return Effect.flatMap(inTransaction, (inside) => (inside ? attempt(work) : semaphore.withPermits(1)(attempt(work))))
        }
        try {
          return Effect.succeed(work())
        } catch (cause) {
          return Effect.fail(new SqlError.SqlError({ cause, message: "Failed to execute statement" }))
        }
      })
    const begin = prepared("BEGIN")
    const commit = prepared("COMMIT")
    const rollback = prepared("ROLLBACK")
    const finish = (exit: Exit.Exit<unknown, unknown>) =>
      Effect.orDie(attempt(() => {
        if (Exit.isFailure(exit)) return void rollback.run()
        try {
          commit.run()
        } catch (error) {
          // A failed COMMIT can leave the transaction open; never leave it to the next statement.
          if (db.inTransaction) rollback.run()
          throw error
        }
      }))
    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.flatMap(inTransaction, (inside) =>
        inside
          ? client.withTransaction(effect)
          : semaphore.withPermits(1)(Effect.uninterruptibleMask((restore) =>
            Effect.zipRight(
              attempt(() => begin.run()),
              Effect.onExit(
                Effect.provideService(restore(effect), SqlClient.TransactionConnection, [connection, 0] as const),
                finish
              )
            )
          )))
    return Context.make(SqlClient.SqlClient, client).pipe(
      Context.add(SqliteHandle, {
        db,
        statements: () => statements,
        commits: () => commits,
        writtenInTransaction: () => written && db.inTransaction,
        prepared,
        use,
        withTransaction
      })
    )
  })

export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient | SqliteHandle> =>
  Layer.scopedContext(make(filename)).pipe(Layer.provide(Reactivity.layer))
