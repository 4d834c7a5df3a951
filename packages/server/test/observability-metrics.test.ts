/**
 * /metrics after a scripted session, read with a Prometheus text-format
 * parser: each counter moved by exactly what the session did, route labels
 * are templates, queue depth and the webhook backlog come from the database,
 * and no label or sample holds a key, a number or a text. Exposure: on the API
 * port only with the metrics token (404 without one configured, 401 with a
 * wrong one), and without a token on PARLEY_METRICS_PORT.
 */
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { Scrape } from "./support/prometheus.js"
import { type DemoSummary, freePort, TestServer } from "./support/server.js"
import { testStore } from "./support/store.js"

const TOKEN = "metrics-token-for-tests-0123456789"
const TO = "+14155556677"
const BODY = "Metrics session text 42"
const inOneHour = () => new Date(Date.now() + 3_600_000).toISOString()

describe("Prometheus metrics", () => {
  let server: TestServer
  let demo: DemoSummary
  let hooks: Server
  let metricsPort: number

  beforeAll(async () => {
    hooks = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(200).end())
    })
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve))
    metricsPort = await freePort()
    server = await TestServer.start({
      env: {
        PARLEY_METRICS_TOKEN: TOKEN,
        PARLEY_METRICS_PORT: String(metricsPort),
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_RATE_LIMIT_PER_MINUTE: "40"
      }
    })
    demo = await server.demo()
  })

  afterAll(async () => {
    await server.dispose()
    await new Promise<void>((resolve) => hooks.close(() => resolve()))
  })

  const scrape = async (): Promise<Scrape> => {
    const response = await server.fetch("/metrics", { key: TOKEN })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/plain")
    return Scrape.parse(await response.text())
  }

  const post = (path: string, key: string, idempotencyKey: string, payload: Record<string, unknown>) =>
    server.fetch(path, { method: "POST", key, headers: { "idempotency-key": idempotencyKey }, body: JSON.stringify(payload) })
  const text = (extra: Record<string, unknown> = {}) => ({ to: TO, fromNumberSid: demo.numbers[0]!.sid, body: BODY, ...extra })

  it("is served on the API port only with the token, and on its own port without one", async () => {
    expect((await server.fetch("/metrics")).status).toBe(401)
    const wrong = await server.fetch("/metrics", { key: `${TOKEN}x` })
    expect(wrong.status).toBe(401)
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED")
    // The API keys are not metrics tokens.
    expect((await server.fetch("/metrics", { key: demo.keys.live })).status).toBe(401)

    const own = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    expect(own.status).toBe(200)
    const parsed = Scrape.parse(await own.text())
    expect(parsed.family("parley_http_requests_total")?.type).toBe("COUNTER")
    expect(parsed.family("process_cpu_user_seconds_total")).toBeDefined()
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/v1/numbers`)).status).toBe(404)

    const bare = await TestServer.start({ database: server.db })
    try {
      const response = await bare.fetch("/metrics", { key: TOKEN })
      expect(response.status).toBe(404)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND")
    } finally {
      await bare.stop()
    }
  })

  it("counts exactly what a scripted session did", async () => {
    const hooksAddress = hooks.address()
    const hooksPort = typeof hooksAddress === "object" && hooksAddress !== null ? hooksAddress.port : 0
    await server.adminJson(["webhooks", "add", "--org", demo.orgId, "--url", `http://127.0.0.1:${hooksPort}/hook`])
    const before = await scrape()
    const live = { kind: "message", mode: "live" }

    const ids: Array<string> = []
    for (const n of [1, 2, 3]) {
      const response = await post("/api/v1/messages", demo.keys.live, `m-${n}`, text())
      expect(response.status).toBe(202)
      ids.push(((await response.json()) as { id: string }).id)
    }
    expect((await post("/api/v1/messages", demo.keys.live, "m-1", text())).headers.get("idempotent-replayed")).toBe("true")
    expect((await post("/api/v1/messages", demo.keys.test, "t-1", text())).status).toBe(202)
    const scheduled = await post("/api/v1/messages", demo.keys.live, "s-1", text({ scheduledFor: inOneHour() }))
    expect(scheduled.status).toBe(202)
    for (const id of ids) expect((await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).status).toBe(200)
    expect((await server.fetch("/api/v1/nope", { key: demo.keys.live })).status).toBe(404)

    // Every text but the scheduled one reaches Delivered through the simulator.
    const after = await until(async () => {
      const now = await scrape()
      return now.value("parley_actions_finished_total", { kind: "message", status: "Delivered", provider: "simulator" }) -
            before.value("parley_actions_finished_total", { kind: "message", status: "Delivered", provider: "simulator" }) === 3
        ? now
        : undefined
    }, { timeoutMs: 30_000, intervalMs: 200, what: "three Delivered texts" })

    const grew = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels)
    expect(grew("parley_actions_created_total", live)).toBe(4) // three texts and the scheduled one
    expect(grew("parley_actions_created_total", { kind: "message", mode: "test" })).toBe(1)
    expect(grew("parley_idempotent_replays_total")).toBe(1)
    expect(grew("parley_http_requests_total", { route: "/api/v1/messages", method: "POST", status: "202" })).toBe(6)
    expect(grew("parley_http_requests_total", { route: "/api/v1/messages/{id}", method: "GET", status: "200" })).toBe(3)
    expect(grew("parley_http_requests_total", { route: "unmatched", method: "GET", status: "404" })).toBe(1)
    expect(after.family("parley_http_request_duration_seconds")?.type).toBe("HISTOGRAM")
    expect(after.count("parley_dispatch_lateness_seconds") - before.count("parley_dispatch_lateness_seconds")).toBe(3)
    // Routes are templates, never paths with ids.
    for (const route of after.labelValues("parley_http_requests_total", "route")) {
      expect(route).not.toMatch(/\/\d+$/)
    }
    // The scheduled text waits in the queue, as the database says.
    expect(after.value("parley_queue_depth", { state: "scheduled" })).toBe(1)
    expect(after.value("parley_queue_depth", { state: "due" })).toBe(0)
    expect(after.value("parley_queue_depth", { state: "held" })).toBe(0)

    // Webhook deliveries: every event of the session (queued, sent, delivered per text) is delivered.
    const delivered = await until(async () => {
      const now = await scrape()
      return now.value("parley_webhook_deliveries_total", { outcome: "delivered" }) -
            before.value("parley_webhook_deliveries_total", { outcome: "delivered" }) >= 10 &&
          now.value("parley_webhook_oldest_pending_seconds") === 0
        ? now
        : undefined
    }, { timeoutMs: 30_000, intervalMs: 200, what: "the webhook deliveries" })
    expect(delivered.value("parley_webhook_deliveries_total", { outcome: "delivered" }) -
      before.value("parley_webhook_deliveries_total", { outcome: "delivered" })).toBe(10) // 4 queued + 3 sent + 3 delivered

    // Opt-outs by source, from the database: one recorded by an administrator, one by a STOP reply.
    expect(after.value("parley_opt_outs", { source: "keyword" })).toBe(0)
    await server.adminJson(["optouts", "add", "--org", demo.orgId, "--phone", "+14155550161"])
    await server.adminJson(["inbound", "--org", demo.orgId, "--from", "+14155550162", "--to", "+14155550100", "--body", "STOP"])
    const optedOut = await scrape()
    expect(optedOut.value("parley_opt_outs", { source: "cli" })).toBe(1)
    expect(optedOut.value("parley_opt_outs", { source: "keyword" })).toBe(1)
    expect(optedOut.value("parley_opt_outs", { source: "carrier" })).toBe(0)

    // On Postgres, the pool: connections in use now, and every checkout's wait.
    if (testStore === "postgres") {
      expect(delivered.family("parley_db_pool_in_use")?.type).toBe("GAUGE")
      expect(delivered.value("parley_db_pool_in_use")).toBeGreaterThanOrEqual(0)
      expect(delivered.count("parley_db_pool_wait_seconds") - before.count("parley_db_pool_wait_seconds")).toBeGreaterThan(0)
    } else {
      expect(delivered.family("parley_db_pool_in_use")).toBeUndefined()
    }

    // Nothing secret or personal anywhere in the exposition.
    for (const secret of [demo.keys.live, demo.keys.test, TOKEN, TO, TO.slice(2), BODY]) {
      expect(delivered.text).not.toContain(secret)
    }
  })

  it("answers /healthz and /readyz without a key", async () => {
    expect(await (await server.fetch("/healthz")).json()).toEqual({ status: "ok" })
    const ready = await server.fetch("/readyz")
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: "ready" })
  })

  it("counts requests refused by the rate limit", async () => {
    const before = await scrape()
    let refused = 0
    for (let i = 0; i < 45 && refused < 3; i++) {
      const response = await server.fetch("/api/v1/numbers", { key: demo.keys.test })
      if (response.status === 429) refused++
    }
    expect(refused).toBe(3)
    const after = await scrape()
    expect(after.value("parley_rate_limited_total") - before.value("parley_rate_limited_total")).toBe(3)
    expect(after.value("parley_http_requests_total", { route: "/api/v1/numbers", status: "429" })).toBe(3)
  })
})
