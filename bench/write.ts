/**
 * `tsx bench/write.ts [--seconds S] [--runs R] [--bin FILE]... [--baseline NAME]... [--cpu-prof DIR] [--no-build]`:
 * the write path on its own, for working on it. Each run starts every build (and each named
 * baseline) on its own copy of one fresh demo store, loads it with `POST /api/v1/messages` (a fresh
 * Idempotency-Key per request, 10 connections, 2 s warm-up), waits until the dispatcher has sent
 * everything accepted, and prints one JSON line: rate, server CPU µs per accepted message during the
 * load, and until everything was sent (the dispatcher's share included). Builds and baselines
 * alternate within a run, so two versions can be compared on a machine whose load changes.
 * - `--bin FILE` (repeatable): a build of the `parley` command (a saved copy of the bundle); the
 *   workspace's `bin/parley.mjs` when none is given.
 * - `--baseline NAME` (repeatable): a script of `bench/baselines/` taking the write baselines' config
 *   (`write.ts`, `write-same.ts`).
 * - `--cpu-prof DIR`: each Parley server and each baseline writes a V8 CPU profile there when it stops.
 * - `--keep`: leaves the working directory (the servers' logs) in place.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import Database from "better-sqlite3"
import { type DemoSummary, orgContext } from "./lib/demo.js"
import { BaselineServer, BENCH_SERVER_ENV, buildServer, cpuProfileArgs, cpuSeconds, flushDisk, ParleyServer, parleyCliJson, runLoad, sleep } from "./lib/processes.js"
import { DB_FILE, snapshot, unlimitedTexts } from "./lib/seed.js"
import { writeBaselineConfig } from "./lib/writeBaseline.js"

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    runs: { type: "string", default: "1" },
    bin: { type: "string", multiple: true, default: [] },
    baseline: { type: "string", multiple: true, default: [] },
    "cpu-prof": { type: "string" },
    "no-build": { type: "boolean", default: false },
    keep: { type: "boolean", default: false }
  }
})

const err = (line: string) => process.stderr.write(`${line}\n`)
const workDir = mkdtempSync(join(tmpdir(), "parley-write-"))
const bins: ReadonlyArray<string | undefined> = values.bin.length === 0 ? [undefined] : values.bin.map((b) => resolve(b))
const cpuProfDir = values["cpu-prof"] === undefined ? undefined : resolve(values["cpu-prof"])

/** Rows not yet sent: Queued, or committed and not yet handed to the (simulated) carrier. */
const unsent = (file: string): number => {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare("SELECT count(*) AS n FROM actions WHERE status IN ('Queued', 'Sending')").get() as { n: number }).n
  } finally {
    db.close()
  }
}

/** What a server wrote, per accepted message, so that two servers can be checked for doing the same work. */
const writtenPerMessage = (file: string) => {
  const db = new Database(file, { readonly: true })
  try {
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n
    const messages = count("SELECT count(*) AS n FROM actions WHERE kind = 'message'")
    const per = (n: number) => (messages === 0 ? 0 : Math.round((n / messages) * 100) / 100)
    return {
      messages,
      events: per(count("SELECT count(*) AS n FROM events")),
      idempotencyRecords: per(count("SELECT count(*) AS n FROM idempotency_keys WHERE status IS NOT NULL")),
      carrierSends: per(count("SELECT count(*) AS n FROM simulated_sends"))
    }
  } finally {
    db.close()
  }
}

/**
 * The server's CPU from the start of the load (warm-up included, as `pnpm bench` counts it): per
 * request at the measured rate, and in total so far.
 */
const cpuWindow = (pid: number) => {
  let cpuStart = 0
  let startedAt = 0
  let endedAt = 0
  const cpuSecondsSoFar = () => (cpuSeconds(pid) ?? 0) - cpuStart
  return {
    start: () => {
      cpuStart = cpuSeconds(pid) ?? 0
      startedAt = performance.now()
    },
    microsEach: (rps: number) => {
      endedAt = performance.now()
      const wall = (endedAt - startedAt) / 1000
      return Math.round((cpuSecondsSoFar() / wall) * 1e6 / rps)
    },
    get loadSeconds() {
      return (endedAt - startedAt) / 1000
    },
    cpuSeconds: cpuSecondsSoFar
  }
}

const main = async () => {
  if (values.bin.length === 0 && !values["no-build"]) await buildServer()
  const templateDir = join(workDir, "template")
  const demo = await parleyCliJson<DemoSummary>(["demo"], templateDir)
  unlimitedTexts(join(templateDir, DB_FILE), demo.orgId)
  const org = orgContext(templateDir, demo)
  const from = demo.numbers[0]
  if (from === undefined) throw new Error("the demo org has no number")
  const body = JSON.stringify({ to: "+14155550123", fromNumberSid: from.sid, body: "Benchmark: your appointment is confirmed." })
  const headers = { authorization: `Bearer ${demo.keys.live}` }
  const load = (baseUrl: string) => ({
    url: baseUrl,
    method: "POST" as const,
    path: "/api/v1/messages",
    headers,
    body,
    uniqueIdempotencyKey: true,
    connections: 10,
    durationSeconds: Number(values.seconds),
    warmupSeconds: 2
  })

  /** Loads one server, waits until it has sent everything it accepted (or stops making progress), reports. */
  const measure = async (
    run: number,
    target: string,
    file: string,
    server: { readonly pid: number; readonly baseUrl: string; readonly stop: () => Promise<unknown> }
  ) => {
    flushDisk()
    const window = cpuWindow(server.pid)
    const result = await runLoad(load(server.baseUrl), window.start)
    const cpuEach = window.microsEach(result.rps)
    const loadEnded = performance.now()
    // A server that does not dispatch (the inserts-only baseline) leaves its rows queued: stop waiting once
    // nothing has moved for a second.
    let left = unsent(file)
    let movedAt = performance.now()
    while (left > 0 && performance.now() - loadEnded < 30_000 && performance.now() - movedAt < 1000) {
      await sleep(20)
      const now = unsent(file)
      if (now !== left) movedAt = performance.now()
      left = now
    }
    // Everything the server spent from the start of the load until the last accepted text was sent.
    const cpuAll = window.cpuSeconds()
    await server.stop()
    const written = writtenPerMessage(file)
    process.stdout.write(`${JSON.stringify({
      run,
      target,
      rps: Math.round(result.rps),
      cpuMicrosEach: cpuEach,
      cpuMicrosEachUntilSent: left === 0 ? Math.round((cpuAll * 1e6) / (result.rps * window.loadSeconds)) : null,
      drainMs: Math.round(performance.now() - loadEnded),
      errors: result.non2xx + result.socketErrors,
      unsent: left,
      written
    })}\n`)
  }

  for (let run = 0; run < Number(values.runs); run++) {
    for (const script of values.baseline) {
      const dir = join(workDir, `baseline-${run}-${script}`)
      const file = snapshot(templateDir, dir)
      const server = await BaselineServer.start(script, writeBaselineConfig(demo.keys.live, org, file), cpuProfileArgs(cpuProfDir))
      await measure(run, `baseline ${script}`, file, server)
      rmSync(dir, { recursive: true, force: true })
    }
    for (const [index, bin] of bins.entries()) {
      const dir = join(workDir, `parley-${run}-${index}`)
      const file = snapshot(templateDir, dir)
      const logFile = join(workDir, `parley-${run}-${index}.log`)
      writeFileSync(logFile, "")
      const server = await ParleyServer.start({
        dataDir: dir,
        env: BENCH_SERVER_ENV,
        logFile,
        ...(bin === undefined ? {} : { bin }),
        nodeArgs: cpuProfileArgs(cpuProfDir)
      })
      await measure(run, bin ?? "parley", file, server)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

main().then(
  () => (values.keep ? err(`kept ${workDir}`) : rmSync(workDir, { recursive: true, force: true })),
  (failure: unknown) => {
    err(failure instanceof Error ? failure.stack ?? failure.message : String(failure))
    process.exitCode = 1
  }
)
