/**
 * The store's fast paths on the embedded SQLite connection: WalCommitProbe
 * (has anything been committed since the last look, for one `pread`) and
 * DirectReads (a fixed read straight on the connection, except while a
 * transaction holds it). Both must never show less than the database holds,
 * nor more: a commit from another connection is seen on the very next look,
 * and a read never sees another fiber's uncommitted writes.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import Database from "better-sqlite3"
import { Deferred, Effect, Either, Fiber, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as DirectReads from "../src/store/DirectReads.js"
import * as SqliteDirectReads from "../src/store/sqlite/SqliteDirectReads.js"
import * as SqliteDriver from "../src/store/sqlite/SqliteDriver.js"
import * as WalCommitProbe from "../src/store/sqlite/WalCommitProbe.js"
import { testStore } from "./support/store.js"

describe.skipIf(testStore !== "sqlite")("store fast paths on SQLite", () => {
  let dir: string
  let file: string
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | DirectReads.DirectReads | SqliteDriver.SqliteHandle, never>
  let other: Database.Database

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "parley-direct-"))
    file = join(dir, "fast.db")
    runtime = ManagedRuntime.make(SqliteDirectReads.layer.pipe(Layer.provideMerge(SqliteDriver.layer(file))))
    await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`))
    // Another connection to the same file, as the CLI (another process) has.
    other = new Database(file)
  })

  afterAll(async () => {
    other?.close()
    await runtime?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  describe("WalCommitProbe", () => {
    /** A look accepted at once: false only when nothing has been committed since the last true. */
    const mayHaveChanged = (probe: WalCommitProbe.WalCommitProbe) => {
      const accept = probe.changes()
      accept?.()
      return accept !== null
    }

    it("answers maybe once per commit, from this connection or another, and no otherwise", async () => {
      const probe = WalCommitProbe.open(file)
      try {
        expect(mayHaveChanged(probe)).toBe(true)
        expect(mayHaveChanged(probe)).toBe(false)
        expect(mayHaveChanged(probe)).toBe(false)

        other.prepare("INSERT INTO t (v) VALUES ('from another connection')").run()
        expect(mayHaveChanged(probe)).toBe(true)
        expect(mayHaveChanged(probe)).toBe(false)

        await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO t (v) VALUES ('from this one')`))
        expect(mayHaveChanged(probe)).toBe(true)
        expect(mayHaveChanged(probe)).toBe(false)

        // A read commits nothing.
        other.prepare("SELECT count(*) FROM t").get()
        expect(mayHaveChanged(probe)).toBe(false)

        // A checkpoint that resets the log is seen too (the next commit starts the log over).
        other.pragma("wal_checkpoint(TRUNCATE)")
        other.prepare("INSERT INTO t (v) VALUES ('after a reset')").run()
        expect(mayHaveChanged(probe)).toBe(true)
      } finally {
        probe.close()
      }
    })

    it("keeps saying maybe until a look is accepted; peek accepts nothing", async () => {
      const probe = WalCommitProbe.open(file)
      try {
        mayHaveChanged(probe)
        expect(probe.changes()).toBeNull()
        other.prepare("INSERT INTO t (v) VALUES ('unaccepted')").run()
        expect(probe.peek()).toBe(true)
        expect(probe.peek()).toBe(true)
        // Looked at but not accepted (the caller's read failed): the next look still says maybe.
        expect(probe.changes()).not.toBeNull()
        const accept = probe.changes()
        expect(accept).not.toBeNull()
        accept?.()
        expect(probe.changes()).toBeNull()
        expect(probe.peek()).toBe(false)
        // A look accepted late accepts the header it read, not a later one.
        const stale = probe.changes()
        expect(stale).toBeNull()
        other.prepare("INSERT INTO t (v) VALUES ('first')").run()
        const acceptFirst = probe.changes()
        other.prepare("INSERT INTO t (v) VALUES ('second')").run()
        acceptFirst?.()
        expect(mayHaveChanged(probe)).toBe(true)
      } finally {
        probe.close()
      }
    })

    it("answers maybe, always, when there is no WAL index to read", () => {
      const probe = WalCommitProbe.open(join(dir, "absent.db"))
      expect(mayHaveChanged(probe)).toBe(true)
      expect(mayHaveChanged(probe)).toBe(true)
      probe.close()
    })
  })

  describe("DirectReads", () => {
    const read = (id: number) =>
      runtime.runPromise(Effect.flatMap(DirectReads.DirectReads, (direct) => direct.values("SELECT v FROM t WHERE id = ?", [id])))

    it("reads committed rows straight, as arrays of values, and counts the statement", async () => {
      const { id } = other.prepare("INSERT INTO t (v) VALUES ('committed') RETURNING id").get() as { id: number }
      const before = await runtime.runPromise(Effect.map(SqliteDriver.SqliteHandle, (h) => h.statements()))
      expect(await read(id)).toEqual([["committed"]])
      expect(await runtime.runPromise(Effect.map(SqliteDriver.SqliteHandle, (h) => h.statements()))).toBe(before + 1)
    })

    it("never sees another fiber's uncommitted write: while a transaction holds the connection, it waits for it", async () => {
      const outcome = await runtime.runPromise(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const direct = yield* DirectReads.DirectReads
        const inserted = yield* Deferred.make<number>()
        const proceed = yield* Deferred.make<void>()
        // A transaction that writes, pauses between statements (the connection stays in it), then rolls back.
        const writer = yield* Effect.fork(Effect.either(sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<{ id: number }>`INSERT INTO t (v) VALUES ('uncommitted') RETURNING id`
          yield* Deferred.succeed(inserted, rows[0]?.id ?? -1)
          yield* Deferred.await(proceed)
          return yield* Effect.fail("rolled back")
        }))))
        const id = yield* Deferred.await(inserted)
        const reader = yield* Effect.fork(direct.values("SELECT v FROM t WHERE id = ?", [id]))
        yield* Effect.sleep("20 millis")
        yield* Deferred.succeed(proceed, undefined)
        const written = yield* Fiber.join(writer)
        return { written, seen: yield* Fiber.join(reader) }
      }))
      expect(Either.isLeft(outcome.written)).toBe(true)
      expect(outcome.seen).toEqual([])
    })
  })
})
