/**
 * The console's pages at a real organisation's history (issue 33, items 8–10 and 6): 10,000 messages, 50,000 events
 * and 100,000 deliveries to two endpoints (one in ten failed, with its reason), 120 API keys and 1,000 audit
 * entries from five administrators, seeded into the SQLite file. One
 * administrator (one connection, as a person loads pages) loads each page for the load's duration; the rows
 * give each page's latency percentiles (target: p95 under 50 ms). `pnpm bench --console` runs it alone.
 */
import type { DemoSummary } from "../lib/demo.js"
import { orgContext } from "../lib/demo.js"
import { BENCH_SERVER_ENV, ParleyServer, parleyCliJson, runLoad } from "../lib/processes.js"
import { DB_FILE, open, seedConversations } from "../lib/seed.js"
import type { ScenarioRow } from "../lib/types.js"
import { join } from "node:path"

export const CONSOLE_MESSAGES = 10_000
export const CONSOLE_EVENTS_PER_MESSAGE = 5
export const CONSOLE_ENDPOINTS = 2
export const CONSOLE_KEYS = 120
export const CONSOLE_AUDIT_ENTRIES = 1_000
const AUDIT_ACTORS = ["ana@console.example", "ben@console.example", "chloe@console.example", "dev@console.example", "eve@console.example"]
const AUDIT_KINDS = ["admin.signed-in", "key.created", "key.revoked", "provider.set", "admin.role-changed", "key.changed"] as const
const EVENT_TYPES = ["message.queued", "message.sent", "message.delivered", "message.sent", "message.delivered"] as const

export interface ConsolePagesHarness {
  readonly step: (line: string) => void
  readonly note: (line: string) => void
  readonly dataDir: (name: string) => string
  readonly logFile: (name: string) => string
  readonly record: (row: ScenarioRow) => void
  readonly durationSeconds: number
}

/** Events of every seeded message and one delivery of each to every endpoint, in one transaction. */
const seedEvents = (file: string, orgId: string, webhookIds: ReadonlyArray<string>) => {
  const db = open(file)
  try {
    const messages = db.prepare("SELECT id, at FROM actions WHERE org_id = ? ORDER BY id").all(orgId) as Array<{ id: number; at: string }>
    const event = db.prepare("INSERT INTO events (id, org_id, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)")
    const delivery = db.prepare(`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state,
      last_status, last_error, updated_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?)`)
    let n = 0
    db.transaction(() => {
      for (const message of messages) {
        for (const type of EVENT_TYPES.slice(0, CONSOLE_EVENTS_PER_MESSAGE)) {
          const id = `evt_bench_${String(n++).padStart(8, "0")}`
          event.run(id, orgId, type, message.at, JSON.stringify({ type, timestamp: message.at, data: { id: String(message.id) } }))
          for (const webhookId of webhookIds) {
            const failed = n % 10 === 0
            delivery.run(id, webhookId, failed ? 8 : 1, failed ? "failed" : "delivered", failed ? 500 : 200, failed ? "HTTP 500" : null, message.at)
          }
        }
      }
    })()
    db.pragma("wal_checkpoint(TRUNCATE)")
    return { messages: messages.map((m) => String(m.id)), events: n }
  } finally {
    db.close()
  }
}

/**
 * API keys (revoked and live, as an organisation that has rolled keys for a year has) and audit entries, one a
 * quarter of an hour apart, newest last; answers the cursor of the entry in the middle (the page after it).
 */
const seedKeysAndAudit = (file: string, orgId: string) => {
  const db = open(file)
  try {
    const key = db.prepare(`INSERT INTO api_keys (id, org_id, name, mode, hash, prefix, scopes, number_sids, bot_ids,
      created_at, expires_at, revoked_at) VALUES (?, ?, ?, 'live', ?, ?, '["messages:read","messages:write"]', '[]', '[]', ?, NULL, ?)`)
    const entry = db.prepare(`INSERT INTO audit_log (id, org_id, at, actor, kind, subject, detail, address)
      VALUES (?, ?, ?, ?, ?, ?, ?, '192.0.2.10')`)
    const start = Date.now() - CONSOLE_AUDIT_ENTRIES * 15 * 60_000
    let middle = ""
    db.transaction(() => {
      for (let i = 0; i < CONSOLE_KEYS; i++) {
        const created = new Date(start + i * 3_600_000).toISOString()
        key.run(`key_bench_${String(i).padStart(4, "0")}`, orgId, `Integration ${i}`, `bench-hash-${i}`, `pk_live_b${i}`, created, i % 3 === 0 ? created : null)
      }
      for (let i = 0; i < CONSOLE_AUDIT_ENTRIES; i++) {
        const id = `aud_bench_${String(i).padStart(6, "0")}`
        const at = start + i * 15 * 60_000
        if (i === Math.floor(CONSOLE_AUDIT_ENTRIES / 2)) middle = `${at}.${id}`
        entry.run(id, orgId, at, AUDIT_ACTORS[i % AUDIT_ACTORS.length], AUDIT_KINDS[i % AUDIT_KINDS.length], `subject ${i}`, null)
      }
    })()
    db.pragma("wal_checkpoint(TRUNCATE)")
    return { middleAudit: middle }
  } finally {
    db.close()
  }
}

export const consolePagesScenario = async (h: ConsolePagesHarness): Promise<void> => {
  const dir = h.dataDir("console-pages")
  const env = BENCH_SERVER_ENV
  let server = await ParleyServer.start({ dataDir: dir, env, logFile: h.logFile("console-pages") })
  const demo = await parleyCliJson<DemoSummary>(["demo"], dir, env)
  const webhookIds: Array<string> = []
  for (let i = 0; i < CONSOLE_ENDPOINTS; i++) {
    const created = await server.fetch("/api/v1/webhook-endpoints", demo.keys.live, {
      method: "POST",
      headers: { "content-type": "application/json" },
      // An address deliveries may not reach: nothing is posted while the pages are measured.
      body: JSON.stringify({ url: `https://console-bench-${i}.example/events`, enabledEvents: ["*"] })
    })
    if (!created.ok) throw new Error(`creating an endpoint answered ${created.status}: ${await created.text()}`)
    webhookIds.push(((await created.json()) as { id: string }).id)
  }
  await server.stop()
  const file = join(dir, DB_FILE)
  h.step(`seeding ${CONSOLE_MESSAGES.toLocaleString("en-US")} messages, their events and deliveries to ${CONSOLE_ENDPOINTS} endpoints`)
  seedConversations(file, orgContext(dir, demo), CONSOLE_MESSAGES, 1_000, h.step)
  const seeded = seedEvents(file, demo.orgId, webhookIds)
  h.step(`  ${seeded.events.toLocaleString("en-US")} events, ${(seeded.events * CONSOLE_ENDPOINTS).toLocaleString("en-US")} deliveries`)
  const { middleAudit } = seedKeysAndAudit(file, demo.orgId)
  h.step(`  ${CONSOLE_KEYS} API keys, ${CONSOLE_AUDIT_ENTRIES.toLocaleString("en-US")} audit entries`)

  server = await ParleyServer.start({ dataDir: dir, env, logFile: h.logFile("console-pages-2") })
  try {
    const password = "bench administrator passphrase"
    const invited = await parleyCliJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "pages@console.example"], dir, env)
    const form = { "content-type": "application/x-www-form-urlencoded" }
    const token = new URL(invited.link).searchParams.get("token") ?? ""
    await fetch(`${server.baseUrl}/admin/set-password`, { method: "POST", headers: form, redirect: "manual", body: new URLSearchParams({ token, password }).toString() })
    const signedIn = await fetch(`${server.baseUrl}/admin/sign-in`, {
      method: "POST",
      headers: form,
      redirect: "manual",
      body: new URLSearchParams({ email: "pages@console.example", password }).toString()
    })
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    if (signedIn.status !== 303 || cookie === "") throw new Error(`signing in answered ${signedIn.status}`)
    const middle = seeded.messages[Math.floor(seeded.messages.length / 2)] ?? ""
    const oldest = seeded.messages[0] ?? ""
    const [first] = webhookIds
    const middleSeq = Math.floor(seeded.events / 2)
    const pages: ReadonlyArray<readonly [string, string, string]> = [
      ["console.activity", "Activity: newest 50", "/admin/activity"],
      ["console.activity.deep", "Activity: 50 older than the middle record", `/admin/activity?before=${middle}`],
      ["console.activity.text", "Activity: text search (every 4th text matches)", "/admin/activity?text=yes%2C+that+works"],
      ["console.activity.rare", "Activity: text found once in the history", `/admin/activity?text=${encodeURIComponent("(1): your")}`],
      ["console.activity.filters", "Activity: status, channel and a date range", "/admin/activity?status=Delivered&channel=SMS&from=2000-01-01&to=2100-01-01"],
      ["console.record", "Activity: the oldest record and its events", `/admin/activity/record?kind=message&id=${oldest}`],
      ["console.events", "Events: 2 endpoints, 10 deliveries each", "/admin/events"],
      ["console.deliveries", "Events: 25 deliveries from the middle of 50,000", `/admin/events/deliveries?id=${first ?? ""}&before=${middleSeq}`],
      ["console.keys", `Developer access: ${CONSOLE_KEYS} keys`, "/admin/keys"],
      ["console.audit", `Audit log: newest of ${CONSOLE_AUDIT_ENTRIES.toLocaleString("en-US")}`, "/admin/audit"],
      ["console.audit.deep", "Audit log: the page after the middle entry", `/admin/audit?after=${encodeURIComponent(middleAudit)}`],
      ["console.audit.actor", "Audit log: one administrator's entries", `/admin/audit?actor=${encodeURIComponent(AUDIT_ACTORS[2] ?? "")}`]
    ]
    for (const [id, name, path] of pages) {
      const probe = await fetch(`${server.baseUrl}${path}`, { headers: { cookie } })
      if (probe.status !== 200) h.note(`${name}: answered ${probe.status}`)
      await probe.text()
      h.step(`${name}: GET ${path}`)
      const result = await runLoad({
        url: server.baseUrl,
        method: "GET",
        path,
        headers: { cookie },
        connections: 1,
        durationSeconds: h.durationSeconds,
        warmupSeconds: 1
      })
      const errors = result.non2xx + result.socketErrors
      h.step(`  → ${result.rps.toFixed(0)} pages/s, p50 ${result.latency.p50} ms, p95 ${result.latency.p95} ms, p99 ${result.latency.p99} ms, errors ${errors}`)
      h.record({
        id,
        name: `console (1 administrator): ${name}`,
        kind: "parley",
        unit: "req/s",
        rate: result.rps,
        p50: result.latency.p50,
        p95: result.latency.p95,
        p99: result.latency.p99,
        errors,
        peakRssMb: null,
        cpuPercent: null,
        ratio: null,
        notes: [],
        details: result
      })
    }
  } finally {
    await server.stop()
  }
}
