/**
 * The store a black-box test runs on. The server suite runs once per store:
 * `PARLEY_TEST_STORE=sqlite` (the default; a temporary data directory) and
 * `PARLEY_TEST_STORE=postgres` (a fresh database per test server, dropped
 * after, so runs never collide, on the PostgreSQL that postgres-setup.ts found
 * at PARLEY_TEST_PG_URL or started for the run). A fresh Postgres database is
 * a copy of the run's template, already migrated (postgres-template.ts), unless
 * the test asks for an empty one.
 *
 * Tests that look inside the database (to seed a backlog, or count the
 * carrier simulator's sends) use `TestDatabase.query` with `?` placeholders
 * and portable SQL, so the same assertion runs on both stores.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Sqlite from "better-sqlite3"
import pg from "pg"
import { inject } from "vitest"
// The type of inject("parleyPostgresUrl") is declared beside the global setup that provides it.
import type {} from "./postgres-setup.js"
import { withDatabase } from "./postgres-template.js"

export type StoreKind = "sqlite" | "postgres"

export const testStore: StoreKind = process.env["PARLEY_TEST_STORE"] === "postgres" ? "postgres" : "sqlite"

/** Where the test databases are created (any database on the server will do as the admin connection). */
const adminUrl = (): string => {
  const url = inject("parleyPostgresUrl")
  if (url === undefined) throw new Error("no PostgreSQL for this run: Postgres tests run in the Postgres pass (PARLEY_TEST_STORE=postgres)")
  return url
}

export interface TestDatabaseOptions {
  /**
   * No schema at all, as a new deployment's database: the first server (or CLI command) migrates it.
   * Otherwise a Postgres database starts migrated, copied from the run's template; SQLite always starts empty.
   */
  readonly empty?: boolean
}

export interface TestDatabase {
  readonly kind: StoreKind
  /** What a server or CLI process needs in its environment to use this store. */
  readonly env: Readonly<Record<string, string>>
  /** Directory for the SQLite file (also set for Postgres, where it stays empty). */
  readonly dataDir: string
  /** Runs one statement with `?` placeholders; rows come back with numbers as numbers. */
  readonly query: <Row extends object>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>
  /** Closes this test's connection (the server's are its own). */
  readonly close: () => Promise<void>
  /** Closes and removes the store. */
  readonly drop: () => Promise<void>
}

/** `?` placeholders to Postgres' `$1, $2…` (test SQL has no `?` inside literals). */
const numbered = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

// COUNT(*) and BIGINT columns come back from node-postgres as strings; tests compare numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value))

const createPostgres = async (dataDir: string, options: TestDatabaseOptions): Promise<TestDatabase> => {
  const name = `parley_test_${process.pid}_${randomBytes(4).toString("hex")}`
  const template = options.empty === true ? undefined : inject("parleyPostgresTemplate")
  const admin = new pg.Client({ connectionString: adminUrl() })
  await admin.connect()
  try {
    await admin.query(template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}`)
    // Commits answer before their WAL reaches the disk (every connection to this database, the servers'
    // included): a test kills Parley, never PostgreSQL, so what a commit promises Parley is unchanged, and
    // a commit costs about a millisecond instead of a disk flush (6–8 ms on this machine's cluster).
    await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`)
  } finally {
    await admin.end()
  }
  const url = withDatabase(adminUrl(), name)
  // A pool, so a test's concurrent queries each get a connection.
  let pool: pg.Pool | undefined
  const connection = () => {
    if (pool === undefined) {
      pool = new pg.Pool({ connectionString: url, max: 4 })
      // An idle connection the server ended (a test stopping Postgres, another process ending backends)
      // is dropped from the pool; the next query fails or reconnects, instead of an uncaught error
      // failing whichever test file happens to be running.
      pool.on("error", () => {})
    }
    return pool
  }
  const close = async () => {
    const open = pool
    pool = undefined
    await open?.end()
  }
  return {
    kind: "postgres",
    // Replicas of one database share its secret key, as the README asks of every Postgres deployment.
    env: { DATABASE_URL: url, PARLEY_SECRET_KEY: randomBytes(32).toString("base64") },
    dataDir,
    query: async <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) => {
      const result = await connection().query(numbered(text), [...params])
      return result.rows as ReadonlyArray<Row>
    },
    close,
    drop: async () => {
      await close()
      const dropper = new pg.Client({ connectionString: adminUrl() })
      await dropper.connect()
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await dropper.end()
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

const createSqlite = (dataDir: string): TestDatabase => {
  let db: Sqlite.Database | undefined
  const connection = () => {
    if (db === undefined) {
      db = new Sqlite(join(dataDir, "parley.db"))
      db.pragma("busy_timeout = 5000")
    }
    return db
  }
  const close = async () => {
    db?.close()
    db = undefined
  }
  return {
    kind: "sqlite",
    env: {},
    dataDir,
    query: async <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) => {
      const statement = connection().prepare(text)
      if (statement.reader) return statement.all(...params) as ReadonlyArray<Row>
      statement.run(...params)
      return []
    },
    close,
    drop: async () => {
      await close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/** A fresh store of the kind this run tests: empty, or (Postgres) migrated and otherwise empty; see TestDatabaseOptions. */
export const createTestDatabase = async (kind: StoreKind = testStore, options: TestDatabaseOptions = {}): Promise<TestDatabase> => {
  const dataDir = mkdtempSync(join(tmpdir(), "parley-test-"))
  return kind === "postgres" ? createPostgres(dataDir, options) : createSqlite(dataDir)
}

/** The columns of the actions table, for tests that copy rows. */
export const actionColumns = async (db: TestDatabase): Promise<ReadonlyArray<string>> => {
  const rows = db.kind === "postgres"
    ? await db.query<{ name: string }>(
      `SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'actions' ORDER BY ordinal_position`
    )
    : await db.query<{ name: string }>(`SELECT name FROM pragma_table_info('actions')`)
  return rows.map((row) => row.name)
}
