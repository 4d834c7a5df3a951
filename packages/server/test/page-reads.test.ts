/**
 * How the embedded SQLite store reads a page of actions (SqlActionStore over
 * DirectReads): straight on the connection, one statement and no
 * client span, scope or connection acquisition — which cost about as much as
 * the page's query — and through the client, waiting, while another fiber's
 * transaction holds the connection, so a page never shows uncommitted rows.
 */
import { SqlClient } from "@effect/sql"
import { ActionStore } from "@parley/core/domain"
import { Deferred, Effect, Either, Fiber, ManagedRuntime, Option, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as SqlActionStore from "../src/store/SqlActionStore.js"
import { SqliteHandle } from "../src/store/sqlite/SqliteDriver.js"
import { storedText } from "./support/actions.js"
import { onTestDatabase } from "./support/storeLayer.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

const ORG = "org_pages"

const message = (i: number): ActionStore.NewAction => storedText(ORG, i)

const page: ActionStore.ActionQuery = {
  orgId: ORG,
  kinds: ["message"],
  lines: null,
  ownerId: null,
  conversation: null,
  beforeId: null,
  limit: 51
}

/** The names of the spans `effect` opens. */
const spansOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.tracer, (tracer) => {
    const names: Array<string> = []
    const recording = Tracer.make({
      span: (name, ...rest) => {
        names.push(name)
        return tracer.span(name, ...rest)
      },
      context: tracer.context
    })
    return Effect.map(Effect.withTracer(effect, recording), (value) => ({ value, names }))
  })

describe.skipIf(testStore !== "sqlite")("page reads on the embedded SQLite store", () => {
  let db: TestDatabase
  let runtime: ManagedRuntime.ManagedRuntime<ActionStore.ActionStore | SqlClient.SqlClient | SqliteHandle, unknown>
  const run = <A, E>(effect: Effect.Effect<A, E, ActionStore.ActionStore | SqlClient.SqlClient | SqliteHandle>) =>
    runtime.runPromise(effect)
  const statements = () => run(Effect.map(SqliteHandle, (handle) => handle.statements()))

  beforeAll(async () => {
    db = await createTestDatabase("sqlite")
    runtime = ManagedRuntime.make(onTestDatabase(db, SqlActionStore.layer)) as typeof runtime
    for (let i = 0; i < 60; i++) await run(Effect.flatMap(ActionStore.ActionStore, (store) => store.insertAction(message(i))))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
    await db?.drop()
  })

  it("runs a page, and an action by id, as one statement on the connection, without the client's span", async () => {
    // The client's statements open an `sql.execute` span (the recorder sees them).
    const client = await run(spansOf(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 AS one`)))
    expect(client.names).toContain("sql.execute")

    const before = await statements()
    const lookup = await run(spansOf(Effect.flatMap(ActionStore.ActionStore, (store) => store.findAction(ORG, "1"))))
    expect(Option.isSome(lookup.value)).toBe(true)
    expect(lookup.names).not.toContain("sql.execute")
    expect(await statements()).toBe(before + 1)

    for (const read of ["queryConversationEntries", "queryActions"] as const) {
      const before = await statements()
      const { names, value } = await run(spansOf(Effect.flatMap(ActionStore.ActionStore, (store) => store[read](page))))
      expect(value.length, read).toBe(51)
      expect(names, read).not.toContain("sql.execute")
      expect(await statements(), read).toBe(before + 1)
    }
  })

  it("waits for another fiber's transaction and never shows its uncommitted rows", async () => {
    const committed = await run(Effect.flatMap(ActionStore.ActionStore, (store) => store.queryConversationEntries(page)))
    const seen = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* ActionStore.ActionStore
      const inserted = yield* Deferred.make<void>()
      const rollBack = yield* Deferred.make<void>()
      // A writer that inserts a newer message, then holds its transaction open until told to roll back.
      const writer = yield* Effect.fork(Effect.either(sql.withTransaction(Effect.gen(function*() {
        yield* store.insertAction(message(1000))
        yield* Deferred.succeed(inserted, undefined)
        yield* Deferred.await(rollBack)
        return yield* Effect.fail("rolled back")
      }))))
      yield* Deferred.await(inserted)
      const reader = yield* Effect.fork(store.queryConversationEntries(page))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      // Still waiting for the connection the transaction holds.
      const early = yield* Fiber.poll(reader)
      yield* Deferred.succeed(rollBack, undefined)
      const written = yield* Fiber.join(writer)
      return { early, written, rows: yield* Fiber.join(reader) }
    }))
    expect(Option.isNone(seen.early)).toBe(true)
    expect(Either.isLeft(seen.written)).toBe(true)
    expect(seen.rows).toEqual(committed)
  })
})
