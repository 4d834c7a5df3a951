/**
 * Zoho CRM (issue 25): POST /messages for one organisation connected to Zoho
 * — the local fake of Zoho's accounts server and CRM v8, every answer 50 ms
 * late, as a hosted CRM is — and how many Zoho calls an accepted message
 * costs: the upsert at creation, and the batched write-backs of its statuses
 * until it is Delivered. Beside it, the built-in CRM's write row of the same
 * run (no external call at all).
 */
import { ZohoFake } from "../../packages/server/test/support/fakes/ZohoFake.js"
import { BENCH_SERVER_ENV, ParleyServer, parleyCliJson } from "../lib/processes.js"
import type { DemoSummary } from "../lib/demo.js"
import type { LoadSpec, ScenarioRow } from "../lib/types.js"

export const ZOHO_LATENCY_MS = 50

export interface ZohoHarness {
  readonly step: (line: string) => void
  readonly note: (line: string) => void
  readonly dataDir: (name: string) => string
  readonly logFile: (name: string) => string
  readonly loadSpec: (target: ParleyServer, spec: Omit<LoadSpec, "url" | "connections" | "durationSeconds" | "warmupSeconds">) => LoadSpec
  readonly measure: (id: string, name: string, target: ParleyServer, spec: LoadSpec, baselineOf?: string) => Promise<ScenarioRow>
  readonly record: (row: ScenarioRow) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const zohoScenario = async (h: ZohoHarness): Promise<void> => {
  const zoho = await ZohoFake.start()
  const dir = h.dataDir("zoho")
  const env = {
    ...BENCH_SERVER_ENV,
    PARLEY_ZOHO_CLIENT_ID: zoho.clientId,
    PARLEY_ZOHO_CLIENT_SECRET: zoho.clientSecret,
    PARLEY_ZOHO_ACCOUNTS_URL: zoho.url,
    // Unlike the other rows, the texts go on to Delivered (the write-backs are part of what is measured).
    PARLEY_SIM_STEP_MS: "500"
  }
  const server = await ParleyServer.start({ dataDir: dir, env, logFile: h.logFile("zoho") })
  try {
    const demo = await parleyCliJson<DemoSummary>(["demo"], dir, env)
    // The CLI builds the redirect URL from PORT: the server's.
    const cliEnv = { ...env, PORT: String(server.port) }
    const started = await parleyCliJson<{ url: string }>(["crm", "connect", demo.orgId, "--provider", "zoho"], dir, cliEnv)
    const consent = await fetch(started.url, { redirect: "manual" })
    const callback = await fetch(consent.headers.get("location") ?? "")
    if (callback.status !== 200) throw new Error(`Zoho connect failed: ${callback.status} ${await callback.text()}`)
    await parleyCliJson(["crm", "setup", demo.orgId], dir, cliEnv)
    zoho.latencyMs = ZOHO_LATENCY_MS
    h.step(`zoho: ${demo.orgId} connected to the fake Zoho (${ZOHO_LATENCY_MS} ms per answer)`)

    const from = demo.numbers[0]
    if (from === undefined) throw new Error("the demo org has no number")
    const before = { upserts: upserts(zoho), puts: puts(zoho), all: zoho.crmCalls }
    await h.measure(
      "zoho.write",
      `zoho: POST /messages, Zoho-connected (fake, ${ZOHO_LATENCY_MS} ms)`,
      server,
      h.loadSpec(server, {
        method: "POST",
        path: "/api/v1/messages",
        headers: { authorization: `Bearer ${demo.keys.live}`, "content-type": "application/json" },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: from.sid, body: "Benchmark: your appointment is confirmed." }),
        uniqueIdempotencyKey: true
      }),
      "write"
    )
    const createCalls = upserts(zoho) - before.upserts
    // The write-backs until every accepted text is Delivered in Zoho (the simulated carrier's steps, then a round).
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline && deliveredInZoho(zoho) < (zoho.records.get("Parley_Messages")?.size ?? 0)) await sleep(500)
    // Each accepted message is one Parley_Messages record (warm-up included, as the upserts are); counted once
    // the requests in flight when the load stopped have landed.
    const accepted = Math.max(1, zoho.records.get("Parley_Messages")?.size ?? 0)
    const writeBacks = puts(zoho) - before.puts
    const delivered = deliveredInZoho(zoho)
    const perCreate = createCalls / accepted
    const perDelivered = delivered === 0 ? null : writeBacks / delivered
    h.note(
      `Zoho (fake, ${ZOHO_LATENCY_MS} ms per answer): ${createCalls} upserts for ${accepted} accepted messages ` +
        `(${perCreate.toFixed(2)} calls per accepted message at creation); ${writeBacks} write-back PUTs for ${delivered} texts ` +
        `Delivered in Zoho (${perDelivered === null ? "n/a" : perDelivered.toFixed(3)} further calls per delivered text; goal ≤ 0.05); ` +
        `the built-in CRM makes no external call (its write row is "write" above).`
    )
    h.step(`  → Zoho calls: ${perCreate.toFixed(2)} per accepted message at creation, ${perDelivered === null ? "n/a" : perDelivered.toFixed(3)} per delivered text after`)
    h.record({
      id: "zoho.calls",
      name: "zoho: write-back calls per delivered text",
      kind: "parley",
      unit: "req/s",
      rate: null,
      p50: null,
      p95: null,
      p99: null,
      errors: null,
      peakRssMb: null,
      cpuPercent: null,
      ratio: null,
      notes: [`${perCreate.toFixed(2)} upserts per accepted message; ${perDelivered === null ? "n/a" : perDelivered.toFixed(3)} PUTs per delivered text`],
      details: { accepted, createCalls, writeBacks, delivered, zohoCalls: zoho.crmCalls - before.all }
    })
  } finally {
    await server.stop()
    await zoho.stop()
  }
}

const upserts = (zoho: ZohoFake) => zoho.requests.filter((r) => r.method === "POST" && r.path === "/crm/v8/Parley_Messages/upsert").length
const puts = (zoho: ZohoFake) => zoho.requests.filter((r) => r.method === "PUT" && r.path === "/crm/v8/Parley_Messages").length
const deliveredInZoho = (zoho: ZohoFake) =>
  [...(zoho.records.get("Parley_Messages")?.values() ?? [])].filter((r) => r["Status"] === "Delivered").length
