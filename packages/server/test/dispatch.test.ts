/**
 * The life of an action after its 202: dispatched at its time, through the
 * simulated carrier's and AI-call provider's lifecycle, failure numbers,
 * cancellation racing dispatch, and crash safety (SIGKILL mid-batch).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { actionColumns } from "./support/store.js"

interface ActionRecord {
  readonly id: string
  readonly status: string
  readonly body: string
  readonly sid: string | null
  readonly errorMessage: string | null
  readonly audioFileId: string | null
  readonly type: string
  readonly botId: string | null
  readonly at?: string
  readonly modified: string
}

const FINAL = new Set(["Delivered", "Undelivered", "Failed", "Cancelled", "Completed", "No Answer", "Busy"])

// The lifecycle tests and the crash test run side by side: most of the lifecycle's time is the
// scheduled text's 30-second wait, during which the crash test has the machine to itself.
// Within each, tests keep their order (`it.sequential`) unless marked concurrent.
describe.concurrent("dispatch and the simulated lifecycle", () => {
  let server: TestServer
  let demo: DemoSummary
  let sender: string
  let key = 0

  beforeAll(async () => {
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "100", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_DISPATCH_POLL_MS: "20" }
    })
    demo = await server.demo()
    sender = demo.numbers[0]!.sid
  })
  afterAll(() => server.dispose())

  const create = async (kind: "messages" | "ai-calls", body: Record<string, unknown>) => {
    const response = await server.fetch(`/api/v1/${kind}`, {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `dispatch-${++key}-${Date.now()}` },
      body: JSON.stringify({ fromNumberSid: sender, ...body })
    })
    expect(response.status).toBe(202)
    return ((await response.json()) as { id: string }).id
  }

  const read = async (kind: "messages" | "ai-calls", id: string) => {
    const response = await server.fetch(`/api/v1/${kind}/${id}`, { key: demo.keys.live })
    return (await response.json()) as ActionRecord
  }

  const settled = (kind: "messages" | "ai-calls", id: string) =>
    until(async () => {
      const record = await read(kind, id)
      return FINAL.has(record.status) ? record : undefined
    }, { what: `${kind} ${id} to reach a final status` })

  it.sequential("delivers a text: Queued → Sending → Sent → Delivered, with a carrier sid", async () => {
    const id = await create("messages", { to: "+14155550123", body: "Hello" })
    const seen = new Set<string>()
    const record = await until(async () => {
      const r = await read("messages", id)
      seen.add(r.status)
      return r.status === "Delivered" ? r : undefined
    })
    expect(record.sid).toMatch(/^SM/)
    expect(record.errorMessage).toBeNull()
    // It was Sent (`at`, the moment it went out) one simulated step (100 ms) before it was Delivered
    // (`modified`): read from the record itself, since a first read after a cold start can come a step late.
    expect(record.at).toBeDefined()
    expect(Date.parse(record.modified) - Date.parse(record.at ?? "")).toBeGreaterThanOrEqual(100)
    expect([...seen].every((status) => ["Queued", "Sending", "Sent", "Delivered"].includes(status))).toBe(true)
  })

  it.sequential("fails texts to the failure numbers the README documents", async () => {
    const atSend = await create("messages", { to: "+15005550001", body: "x" })
    const undelivered = await create("messages", { to: "+15005550002", body: "x" })
    expect(await settled("messages", atSend)).toMatchObject({ status: "Failed", errorMessage: expect.stringContaining("21211") })
    expect(await settled("messages", undelivered)).toMatchObject({
      status: "Undelivered",
      errorMessage: expect.stringContaining("30003")
    })
  })

  it.sequential("completes an AI call with a transcript driven by the purpose, and fails the call failure numbers", async () => {
    const call = { botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Your order ships Monday." }
    const completed = await create("ai-calls", { to: "+14155550123", ...call })
    const noAnswer = await create("ai-calls", { to: "+15005550003", ...call })
    const busy = await create("ai-calls", { to: "+15005550004", ...call })
    const failed = await create("ai-calls", { to: "+15005550005", ...call })
    const done = await settled("ai-calls", completed)
    expect(done.status).toBe("Completed")
    expect(done.body).toContain("Your order ships Monday.")
    expect(done.audioFileId).toMatch(/^AF/)
    expect(done.botId).toBe("bot_sales")
    expect((await settled("ai-calls", noAnswer)).status).toBe("No Answer")
    expect((await settled("ai-calls", busy)).status).toBe("Busy")
    expect((await settled("ai-calls", failed)).status).toBe("Failed")
  })

  it.concurrent("holds a scheduled text until its time, then sends it", async () => {
    // The contract's minimum is 30 s ahead; 5 s of margin for a request slowed by a loaded machine.
    const at = Date.now() + 35_000
    const id = await create("messages", { to: "+14155550123", body: "later", scheduledFor: new Date(at).toISOString() })
    expect((await read("messages", id)).status).toBe("Queued")
    const record = await until(async () => {
      const r = await read("messages", id)
      return r.status === "Queued" ? undefined : { record: r, at: Date.now() }
    }, { timeoutMs: 50_000, intervalMs: 100 })
    expect(record.at).toBeGreaterThanOrEqual(at)
    expect((await settled("messages", id)).status).toBe("Delivered")
  }, 60_000)

  it.concurrent("takes one unit of allowance per dispatched action and fails actions once it is used up", async () => {
    const org = await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Allowance Co"])
    await server.adminJson(["crm", "connect", org.id, "--account", "Ops"])
    await server.adminJson(["numbers", "add", "--org", org.id, "--phone", "+14155559000", "--name", "Line", "--sid", "PN_ALLOW"])
    const minted = await server.adminJson<{ key: string }>([
      "keys", "create", "--org", org.id, "--name", "k", "--scopes", "all", "--mode", "live"
    ])
    await server.adminJson(["orgs", "update", org.id, "--sms-allowance", "2"])
    // Scheduled far ahead so that slow set-up cannot make them due early; made due below.
    const scheduledFor = new Date(Date.now() + 3_600_000).toISOString()
    const send = async (n: number) => {
      const response = await server.fetch("/api/v1/messages", {
        method: "POST",
        key: minted.key,
        headers: { "idempotency-key": `allow-${n}` },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: "PN_ALLOW", body: "x", scheduledFor })
      })
      expect(response.status).toBe(202)
      return ((await response.json()) as { id: string }).id
    }
    // Both are accepted while units are left; then the allowance drops to one before they are due.
    const ids = [await send(1), await send(2)]
    await server.adminJson(["orgs", "update", org.id, "--sms-allowance", "1"])
    await server.db.query(`UPDATE actions SET work_at = ? WHERE org_id = ?`, [Date.now(), org.id])
    const outcomes = await Promise.all(ids.map((id) =>
      until(async () => {
        const r = (await (await server.fetch(`/api/v1/messages/${id}`, { key: minted.key })).json()) as ActionRecord
        return FINAL.has(r.status) ? r : undefined
      }, { timeoutMs: 60_000, intervalMs: 200 })
    ))
    expect(outcomes.map((o) => o.status).sort()).toEqual(["Delivered", "Failed"])
    expect(outcomes.find((o) => o.status === "Failed")?.errorMessage).toContain("allowance")
    // The limit stays what it was set to; the month's usage shows the one text sent.
    const shown = await server.adminJson<{ smsAllowance: number | null; allowances: { sms: { used: number; limit: number | null } } }>(
      ["orgs", "show", org.id]
    )
    expect(shown.smsAllowance).toBe(1)
    expect(shown.allowances.sms).toEqual({ used: 1, limit: 1 })
  }, 90_000)

  it.sequential("never both cancels and sends: cancellation racing the dispatcher for the same rows", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 40; i++) {
      ids.push(await create("messages", {
        to: "+14155550123",
        body: `race ${i}`,
        scheduledFor: new Date(Date.now() + 120_000).toISOString()
      }))
    }
    // Make the rows due for the dispatcher now while their scheduledFor still allows cancellation,
    // so both conditional updates compete for every row.
    const db = server.db
    const cancels = ids.map(async (id, i) => {
      await db.query(`UPDATE actions SET work_at = ? WHERE id = ?`, [Date.now(), Number(id)])
      if (i % 2 === 0) await new Promise((resolve) => setTimeout(resolve, i % 7))
      const response = await server.fetch(`/api/v1/messages/${id}/cancel`, { method: "POST", key: demo.keys.live })
      return { id, status: response.status }
    })
    const answers = await Promise.all(cancels)
    for (const answer of answers) expect([200, 409]).toContain(answer.status)
    const finals = await Promise.all(ids.map((id) => settled("messages", id)))
    const sent = await db.query<{ action_id: string }>(`SELECT action_id FROM simulated_sends`)
    const sentIds = new Set(sent.map((row) => row.action_id))
    await db.close()
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 200) {
        expect(finals[i]!.status).toBe("Cancelled")
        expect(sentIds.has(answer.id)).toBe(false)
      } else {
        expect(finals[i]!.status).not.toBe("Cancelled")
        expect(sentIds.has(answer.id)).toBe(true)
      }
    }
  }, 60_000)
})

describe.concurrent("crash safety", () => {
  it("after SIGKILL mid-batch and a restart, every action reaches a final state and none is sent twice", async () => {
    const server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_DISPATCH_POLL_MS: "10" }
    })
    try {
      const demo = await server.demo()
      // 50 texts through the API, far ahead so however long that takes none is due early; then copied
      // in the store to 5,000 (several of the dispatcher's batches), all made due at the same moment.
      const at = new Date(Date.now() + 3_600_000).toISOString()
      for (let i = 0; i < 50; i++) {
        const response = await server.fetch("/api/v1/messages", {
          method: "POST",
          key: demo.keys.live,
          headers: { "idempotency-key": `crash-${i}` },
          body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: `m${i}`, scheduledFor: at })
        })
        expect(response.status, await response.clone().text()).toBe(202)
      }
      const total = 5_000
      const db = server.db
      const columns = (await actionColumns(db)).filter((name) => name !== "id").join(", ")
      await db.query(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
         INSERT INTO actions (${columns}) SELECT ${columns} FROM actions, n`
      )
      await db.query(`UPDATE actions SET work_at = ?`, [Date.now()])
      const sentCount = async () => (await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM simulated_sends`))[0]!.n
      // Kill the server while the batch is being dispatched.
      await until(async () => ((await sentCount()) > 0 ? true : undefined), { timeoutMs: 90_000, intervalMs: 5 })
      await server.stop("SIGKILL")
      const atKill = await sentCount()
      console.log(`killed with ${atKill} of ${total} sent`)
      await server.restart()
      const statuses = await until(async () => {
        const rows = await db.query<{ id: number; status: string }>(`SELECT id, status FROM actions`)
        return rows.length === total && rows.every((r) => FINAL.has(r.status)) ? rows : undefined
      }, { timeoutMs: 90_000, intervalMs: 500 })
      expect(statuses.every((r) => r.status === "Delivered")).toBe(true)
      const sends = await db.query<{ action_id: string }>(`SELECT action_id FROM simulated_sends`)
      expect(sends.length).toBe(total)
      expect(new Set(sends.map((s) => s.action_id)).size).toBe(total)
      // Exactly one message.sent event per action: a step redone after the crash did not record a second send.
      const [sentEvents] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM events WHERE type = 'message.sent'`)
      expect(sentEvents?.n).toBe(total)
      // The kill came in the middle of the backlog, not after it.
      expect(atKill).toBeLessThan(total)
    } finally {
      await server.dispose()
    }
  }, 180_000)
})

describe("shutdown with a backlog", () => {
  it("stops promptly on SIGTERM while thousands of actions are being dispatched, and answers HTTP meanwhile", async () => {
    const server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "3600000", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_DISPATCH_POLL_MS: "20" }
    })
    try {
      const demo = await server.demo()
      const response = await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": "backlog-template" },
        body: JSON.stringify({
          to: "+14155550123",
          fromNumberSid: demo.numbers[0]!.sid,
          body: "backlog",
          scheduledFor: new Date(Date.now() + 3_600_000).toISOString()
        })
      })
      const template = ((await response.json()) as { id: string }).id
      // 20,000 copies of it, all due now: a backlog the dispatcher needs tens of seconds for.
      const db = server.db
      const columns = (await actionColumns(db))
        .filter((name) => name !== "id" && name !== "work_at" && name !== "due_at")
        .join(", ")
      const now = Date.now()
      await db.query(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO actions (${columns}, due_at, work_at)
         SELECT ${columns}, ${now}, ${now} FROM actions, n WHERE actions.id = ?`,
        [Number(template)]
      )
      const sent = async () => (await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM simulated_sends`))[0]!.n
      await until(async () => ((await sent()) > 100 ? true : undefined), { timeoutMs: 30_000 })
      // The API still answers while the backlog is worked through.
      const health = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
      expect(health.status).toBe(200)
      const started = Date.now()
      await server.stop("SIGTERM")
      const took = Date.now() - started
      const [remaining] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM actions WHERE status = 'Queued'`)
      // Before the event-loop fix the signal was not handled at all until the backlog was gone.
      expect(took).toBeLessThan(10_000)
      expect(remaining?.n).toBeGreaterThan(0)
    } finally {
      await server.dispose()
    }
  }, 120_000)
})
