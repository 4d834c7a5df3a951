/**
 * The API under a flood of forged provider callbacks (issue 22, item 8). An organisation connected to
 * Twilio; the API's read path is loaded at a moderate fixed rate, once quiet and once while forged
 * status callbacks (a wrong X-Twilio-Signature, for that organisation and for unknown ones) arrive at
 * the rate the attack pass used (about 250 a second). The ratio of the two p95s is the figure: the
 * callback gate is meant to keep it within 2×.
 */
import { parleyCliJson, runLoad } from "../lib/processes.js"
import { fmtMs } from "../lib/report.js"
import { type LoadResult, type LoadSpec, type ScenarioRow } from "../lib/types.js"

export interface FloodHarness {
  readonly step: (line: string) => void
  readonly record: (row: ScenarioRow) => void
}

export interface FloodTarget {
  readonly url: string
  readonly dataDir: string
  readonly orgId: string
  readonly key: string
  readonly messagePath: string
}

/** The API's load: a few connections at a fixed rate, well below what the server can take. */
const API_RATE = 100
const FLOOD_RATE = 250

const row = (id: string, name: string, result: LoadResult, quietP95: number | null): ScenarioRow => ({
  id,
  name,
  kind: "parley",
  unit: "req/s",
  rate: result.rps,
  p50: result.latency.p50,
  p95: result.latency.p95,
  p99: result.latency.p99,
  errors: result.non2xx + result.socketErrors,
  peakRssMb: null,
  cpuPercent: null,
  ratio: quietP95 === null || quietP95 === 0 || result.latency.p95 === null ? null : result.latency.p95 / quietP95,
  notes: [],
  details: result
})

export const callbackFloodScenario = async (
  harness: FloodHarness,
  target: FloodTarget,
  durationSeconds: number
): Promise<{ readonly quietP95: number | null; readonly floodP95: number | null }> => {
  await parleyCliJson([
    "providers", "set", "--org", target.orgId, "--kind", "twilio", "--account-sid", `AC${"0".repeat(32)}`,
    "--auth-token-env", "BENCH_TWILIO_TOKEN", "--api-base", "http://127.0.0.1:9"
  ], target.dataDir, { BENCH_TWILIO_TOKEN: "bench-token-not-used-to-sign" })
  const api: LoadSpec = {
    url: target.url,
    method: "GET",
    path: target.messagePath,
    headers: { authorization: `Bearer ${target.key}` },
    connections: 4,
    durationSeconds,
    warmupSeconds: 1,
    overallRate: API_RATE
  }
  const forged = (org: string): LoadSpec => ({
    url: target.url,
    method: "POST",
    path: `/providers/twilio/status?org=${org}&action=1`,
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "Zm9yZ2Vk" },
    body: "MessageSid=SMforged&MessageStatus=delivered",
    connections: 10,
    durationSeconds: durationSeconds + 2,
    warmupSeconds: 0,
    overallRate: FLOOD_RATE / 2
  })
  harness.step(`callback flood: API at ${API_RATE}/s, quiet`)
  const quiet = await runLoad(api)
  harness.record(row("callbacks.quiet", `API p95, quiet (GET message at ${API_RATE}/s)`, quiet, null))
  harness.step(`  → p95 ${fmtMs(quiet.latency.p95)} ms`)
  harness.step(`callback flood: API at ${API_RATE}/s under ${FLOOD_RATE} forged callbacks a second`)
  const [flooded, own, unknown] = await Promise.all([runLoad(api), runLoad(forged(target.orgId)), runLoad(forged("org_unknown"))])
  const floodRow = row(
    "callbacks.flood",
    `API p95 under ${FLOOD_RATE}/s forged callbacks (ratio: to quiet p95)`,
    flooded,
    quiet.latency.p95
  )
  harness.record({
    ...floodRow,
    notes: [`forged callbacks answered: ${JSON.stringify(own.statusCodes)} (its organisation), ${JSON.stringify(unknown.statusCodes)} (unknown)`]
  })
  harness.step(`  → p95 ${fmtMs(flooded.latency.p95)} ms (${floodRow.ratio?.toFixed(2) ?? "-"}× quiet); callbacks answered ${
    JSON.stringify(own.statusCodes)
  } / ${JSON.stringify(unknown.statusCodes)}`)
  return { quietP95: quiet.latency.p95, floodP95: flooded.latency.p95 }
}
