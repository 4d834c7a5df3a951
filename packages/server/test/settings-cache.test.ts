/**
 * The settings cache on the embedded SQLite store (SettingsCache): a warm
 * read of an API key or an organisation's numbers runs no SQL statement, and
 * a change made through another connection (the CLI is another process) is
 * seen by the very next read. The end-to-end form — revoke through the CLI,
 * the next request is 401 — is in auth.test.ts.
 */
import { ApiKeyStore, Organisations } from "@parley/core/domain"
import Database from "better-sqlite3"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, ManagedRuntime, Option } from "effect"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.js"
import { DatabaseLive } from "../src/store/Database.js"
import { CACHED_SETTINGS_TABLES } from "../src/store/migrations.js"
import * as SqlApiKeyStore from "../src/store/SqlApiKeyStore.js"
import { SqliteHandle } from "../src/store/sqlite/SqliteDriver.js"
import * as SqlOrganisations from "../src/store/SqlOrganisations.js"
import { openOrganisation } from "./support/organisations.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

const HASH = "a".repeat(64)

describe.skipIf(testStore !== "sqlite")("settings cache (SQLite)", () => {
  let db: TestDatabase
  let other: Database.Database
  let runtime: ManagedRuntime.ManagedRuntime<
    Organisations.Organisations | ApiKeyStore.ApiKeyStore | SqliteHandle | SqlClient.SqlClient,
    unknown
  >

  const statements = () => runtime.runPromise(Effect.map(SqliteHandle, (handle) => handle.statements()))
  const numbers = () =>
    runtime.runPromise(Effect.flatMap(Organisations.Organisations, (o) => o.listNumbers("org_cache")))
  const key = () => runtime.runPromise(Effect.flatMap(ApiKeyStore.ApiKeyStore, (k) => k.findByHash(HASH)))

  beforeAll(async () => {
    db = await createTestDatabase()
    const config = ConfigProvider.fromMap(new Map([["PARLEY_DATA_DIR", db.dataDir], ...Object.entries(db.env)]))
    const store = Layer.mergeAll(SqlOrganisations.layer, SqlApiKeyStore.layer).pipe(
      Layer.provideMerge(DatabaseLive)
    )
    runtime = ManagedRuntime.make(
      store.pipe(Layer.provide(ServerConfig.layer), Layer.provide(Layer.setConfigProvider(config)))
    ) as typeof runtime
    await runtime.runPromise(Effect.gen(function*() {
      const organisations = yield* Organisations.Organisations
      yield* organisations.insert(openOrganisation("org_cache", "Cache"))
      yield* (yield* ApiKeyStore.ApiKeyStore).insert({
        id: "key_cache",
        orgId: "org_cache",
        name: "cached",
        mode: "live",
        hash: HASH,
        prefix: "parley_live_aaaa",
        scopes: ["messages:read"],
        numberSids: [],
        botIds: [],
        createdAt: new Date().toISOString(),
        expiresAt: null,
        revokedAt: null
      })
    }))
    // Another connection to the same file, as the CLI (another process) has.
    other = new Database(join(db.dataDir, "parley.db"))
  }, 60_000)

  afterAll(async () => {
    other?.close()
    await runtime?.dispose()
    await db?.drop()
  })

  it("serves a warm key and a warm number list without running a statement", async () => {
    expect(Option.isSome(await key())).toBe(true)
    expect(await numbers()).toEqual([])
    const before = await statements()
    for (let i = 0; i < 5; i++) {
      expect(Option.map(await key(), (k) => k.id)).toEqual(Option.some("key_cache"))
      expect(await numbers()).toEqual([])
    }
    expect(await statements()).toBe(before)
  })

  it("sees a change made through another connection on the very next read", async () => {
    await key()
    other.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = 'key_cache'").run(new Date().toISOString())
    expect(Option.map(await key(), (k) => k.revokedAt !== null)).toEqual(Option.some(true))

    await numbers()
    other.prepare(
      `INSERT INTO numbers (org_id, sid, phone_number, friendly_name, sms, voice, whatsapp, voice_outbound_bot_id)
       VALUES ('org_cache', 'PN1', '+14155550100', 'Line', 1, 1, 0, NULL)`
    ).run()
    expect((await numbers()).map((n) => n.sid)).toEqual(["PN1"])

    await key()
    other.prepare("UPDATE organisations SET subscription_active = 0 WHERE id = 'org_cache'").run()
    const access = Option.getOrThrow(await key()).access
    expect(Option.map(access?.organisation ?? Option.none(), (o) => o.subscriptionActive)).toEqual(Option.some(false))
  })

  it("serves nothing from memory while another fiber's transaction holds the connection (its snapshot may be older)", async () => {
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    const name = await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* ApiKeyStore.ApiKeyStore
      const reading = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      // Another fiber's transaction, paused between statements with its read snapshot taken.
      const other_ = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT value FROM settings_version`
        yield* Deferred.succeed(reading, undefined)
        yield* Deferred.await(proceed)
      })))
      yield* Deferred.await(reading)
      // Committed by another connection (the CLI) after that snapshot was taken.
      other.prepare("UPDATE api_keys SET name = 'renamed' WHERE id = 'key_cache'").run()
      const lookup = yield* Effect.fork(store.findByHash(HASH))
      yield* Effect.sleep("20 millis")
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(other_)
      return Option.map(yield* Fiber.join(lookup), (k) => k.name)
    }))
    expect(name).toEqual(Option.some("renamed"))
    other.prepare("UPDATE api_keys SET name = 'cached' WHERE id = 'key_cache'").run()
  })

  it("keeps nothing a transaction saw of its own settings change, which may yet roll back", async () => {
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    const inside = await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* ApiKeyStore.ApiKeyStore
      let seen: Option.Option<string> = Option.none()
      yield* Effect.either(sql.withTransaction(Effect.gen(function*() {
        yield* sql`UPDATE api_keys SET name = 'uncommitted' WHERE id = 'key_cache'`
        seen = Option.map(yield* store.findByHash(HASH), (k) => k.name)
        return yield* Effect.fail("roll back")
      })))
      return seen
    }))
    // Within the transaction its own change; after the rollback, what is committed.
    expect(inside).toEqual(Option.some("uncommitted"))
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
  })

  it("serves a warm entry inside a transaction that has written nothing without reading the version", async () => {
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    const counted = await runtime.runPromise(Effect.gen(function*() {
      const handle = yield* SqliteHandle
      const store = yield* ApiKeyStore.ApiKeyStore
      return yield* handle.withTransaction(Effect.gen(function*() {
        const before = handle.statements()
        const name = Option.map(yield* store.findByHash(HASH), (k) => k.name)
        return { name, statements: handle.statements() - before }
      }))
    }))
    expect(counted).toEqual({ name: Option.some("cached"), statements: 0 })
  })

  it("sees inside a transaction a change committed by another connection since the last look", async () => {
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    other.prepare("UPDATE api_keys SET name = 'renamed' WHERE id = 'key_cache'").run()
    const inside = await runtime.runPromise(Effect.gen(function*() {
      const handle = yield* SqliteHandle
      const store = yield* ApiKeyStore.ApiKeyStore
      return yield* handle.withTransaction(Effect.map(store.findByHash(HASH), Option.map((k) => k.name)))
    }))
    expect(inside).toEqual(Option.some("renamed"))
    other.prepare("UPDATE api_keys SET name = 'cached' WHERE id = 'key_cache'").run()
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
  })

  it("loads through the client when the version cannot be read, keeps nothing, and sees the next change", async () => {
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    other.exec("ALTER TABLE settings_version RENAME TO settings_version_away")
    try {
      expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("cached"))
    } finally {
      other.exec("ALTER TABLE settings_version_away RENAME TO settings_version")
    }
    // The failed look was not taken as seen: a change made now is on the very next read.
    other.prepare("UPDATE api_keys SET name = 'after the failure' WHERE id = 'key_cache'").run()
    expect(Option.map(await key(), (k) => k.name)).toEqual(Option.some("after the failure"))
    other.prepare("UPDATE api_keys SET name = 'cached' WHERE id = 'key_cache'").run()
  })

  it("keeps serving from memory across an update that changes nothing (an unlimited allowance taken)", async () => {
    await key()
    const before = await statements()
    other.prepare("UPDATE organisations SET sms_allowance = sms_allowance - 1 WHERE id = 'org_cache'").run()
    await key()
    expect(await statements()).toBe(before)
  })

  it("bumps the version on a change to any column of the cached tables (a column added later needs its trigger)", () => {
    for (const table of CACHED_SETTINGS_TABLES) {
      const trigger = other.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?")
        .pluck().get(`${table}_updated`) as string | undefined
      expect(trigger, `${table}_updated`).toBeDefined()
      const columns = other.prepare("SELECT name FROM pragma_table_info(?)").pluck().all(table) as Array<string>
      for (const column of columns) expect(trigger, `${table}.${column}`).toContain(`OLD."${column}" IS NOT NEW."${column}"`)
    }
  })
})
