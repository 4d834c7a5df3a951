/**
 * The statements an accepted POST /messages runs on the embedded SQLite store, counted on the
 * connection (SqliteHandle.statements(): the SqlClient's statements and the prepared ones alike).
 * The write path's CPU cost is mostly per statement (issue 14), so a change that adds one to the
 * path fails here rather than only showing up, much later, in `pnpm bench`. The count covers
 * everything the domain does for the request: the idempotency record, the action, its
 * `message.queued` event and deliveries, and the transaction around them. The settings the request
 * reads (key, organisation, numbers) are served from memory once warm (settings-cache.test.ts).
 */
import { Actions, Authenticator, Idempotency } from "@parley/core/domain"
import { CreateMessageRequest } from "@parley/core"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppLive } from "../src/AppLayer.js"
import { ServerConfig } from "../src/config/ServerConfig.js"
import { SqliteHandle, WAL_AUTOCHECKPOINT_PAGES } from "../src/store/sqlite/SqliteDriver.js"
import { runAdmin } from "./support/admin.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

/**
 * What an accepted message costs today; lower it when the path gets cheaper. Seven for the message (the
 * idempotency look-up, BEGIN, the action, its event and deliveries, the idempotency record, COMMIT), one
 * settings version read, since the previous request's commit changed the WAL (the number look-up inside the
 * transaction reads none: settings-cache.test.ts), and — the demo organisation has a finite text allowance —
 * its usage this period, one primary-key read. That read was 0 here until migration 0045 only because this
 * test runs no dispatcher: usage was cached with the settings, so every text the dispatcher counted emptied
 * the whole settings cache (keys, numbers, the organisation) and the next request read them all again.
 */
const STATEMENTS_PER_ACCEPTED_MESSAGE = 9
/**
 * The idempotency record is written in the creation's own transaction (the store's "record" exclusion),
 * so an accepted message commits once: a commit is the dearest statement of the path (docs/benchmarks.md).
 */
const COMMITS_PER_ACCEPTED_MESSAGE = 1
/** A replay of a completed key: the settings version read, the read of the stored answer, and no write. */
const STATEMENTS_PER_REPLAY = 2

describe.skipIf(testStore !== "sqlite")("statements per POST /messages (SQLite)", () => {
  let db: TestDatabase
  let runtime: ManagedRuntime.ManagedRuntime<
    Actions.Actions | Authenticator.Authenticator | Idempotency.Idempotency | SqliteHandle | SqlClient.SqlClient,
    unknown
  >
  let key = ""
  let fromNumberSid = ""

  const statements = () => runtime.runPromise(Effect.map(SqliteHandle, (handle) => handle.statements()))
  const commits = () => runtime.runPromise(Effect.map(SqliteHandle, (handle) => handle.commits()))
  const post = (idempotencyKey: string) =>
    runtime.runPromise(Effect.gen(function*() {
      const { caller } = yield* (yield* Authenticator.Authenticator).authenticate(key)
      const actions = yield* Actions.Actions
      const payload = Schema.decodeUnknownSync(CreateMessageRequest)({ to: "+14155550123", fromNumberSid, body: "Counted" })
      return yield* actions.createMessage(caller, payload, idempotencyKey)
    }))

  beforeAll(async () => {
    db = await createTestDatabase()
    const env = { PARLEY_DATA_DIR: db.dataDir, LOG_LEVEL: "warn", ...db.env }
    const demo = await runAdmin(env, ["demo", "--json"])
    expect(demo.code, demo.stderr).toBe(0)
    const summary = JSON.parse(demo.stdout) as { keys: { live: string }; numbers: ReadonlyArray<{ sid: string; whatsApp?: boolean }> }
    key = summary.keys.live
    fromNumberSid = summary.numbers[0]?.sid ?? ""
    const config = ConfigProvider.fromMap(new Map(Object.entries(env)))
    runtime = ManagedRuntime.make(
      AppLive.pipe(Layer.provide(ServerConfig.layer), Layer.provide(Layer.setConfigProvider(config)))
    ) as typeof runtime
    // Warm: the key, its organisation and the numbers are loaded into the settings cache once.
    await post("warm-up")
  }, 60_000)

  afterAll(async () => {
    await runtime?.dispose()
    await db?.drop()
  })

  it(`runs at most ${STATEMENTS_PER_ACCEPTED_MESSAGE} statements for an accepted message`, async () => {
    const before = await statements()
    const created = await post("counted-1")
    expect(created.replayed).toBe(false)
    expect(await statements() - before).toBeLessThanOrEqual(STATEMENTS_PER_ACCEPTED_MESSAGE)
    const rows = await db.query<{ n: number }>(
      "SELECT count(*) AS n FROM actions a JOIN events e ON e.org_id = a.org_id WHERE a.id = ? AND e.type = 'message.queued'",
      [Number(created.ack.id)]
    )
    expect(rows[0]?.n).toBeGreaterThan(0)
  })

  it(`commits ${COMMITS_PER_ACCEPTED_MESSAGE} transaction for an accepted message`, async () => {
    const before = await commits()
    const created = await post("counted-commits")
    expect(created.replayed).toBe(false)
    expect(await commits() - before).toBe(COMMITS_PER_ACCEPTED_MESSAGE)
    const stored = await db.query<{ status: number; body: string }>(
      "SELECT status, body FROM idempotency_keys WHERE idempotency_key = ?",
      ["counted-commits"]
    )
    expect(stored).toHaveLength(1)
    expect(stored[0]?.status).toBe(202)
    expect(JSON.parse(stored[0]?.body ?? "{}")).toMatchObject({ id: created.ack.id })
  })

  it(`runs at most ${STATEMENTS_PER_REPLAY} statement and commits nothing for a replay`, async () => {
    const first = await post("counted-2")
    const before = await statements()
    const commitsBefore = await commits()
    const again = await post("counted-2")
    expect(await statements() - before).toBeLessThanOrEqual(STATEMENTS_PER_REPLAY)
    expect(await commits() - commitsBefore).toBe(0)
    expect(again).toEqual({ ack: first.ack, replayed: true })
  })

  it(`checkpoints the WAL every ${WAL_AUTOCHECKPOINT_PAGES} pages, not SQLite's 1,000`, async () => {
    const pages = await runtime.runPromise(Effect.map(SqliteHandle, (handle) =>
      handle.db.pragma("wal_autocheckpoint", { simple: true })))
    expect(pages).toBe(WAL_AUTOCHECKPOINT_PAGES)
    expect(WAL_AUTOCHECKPOINT_PAGES).toBeGreaterThan(1000)
  })

  it("treats a reservation left by a version that reserved as in flight until it lapses, then takes it over", async () => {
    const payload = Schema.decodeUnknownSync(CreateMessageRequest)({ to: "+14155550123", fromNumberSid, body: "Counted" })
    const print = await runtime.runPromise(Effect.gen(function*() {
      const { caller } = yield* (yield* Authenticator.Authenticator).authenticate(key)
      return { keyId: caller.keyId, fingerprint: Idempotency.fingerprint({
        keyId: caller.keyId, idempotencyKey: "left-live", method: "POST", path: "/api/v1/messages", payload
      }) }
    }))
    const reserve = (idempotencyKey: string, lockedUntil: number, fingerprint: string) =>
      db.query(
        `INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body)
         VALUES (?, ?, ?, ?, ?, NULL, NULL)`,
        [print.keyId, idempotencyKey, fingerprint, lockedUntil, Date.now() + Idempotency.RETENTION_MS]
      )
    await reserve("left-live", Date.now() + Idempotency.LOCK_MS, print.fingerprint)
    await expect(post("left-live")).rejects.toThrow(/still being processed/)
    await reserve("left-lapsed", Date.now() - 1, "any")
    expect((await post("left-lapsed")).replayed).toBe(false)
    expect((await post("left-lapsed")).replayed).toBe(true)
  })

  it("rolls back everything a creation wrote when its record is refused (another request recorded the key meanwhile)", async () => {
    const count = async (sql: string) => (await db.query<{ n: number }>(sql))[0]?.n
    const actionsBefore = await count("SELECT count(*) AS n FROM actions")
    const commitsBefore = await commits()
    const outcome = await runtime.runPromise(Effect.gen(function*() {
      const handle = yield* SqliteHandle
      const idempotency = yield* Idempotency.Idempotency
      const insertAction = handle.prepared(`INSERT INTO actions (org_id, kind, type, direction, status, line, counterpart,
        body, at, due_at, modified, linked_records) VALUES ('org_demo', 'message', 'SMS', 'Outbound', 'Queued',
        '+14155550100', '+14155550199', 'rolled back', '2030-01-01T00:00:00.000Z', 1893456000000,
        '2030-01-01T00:00:00.000Z', '[]')`)
      const recordMeanwhile = handle.prepared(`INSERT INTO idempotency_keys
        (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body) VALUES ('key_x', 'taken', 'f', 0, ?, 202, '{}')`)
      // The work writes an action; then, still inside the transaction, the key is recorded as if by another
      // request, so the creation's own record is refused.
      const work = handle.use(() => {
        insertAction.run()
        recordMeanwhile.run(Date.now() + Idempotency.RETENTION_MS)
        return { n: 1 }
      })
      const request = { keyId: "key_x", idempotencyKey: "taken", method: "POST", path: "/api/v1/messages", payload: {} }
      return yield* Effect.either(idempotency.run(request, { schema: Schema.Struct({ n: Schema.Number }), status: 202 }, work))
    }))
    // What held the key was rolled back with the work, so the request is told to retry.
    expect(outcome._tag === "Left" ? outcome.left._tag : outcome).toBe("ActionProcessing")
    expect(await count("SELECT count(*) AS n FROM actions")).toBe(actionsBefore)
    expect(await count("SELECT count(*) AS n FROM idempotency_keys WHERE key_id = 'key_x'")).toBe(0)
    expect(await commits()).toBe(commitsBefore)
  })

  it("counts a commit made through the SqlClient's own transaction, and not a rollback", async () => {
    const before = await commits()
    await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.withTransaction(sql`UPDATE settings SET value = value WHERE name = 'nothing'`)))
    expect(await commits()).toBe(before + 1)
    await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.either(sql.withTransaction(Effect.zipRight(sql`UPDATE settings SET value = value WHERE name = 'nothing'`, Effect.fail("no"))))))
    expect(await commits()).toBe(before + 1)
  })
})
