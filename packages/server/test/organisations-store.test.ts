/**
 * Settings changes on the embedded SQLite store while another process writes
 * (the server's dispatcher writes all the time; `parley orgs update` is another
 * connection): the update waits its turn for the write lock instead of failing
 * with SQLITE_BUSY because its read snapshot went stale meanwhile. CI saw
 * `orgs update` fail this way ("storage failure in organisations.update").
 */
import { Organisations } from "@parley/core/domain"
import { Effect, ManagedRuntime, Option } from "effect"
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as SqlOrganisations from "../src/store/SqlOrganisations.js"
import { openOrganisation } from "./support/organisations.js"
import { onTestDatabase } from "./support/storeLayer.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

/** Takes the database's write lock, says so, keeps it 300 ms with an uncommitted change, then commits. */
const HOLDER = `
const Database = require("better-sqlite3")
const db = new Database(process.argv[1])
db.exec("BEGIN IMMEDIATE")
db.prepare("UPDATE organisations SET name = 'Busy too' WHERE id = 'org_busy'").run()
process.stdout.write("locked\\n")
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300)
db.exec("COMMIT")
db.close()
`

describe.skipIf(testStore !== "sqlite")("organisation settings under a concurrent writer (SQLite)", () => {
  let db: TestDatabase
  let runtime: ManagedRuntime.ManagedRuntime<Organisations.Organisations, unknown>

  beforeAll(async () => {
    db = await createTestDatabase()
    runtime = ManagedRuntime.make(onTestDatabase(db, SqlOrganisations.layer))
    await runtime.runPromise(Effect.flatMap(Organisations.Organisations, (o) =>
      o.insert(openOrganisation("org_busy", "Busy"))))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
    await db?.drop()
  })

  it("waits for another process's write transaction, then applies the change", async () => {
    // Another process (better-sqlite3 blocks its own thread while it waits, so not this one) holds the write lock
    // for 300 ms with a change of its own, then commits.
    const holder = spawn(process.execPath, ["-e", HOLDER, join(db.dataDir, "parley.db")], {
      cwd: dirname(fileURLToPath(import.meta.url)),
      stdio: ["ignore", "pipe", "inherit"]
    })
    const exited = new Promise<number | null>((resolve) => holder.once("exit", resolve))
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()))
    const updated = await runtime.runPromise(
      Effect.flatMap(Organisations.Organisations, (o) => o.update("org_busy", { smsAllowance: 0 }))
    )
    expect(await exited).toBe(0)
    expect(Option.map(updated, (org) => [org.name, org.smsAllowance])).toEqual(Option.some(["Busy too", 0]))
  })
})
