/**
 * Scale-out (issue 7): write-path throughput with 1, 2 and 3 Parley replicas
 * on one Postgres database, beside one process on the embedded SQLite file,
 * all in the same run. Each replica gets its own load generator (the
 * connections are split evenly, 12 in all, so every row offers the same
 * load); the rows' rates are the sums. On a 2-core machine the point is
 * correctness under contention and the shape of the curve, not speed-up:
 * after every row the database must hold exactly one action per 202.
 */
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import Database from "better-sqlite3"
import pg from "pg"
import { ParleyServer, parleyCliJson, RssSampler, runLoad } from "../lib/processes.js"
import type { LoadResult, ScenarioRow } from "../lib/types.js"

const CONNECTIONS = 12

/** One secret key for every replica of a bench database (Postgres needs PARLEY_SECRET_KEY). */
const BENCH_SECRET_KEY = randomBytes(32).toString("base64")

export interface ReplicaBenchOptions {
  /** Admin connection for creating the benchmark's databases. */
  readonly adminUrl: string
  readonly durationSeconds: number
  readonly warmupSeconds: number
  /** Environment every server gets (rate limit, simulator timing, log level). */
  readonly serverEnv: Readonly<Record<string, string>>
  readonly dataDir: (name: string) => string
  readonly logFile: (name: string) => string
  readonly step: (line: string) => void
}

interface Demo {
  readonly orgId: string
  readonly numbers: ReadonlyArray<{ readonly sid: string }>
  readonly keys: { readonly live: string }
}

const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

const admin = async <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** Whether Postgres answers at the admin URL (the scenario is skipped with a note when it does not). */
export const postgresAvailable = async (adminUrl: string): Promise<boolean> => {
  try {
    await admin(adminUrl, (client) => client.query("SELECT 1"))
    return true
  } catch {
    return false
  }
}

interface Setup {
  readonly name: string
  readonly store: "sqlite" | "postgres"
  readonly replicas: number
}

const SETUPS: ReadonlyArray<Setup> = [
  { name: "sqlite1", store: "sqlite", replicas: 1 },
  { name: "pg1", store: "postgres", replicas: 1 },
  { name: "pg2", store: "postgres", replicas: 2 },
  { name: "pg3", store: "postgres", replicas: 3 }
]

const countActions = async (setup: Setup, env: Readonly<Record<string, string>>, dataDir: string, orgId: string): Promise<number> => {
  if (setup.store === "postgres") {
    return admin(env["DATABASE_URL"]!, async (client) => {
      const result = await client.query<{ n: string }>("SELECT COUNT(*) AS n FROM actions WHERE org_id = $1", [orgId])
      return Number(result.rows[0]?.n ?? 0)
    })
  }
  const db = new Database(join(dataDir, "parley.db"), { readonly: true })
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM actions WHERE org_id = ?").get(orgId) as { n: number }).n
  } finally {
    db.close()
  }
}

/** One row per setup; the Postgres rows carry their ratio to the SQLite row of the same run. */
export const replicaScenarios = async (options: ReplicaBenchOptions): Promise<ReadonlyArray<ScenarioRow>> => {
  const rows: Array<ScenarioRow> = []
  for (const setup of SETUPS) {
    const database = `parley_bench_${randomBytes(4).toString("hex")}`
    const dataDir = options.dataDir(`replicas-${setup.name}`)
    const storeEnv: Record<string, string> = setup.store === "postgres"
      ? { DATABASE_URL: withDatabase(options.adminUrl, database), PARLEY_DB_POOL_SIZE: "5", PARLEY_SECRET_KEY: BENCH_SECRET_KEY }
      : { PARLEY_DATA_DIR: dataDir }
    if (setup.store === "postgres") await admin(options.adminUrl, (c) => c.query(`CREATE DATABASE ${database}`))
    const servers: Array<ParleyServer> = []
    try {
      // The first replica migrates; the others start on the migrated database.
      for (let i = 0; i < setup.replicas; i++) {
        servers.push(await ParleyServer.start({
          dataDir,
          env: { ...options.serverEnv, ...storeEnv },
          logFile: options.logFile(`replicas-${setup.name}-${i}`)
        }))
      }
      const demo = await parleyCliJson<Demo>(["demo"], dataDir, storeEnv)
      await parleyCliJson(["orgs", "update", demo.orgId, "--sms-allowance", "unlimited"], dataDir, storeEnv)
      const body = JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: "Benchmark: replicas." })
      const before = await countActions(setup, storeEnv, dataDir, demo.orgId)
      options.step(`replicas: ${setup.name} (${setup.replicas} × ${setup.store}) under load`)
      const samplers = servers.map((s) => new RssSampler(s.pid).start())
      const results: ReadonlyArray<LoadResult> = await Promise.all(servers.map((server) =>
        runLoad({
          url: server.baseUrl,
          method: "POST",
          path: "/api/v1/messages",
          headers: { authorization: `Bearer ${demo.keys.live}` },
          body,
          uniqueIdempotencyKey: true,
          connections: CONNECTIONS / setup.replicas,
          durationSeconds: options.durationSeconds,
          warmupSeconds: options.warmupSeconds
        })
      ))
      const usage = samplers.map((s) => s.stop())
      const created = (await countActions(setup, storeEnv, dataDir, demo.orgId)) - before
      const ok = results.reduce((n, r) => n + r.ok, 0)
      const errors = results.reduce((n, r) => n + r.non2xx + r.socketErrors, 0)
      const notes: Array<string> = []
      // Warm-up answers are not in `ok`, so the database may hold more; never fewer.
      if (created < ok) notes.push(`${ok} answers 202 but only ${created} actions stored`)
      const weighted = (pick: (r: LoadResult) => number | null) =>
        ok === 0 ? null : results.reduce((sum, r) => sum + (pick(r) ?? 0) * r.ok, 0) / ok
      rows.push({
        id: `replicas.${setup.name}`,
        name: `write, ${setup.replicas} replica${setup.replicas === 1 ? "" : "s"} on ${setup.store === "postgres" ? "Postgres" : "SQLite"}`,
        kind: "parley",
        unit: "req/s",
        rate: results.reduce((n, r) => n + r.rps, 0),
        p50: weighted((r) => r.latency.p50),
        p95: Math.max(...results.map((r) => r.latency.p95 ?? 0)),
        p99: Math.max(...results.map((r) => r.latency.p99 ?? 0)),
        errors,
        peakRssMb: Math.max(...usage.map((u) => u.peakMb ?? 0)),
        cpuPercent: usage.reduce((n, u) => n + (u.cpuPercent ?? 0), 0),
        ...(setup.name === "sqlite1" ? {} : { baselineOf: "replicas.sqlite1" }),
        ratio: null,
        notes,
        details: { replicas: setup.replicas, store: setup.store, created, results }
      })
    } finally {
      await Promise.all(servers.map((s) => s.stop()))
      if (setup.store === "postgres") {
        await admin(options.adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
      }
    }
  }
  const sqlite = rows.find((r) => r.id === "replicas.sqlite1")?.rate ?? null
  return rows.map((row) =>
    row.baselineOf === undefined || sqlite === null || row.rate === null ? row : { ...row, ratio: row.rate / sqlite }
  )
}
