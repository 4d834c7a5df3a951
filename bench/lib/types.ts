/** Shapes shared by the orchestrator, the load generator and the report. */

export interface LoadSpec {
  readonly url: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  /** Sets a fresh `Idempotency-Key` on every request. */
  readonly uniqueIdempotencyKey?: boolean
  readonly connections: number
  readonly durationSeconds: number
  readonly warmupSeconds: number
  /** Requests a second across all connections (autocannon's overallRate); unset: as fast as answered. */
  readonly overallRate?: number
}

export interface Latency {
  readonly p50: number | null
  readonly p95: number | null
  readonly p99: number | null
  readonly max: number | null
  readonly mean: number | null
}

export interface LoadResult {
  readonly durationSeconds: number
  readonly requests: number
  /** 2xx responses. */
  readonly ok: number
  /** 2xx responses per second. */
  readonly rps: number
  /** Of 2xx responses, in milliseconds. */
  readonly latency: Latency
  readonly non2xx: number
  /** Connection errors, timeouts included. */
  readonly socketErrors: number
  readonly timeouts: number
  readonly statusCodes: Readonly<Record<string, number>>
}

export type Unit = "req/s" | "actions/s"

export interface ScenarioRow {
  readonly id: string
  readonly name: string
  readonly kind: "parley" | "baseline"
  readonly unit: Unit
  readonly rate: number | null
  /** Milliseconds: request latency, or dispatch lateness for the dispatcher. */
  readonly p50: number | null
  readonly p95: number | null
  readonly p99: number | null
  /**
   * Dispatcher only: when some actions were not sent by the end, they count as
   * this late (the time waited), and a percentile at this value is a lower bound.
   */
  readonly openEndMs?: number
  readonly errors: number | null
  readonly peakRssMb: number | null
  /** The server's CPU use over the load (including warm-up), in % of one core. */
  readonly cpuPercent: number | null
  /** The id of the baseline row measured in the same run, if any. */
  readonly baselineOf?: string
  readonly ratio: number | null
  readonly notes: ReadonlyArray<string>
  readonly details?: unknown
}

/** Nearest-rank percentile of an ascending array. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number | null => {
  if (sorted.length === 0) return null
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? null
}
