/**
 * The load generator: runs autocannon in its own process (so the load and the
 * orchestrator never share an event loop) and prints one JSON line with the
 * result. The orchestrator passes a LoadSpec as JSON in argv[2].
 *
 * Latency percentiles are computed here from every 2xx response time (float
 * milliseconds) rather than taken from autocannon's integer-millisecond
 * histogram, so sub-millisecond figures and p95 are exact.
 */
import { randomBytes } from "node:crypto"
import autocannon from "autocannon"
import { type LoadResult, type LoadSpec, percentile } from "./lib/types.js"

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec

const prefix = randomBytes(6).toString("hex")
let counter = 0

const headers: Record<string, string> = { ...spec.headers }
if (spec.body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json"

const request: autocannon.Request = {
  method: spec.method,
  path: spec.path,
  headers,
  ...(spec.body === undefined ? {} : { body: spec.body }),
  ...(spec.uniqueIdempotencyKey === true
    ? {
      setupRequest: (req: autocannon.Request): autocannon.Request => ({
        ...req,
        headers: { ...req.headers, "idempotency-key": `bench-${prefix}-${++counter}` }
      })
    }
    : {})
}

const options: autocannon.Options & { warmup?: { connections: number; duration: number } } = {
  url: spec.url,
  connections: spec.connections,
  duration: spec.durationSeconds,
  pipelining: 1,
  timeout: 10,
  requests: [request],
  ...(spec.overallRate === undefined ? {} : { overallRate: spec.overallRate }),
  ...(spec.warmupSeconds > 0 ? { warmup: { connections: spec.connections, duration: spec.warmupSeconds } } : {})
}

process.stdout.write(`${JSON.stringify({ event: "start" })}\n`)
const latencies: Array<number> = []
const statusCodes: Record<string, number> = {}
const instance = autocannon(options) as Promise<autocannon.Result> & autocannon.Instance
instance.on("response", (_client, statusCode, _bytes, responseTime) => {
  statusCodes[String(statusCode)] = (statusCodes[String(statusCode)] ?? 0) + 1
  if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
})

const result = await instance
latencies.sort((a, b) => a - b)
const ok = latencies.length
const output: LoadResult = {
  durationSeconds: result.duration,
  requests: result.requests.total,
  ok,
  rps: result.duration > 0 ? ok / result.duration : 0,
  latency: {
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? null,
    mean: ok === 0 ? null : latencies.reduce((sum, x) => sum + x, 0) / ok
  },
  non2xx: result.non2xx,
  socketErrors: result.errors,
  timeouts: result.timeouts,
  statusCodes
}
process.stdout.write(`${JSON.stringify(output)}\n`)
