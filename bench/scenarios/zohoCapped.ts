/**
 * Zoho's limits (issue 31, item 5): one organisation connected to the fake Zoho capped at 5 concurrent calls
 * (Zoho's Free edition) and answering every call in 200 ms. Measures
 * - the p95 of 50 concurrent `POST /messages` (Parley queues its calls within PARLEY_ZOHO_CONCURRENCY per
 *   Zoho organisation instead of meeting Zoho's 429), and how many were refused;
 * - Zoho calls per accepted message at creation (everything but the write-back PUTs): a plain text (goal
 *   ≤ 1.05) and a templated text linked to a Lead (goal ≤ 2.1).
 * `pnpm bench --zoho` runs it alone.
 */
import { ZohoFake } from "../../packages/server/test/support/fakes/ZohoFake.js"
import type { DemoSummary } from "../lib/demo.js"
import { BENCH_SERVER_ENV, ParleyServer, parleyCliJson } from "../lib/processes.js"
import { percentile, type ScenarioRow } from "../lib/types.js"

export const ZOHO_CAP = 5
export const ZOHO_CAPPED_LATENCY_MS = 200
export const CONCURRENT_SENDS = 50

export interface ZohoCappedHarness {
  readonly step: (line: string) => void
  readonly note: (line: string) => void
  readonly dataDir: (name: string) => string
  readonly logFile: (name: string) => string
  readonly record: (row: ScenarioRow) => void
}

/** Zoho calls made at creation: every CRM call but the write-back's PUTs. */
const creationCalls = (zoho: ZohoFake) =>
  zoho.requests.filter((r) => r.path.startsWith("/crm/") && !(r.method === "PUT" && r.path === "/crm/v8/Parley_Messages")).length

export const zohoCappedScenario = async (h: ZohoCappedHarness): Promise<void> => {
  const zoho = await ZohoFake.start()
  const dir = h.dataDir("zoho-capped")
  const env = {
    ...BENCH_SERVER_ENV,
    PARLEY_ZOHO_CLIENT_ID: zoho.clientId,
    PARLEY_ZOHO_CLIENT_SECRET: zoho.clientSecret,
    PARLEY_ZOHO_ACCOUNTS_URL: zoho.url,
    PARLEY_ZOHO_CONCURRENCY: String(ZOHO_CAP)
  }
  const server = await ParleyServer.start({ dataDir: dir, env, logFile: h.logFile("zoho-capped") })
  try {
    const demo = await parleyCliJson<DemoSummary>(["demo"], dir, env)
    const cliEnv = { ...env, PORT: String(server.port) }
    const started = await parleyCliJson<{ url: string }>(["crm", "connect", demo.orgId, "--provider", "zoho"], dir, cliEnv)
    const consent = await fetch(started.url, { redirect: "manual" })
    const callback = await fetch(consent.headers.get("location") ?? "")
    if (callback.status !== 200) throw new Error(`Zoho connect failed: ${callback.status} ${await callback.text()}`)
    await parleyCliJson(["crm", "setup", demo.orgId], dir, cliEnv)
    const from = demo.numbers[0]
    if (from === undefined) throw new Error("the demo org has no number")
    // Every Zoho record has an Owner (here the connected user), which the read of the linked record brings along.
    const leadId = zoho.addRecord("Leads", {
      First_Name: "Ada",
      Last_Name: "Lovelace",
      Full_Name: "Ada Lovelace",
      Phone: "+14155550123",
      Owner: { name: "Ada Admin", id: "5725767000000412001" }
    })
    zoho.addRecord("Parley_Templates", { Name: "welcome", Body: "Hi ${Leads.First Name}, welcome!", Record_Type: "Leads" })
    zoho.concurrencyCap = ZOHO_CAP
    zoho.latencyMs = ZOHO_CAPPED_LATENCY_MS
    h.step(`zoho-capped: ${demo.orgId} connected to the fake Zoho (cap ${ZOHO_CAP} concurrent calls, ${ZOHO_CAPPED_LATENCY_MS} ms per answer)`)

    const send = async (tag: string, i: number, payload: Record<string, unknown>) => {
      const t0 = performance.now()
      const response = await fetch(`${server.baseUrl}/api/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${demo.keys.live}`, "content-type": "application/json", "idempotency-key": `bench-${tag}-${i}` },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: from.sid, ...payload })
      })
      await response.arrayBuffer()
      return { status: response.status, ms: performance.now() - t0 }
    }
    const burst = async (tag: string, payload: (i: number) => Record<string, unknown>) => {
      const before = creationCalls(zoho)
      const refusedBefore = zoho.concurrencyRefusals
      const answers = await Promise.all(Array.from({ length: CONCURRENT_SENDS }, (_, i) => send(tag, i, payload(i))))
      const accepted = answers.filter((a) => a.status === 202).length
      const sorted = answers.map((a) => a.ms).sort((a, b) => a - b)
      return {
        accepted,
        refused: answers.length - accepted,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        p99: percentile(sorted, 99),
        callsPerAccepted: accepted === 0 ? null : (creationCalls(zoho) - before) / accepted,
        zoho429: zoho.concurrencyRefusals - refusedBefore,
        maxInFlight: zoho.maxInFlight
      }
    }

    const plain = await burst("plain", (i) => ({ body: `Benchmark ${i}: your appointment is confirmed.` }))
    const templates = (await fetch(`${server.baseUrl}/api/v1/templates`, { headers: { authorization: `Bearer ${demo.keys.live}` } })
      .then((r) => r.json())) as { items: Array<{ id: string; name: string }> }
    const welcome = templates.items.find((t) => t.name === "welcome")
    if (welcome === undefined) throw new Error("no welcome template")
    const linked = await burst("linked", () => ({ templateUuid: welcome.id, record: { module: "Leads", id: leadId } }))

    const row = (id: string, name: string, r: typeof plain, goal: number): ScenarioRow => ({
      id,
      name,
      kind: "parley",
      unit: "req/s",
      rate: null,
      p50: r.p50,
      p95: r.p95,
      p99: r.p99,
      errors: r.refused,
      peakRssMb: null,
      cpuPercent: null,
      ratio: null,
      notes: [
        `${r.accepted}/${CONCURRENT_SENDS} accepted; ${r.callsPerAccepted === null ? "n/a" : r.callsPerAccepted.toFixed(2)} Zoho calls per accepted message at creation (goal ≤ ${goal}); ` +
        `Zoho's 429 met ${r.zoho429} times; at most ${r.maxInFlight} calls in flight`
      ],
      details: r
    })
    h.record(row("zoho.capped.plain", `zoho: ${CONCURRENT_SENDS} concurrent plain texts, Zoho capped at ${ZOHO_CAP} (${ZOHO_CAPPED_LATENCY_MS} ms)`, plain, 1.05))
    h.record(row("zoho.capped.linked", `zoho: ${CONCURRENT_SENDS} concurrent linked templated texts, Zoho capped at ${ZOHO_CAP} (${ZOHO_CAPPED_LATENCY_MS} ms)`, linked, 2.1))
    for (const [what, r] of [["plain", plain], ["linked templated", linked]] as const) {
      h.note(
        `Zoho capped at ${ZOHO_CAP} concurrent calls, ${ZOHO_CAPPED_LATENCY_MS} ms per answer: ${CONCURRENT_SENDS} concurrent ${what} texts → ` +
          `${r.accepted} accepted, p95 ${r.p95?.toFixed(0) ?? "n/a"} ms, ${r.callsPerAccepted?.toFixed(2) ?? "n/a"} Zoho calls per accepted message at creation, ` +
          `Zoho's 429 met ${r.zoho429} times.`
      )
      h.step(`  → ${what}: ${r.accepted}/${CONCURRENT_SENDS} accepted, p95 ${r.p95?.toFixed(0) ?? "n/a"} ms, ${r.callsPerAccepted?.toFixed(2) ?? "n/a"} Zoho calls per accepted message`)
    }
  } finally {
    await server.stop()
    await zoho.stop()
  }
}
