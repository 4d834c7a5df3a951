/**
 * Scale-out: three Parley processes on one Postgres database, requests
 * spread across them. Postgres is what coordinates them: the rate limit,
 * idempotency, dispatch claims and event delivery are rows, not memory.
 * Runs in the Postgres pass of the suite (PARLEY_TEST_STORE=postgres).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { soakSize } from "./support/soak.js"
import { actionColumns, createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

const ENV = {
  PARLEY_SIM_STEP_MS: "0",
  PARLEY_DISPATCH_POLL_MS: "20",
  // The contract's limit, exactly: 60 requests a minute per key.
  PARLEY_RATE_LIMIT_PER_MINUTE: "60"
}

describe.skipIf(testStore !== "postgres")("several replicas on one Postgres", () => {
  let db: TestDatabase
  let replicas: ReadonlyArray<TestServer>
  let demo: DemoSummary

  beforeAll(async () => {
    // Empty, as a new deployment's: the first replica migrates it (the other test databases come migrated).
    db = await createTestDatabase("postgres", { empty: true })
    const first = await TestServer.start({ env: ENV, database: db })
    const others = await Promise.all([1, 2].map(() => TestServer.start({ env: ENV, database: db })))
    replicas = [first, ...others]
    demo = await first.demo()
    // The dispatch tests send up to 13,000 texts; the demo's allowance is smaller.
    await first.adminJson(["orgs", "update", demo.orgId, "--sms-allowance", "unlimited"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()))
    await db.drop()
  })

  /** A key of its own for each test, so one test's requests never count against another's limit. */
  const newKey = async (name: string, mode: "test" | "live") => {
    const created = await replicas[1]!.adminJson<{ key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", name, "--mode", mode, "--scopes", "all"
    ])
    return created.key
  }

  it("holds the rate limit exactly: of 90 requests in one minute spread over three replicas, 60 pass", async () => {
    const key = await newKey("rate-limit", "test")
    // The window is the clock minute; start well inside one (15 s before its end at the latest, as the
    // single-server rate-limit test does) so every request lands in the same window.
    const intoMinute = Date.now() % 60_000
    if (intoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 500))
    const answers = await Promise.all(
      Array.from({ length: 90 }, (_, i) => replicas[i % 3]!.fetch("/api/v1/numbers", { key }))
    )
    const statuses = answers.map((a) => a.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(60)
    expect(statuses.filter((s) => s === 429)).toHaveLength(30)
    const limited = answers.find((a) => a.status === 429)!
    expect(limited.headers.get("retry-after")).not.toBeNull()
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("RATE_LIMITED")
    // The count is shared, not per process: every replica now refuses the key.
    for (const replica of replicas) {
      expect((await replica.fetch("/api/v1/numbers", { key })).status).toBe(429)
    }
  })

  it("creates one action when the same Idempotency-Key reaches all three replicas at once", async () => {
    const key = await newKey("idempotency", "live")
    for (let round = 0; round < 8; round++) {
      const body = JSON.stringify({
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        body: `replicated ${round}`,
        scheduledFor: new Date(Date.now() + 3_600_000).toISOString()
      })
      const answers = await Promise.all(replicas.map((replica) =>
        replica.fetch("/api/v1/messages", { method: "POST", key, headers: { "idempotency-key": `same-${round}` }, body })
      ))
      const payloads = await Promise.all(answers.map(async (a) => ({ status: a.status, json: await a.json() })))
      const created = payloads.filter((p) => p.status === 202)
      expect(created.length).toBeGreaterThan(0)
      // The others replayed the same answer or were told the first is still in flight.
      for (const p of payloads) {
        if (p.status === 202) expect((p.json as { id: string }).id).toBe((created[0]!.json as { id: string }).id)
        else expect(p).toMatchObject({ status: 409, json: { error: { code: "ACTION_PROCESSING" } } })
      }
      const rows = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM actions WHERE body = ?`, [`replicated ${round}`])
      expect(rows[0]!.n).toBe(1)
    }
  })

  it("sees a revocation and a setting change made through the CLI on every replica's next request", async () => {
    const created = await replicas[0]!.adminJson<{ id: string; key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", "revoked", "--mode", "live", "--scopes", "all"
    ])
    for (const replica of replicas) {
      expect((await replica.fetch("/api/v1/numbers", { key: created.key })).status).toBe(200)
    }
    await replicas[1]!.adminJson(["keys", "revoke", created.id])
    for (const replica of replicas) {
      const response = await replica.fetch("/api/v1/numbers", { key: created.key })
      expect(response.status).toBe(401)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED")
    }

    const call = (replica: TestServer, n: number) =>
      replica.fetch("/api/v1/ai-calls", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `ai-off-${n}-${Date.now()}` },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, botId: "bot_sales", mode: "follow_script" })
      })
    await replicas[2]!.adminJson(["orgs", "update", demo.orgId, "--ai-calls", "off"])
    for (const [n, replica] of replicas.entries()) {
      const response = await call(replica, n)
      expect(response.status).toBe(403)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("AI_CALLS_DISABLED")
    }
    await replicas[0]!.adminJson(["orgs", "update", demo.orgId, "--ai-calls", "on"])
  })

  /** Copies one scheduled text into `count` actions all due now (the template among them). */
  const seedDue = async (marker: string, count: number) => {
    const key = await newKey(`seed-${marker}`, "live")
    const response = await replicas[0]!.fetch("/api/v1/messages", {
      method: "POST",
      key,
      headers: { "idempotency-key": `template-${marker}` },
      body: JSON.stringify({
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        body: marker,
        scheduledFor: new Date(Date.now() + 3_600_000).toISOString()
      })
    })
    expect(response.status).toBe(202)
    const template = Number(((await response.json()) as { id: string }).id)
    const columns = (await actionColumns(db)).filter((c) => c !== "id" && c !== "work_at" && c !== "due_at").join(", ")
    const now = Date.now()
    await db.query(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})
       INSERT INTO actions (${columns}, due_at, work_at)
       SELECT ${columns}, ${now}, ${now} FROM actions, n WHERE actions.id = ?`,
      [template]
    )
    await db.query(`UPDATE actions SET due_at = ?, work_at = ? WHERE id = ?`, [now, now, template])
  }

  const tally = async (marker: string) => {
    const [row] = await db.query<{ total: number; delivered: number; sends: number; distinct_sends: number; events: number }>(
      `SELECT
         (SELECT COUNT(*) FROM actions WHERE body = ?) AS total,
         (SELECT COUNT(*) FROM actions WHERE body = ? AND status = 'Delivered') AS delivered,
         (SELECT COUNT(*) FROM simulated_sends s JOIN actions a ON a.id = CAST(s.action_id AS BIGINT) WHERE a.body = ?) AS sends,
         (SELECT COUNT(DISTINCT s.action_id) FROM simulated_sends s JOIN actions a ON a.id = CAST(s.action_id AS BIGINT)
            WHERE a.body = ?) AS distinct_sends,
         (SELECT COUNT(*) FROM events e WHERE e.type = 'message.sent' AND e.payload LIKE ?) AS events`,
      [marker, marker, marker, marker, `%"${marker}"%`]
    )
    return row!
  }

  /** Waits until every action with the marker is delivered, then checks each was sent and announced once. */
  const expectEachSentOnce = async (marker: string, count: number, timeoutMs: number) => {
    const done = await until(async () => {
      const t = await tally(marker)
      return t.delivered === t.total ? t : undefined
    }, { timeoutMs, intervalMs: 1_000, what: `${count} actions to be delivered` })
    expect(done).toEqual({ total: count, delivered: count, sends: count, distinct_sends: count, events: count })
  }

  /** 10,000 in `pnpm test:soak`; `pnpm test` dispatches 1,000 with the same assertions (support/soak.ts). */
  const BACKLOG = soakSize(1_000, 10_000)

  it(`dispatches ${BACKLOG.toLocaleString("en")} due actions across the replicas, each exactly once`, async () => {
    const marker = "backlog across replicas"
    await seedDue(marker, BACKLOG)
    await expectEachSentOnce(marker, BACKLOG, 280_000)
    // No replica submitted an action another had already submitted.
    const [repeated] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM simulated_sends WHERE attempts > 1`)
    expect(repeated!.n).toBe(0)
  }, 300_000)

  it("loses and duplicates nothing when a replica is killed mid-dispatch", async () => {
    const marker = "killed mid-dispatch"
    await seedDue(marker, 3_000)
    await until(async () => ((await tally(marker)).sends > 300 ? true : undefined), { timeoutMs: 60_000, intervalMs: 20 })
    await replicas[2]!.stop("SIGKILL")
    // Its leases lapse (30 s) and the survivors finish its share.
    await expectEachSentOnce(marker, 3_000, 150_000)
  }, 240_000)
})
