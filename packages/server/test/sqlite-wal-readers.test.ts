/**
 * The SQLite file stays one database for every process that opens it: a server restarted twice, admin CLI runs
 * in between, and a reader that stays open throughout (a backup or replication tool, an operator's `sqlite3`
 * shell; here the test's own connection). Each text the server accepts is seen at once by a fresh connection
 * of another process. Found in the issue 31 audit: the settings cache's WAL probe closed its descriptor of the
 * -shm file while SQLite's connection was still open, which drops every POSIX lock the process holds on that
 * file; from the second restart on, the server's commits went unseen by other processes ("3 of 4") and the
 * file then read as "database disk image is malformed". SQLite only.
 */
import Sqlite from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { testStore } from "./support/store.js"

describe.skipIf(testStore !== "sqlite")("SQLite with a long-lived reader, CLI runs and restarts", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  }, 120_000)

  afterAll(async () => {
    await server?.dispose()
  })

  /** Actions as a new connection of this process sees them, or the error it meets. */
  const seenByAnother = (): string => {
    try {
      const db = new Sqlite(`${server.dataDir}/parley.db`, { readonly: true })
      try {
        return String((db.prepare("SELECT COUNT(*) AS n FROM actions").get() as { n: number }).n)
      } finally {
        db.close()
      }
    } catch (error) {
      return String(error)
    }
  }

  it("every accepted text is seen by another process, across restarts and CLI runs", async () => {
    const base = Number(seenByAnother())
    let sent = 0
    const seen: Array<string> = []
    const step = async (what: string) => {
      const response = await server.fetch("/api/v1/messages", {
        key: demo.keys.live,
        method: "POST",
        headers: { "idempotency-key": `wal-readers-${++sent}` },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: `text ${sent}` })
      })
      expect(response.status).toBe(202)
      const n = seenByAnother()
      seen.push(`${what}: ${/^\d+$/.test(n) ? Number(n) - base : n} of ${sent}`)
    }
    // The long-lived reader: the test's own connection, opened now and kept.
    await server.db.query("SELECT COUNT(*) FROM actions")
    await step("started")
    await server.restart()
    await step("restarted")
    await server.admin(["crm", "status", demo.orgId])
    await step("after a CLI run")
    await server.restart()
    await step("restarted again")
    await server.admin(["crm", "status", demo.orgId])
    await step("after another CLI run")
    await server.restart()
    await step("restarted a third time")
    expect(seen).toEqual([
      "started: 1 of 1",
      "restarted: 2 of 2",
      "after a CLI run: 3 of 3",
      "restarted again: 4 of 4",
      "after another CLI run: 5 of 5",
      "restarted a third time: 6 of 6"
    ])
  }, 120_000)
})
