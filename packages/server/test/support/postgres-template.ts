/**
 * The Postgres pass's template database: the schema is migrated once per run, into a database of its own,
 * and every test database is then a copy of it (`CREATE DATABASE … TEMPLATE …`, store.ts) instead of an
 * empty database each test server migrates at start. Only the migrations run here, not a server: what a
 * server writes at its first start (the cursor secret, sealed under its own PARLEY_SECRET_KEY) is still
 * written by each test's server, on its own copy. A server on an empty database, migrating it, is still
 * tested: `createTestDatabase("postgres", { empty: true })`.
 */
import { randomBytes } from "node:crypto"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { migrations } from "../../src/store/migrations.js"

export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

const onAdmin = async (adminUrl: string, statements: ReadonlyArray<string>): Promise<void> => {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    for (const statement of statements) await admin.query(statement)
  } finally {
    await admin.end()
  }
}

/** Creates and migrates the run's template database; answers its name. */
export const createTemplate = async (adminUrl: string): Promise<string> => {
  const name = `parley_template_${process.pid}_${randomBytes(4).toString("hex")}`
  await onAdmin(adminUrl, [`CREATE DATABASE ${name}`])
  const migrate = PgMigrator.layer({ loader: PgMigrator.fromRecord(migrations) }).pipe(
    Layer.provide(NodeContext.layer),
    Layer.provide(PgClient.layer({ url: Redacted.make(withDatabase(adminUrl, name)) }))
  )
  try {
    await Effect.runPromise(Effect.scoped(Layer.build(migrate)))
    // No connection may be open on a template while it is copied: none is allowed from now on.
    await onAdmin(adminUrl, [`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`])
  } catch (error) {
    await dropTemplate(adminUrl, name)
    throw error
  }
  return name
}

export const dropTemplate = (adminUrl: string, name: string): Promise<void> =>
  onAdmin(adminUrl, [`ALTER DATABASE ${name} WITH IS_TEMPLATE false`, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`])
