/**
 * `tsx bench/read.ts [--seconds S] [--runs R] [--bin FILE]... [--cpu-prof DIR] [--no-build] [--path numbers|message]`:
 * the read path on its own, for working on it (as `bench/write.ts` is for the write path). Each run
 * starts every build on its own copy of one fresh demo store in which one text has been sent, and the
 * read baseline (`bench/baselines/read.ts`) on a copy of the same database, loads each with
 * `GET /api/v1/messages/{id}` (and `GET /api/v1/numbers` with `--path numbers`) from 10 connections,
 * and prints one JSON line per server: rate and server CPU µs per request (warm-up included, as
 * `pnpm bench` counts it). Builds and the baseline alternate within a run, so two versions can be
 * compared on a machine whose load changes.
 * - `--bin FILE` (repeatable): a build of the `parley` command (a saved copy of the bundle); the
 *   workspace's `bin/parley.mjs` when none is given.
 * - `--cpu-prof DIR`: each Parley server and the baseline write a V8 CPU profile there when they stop.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { type DemoSummary } from "./lib/demo.js"
import { BaselineServer, BENCH_SERVER_ENV, buildServer, cpuProfileArgs, cpuSeconds, ParleyServer, parleyCliJson, runLoad, sleep } from "./lib/processes.js"
import { DB_FILE, snapshot, unlimitedTexts } from "./lib/seed.js"

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    runs: { type: "string", default: "1" },
    bin: { type: "string", multiple: true, default: [] },
    path: { type: "string", multiple: true, default: [] },
    "cpu-prof": { type: "string" },
    "no-build": { type: "boolean", default: false }
  }
})

const err = (line: string) => process.stderr.write(`${line}\n`)
const workDir = mkdtempSync(join(tmpdir(), "parley-read-"))
const bins: ReadonlyArray<string | undefined> = values.bin.length === 0 ? [undefined] : values.bin.map((b) => resolve(b))
const cpuProfDir = values["cpu-prof"] === undefined ? undefined : resolve(values["cpu-prof"])
const paths: ReadonlyArray<string> = values.path.length === 0 ? ["message"] : values.path

const main = async () => {
  if (values.bin.length === 0 && !values["no-build"]) await buildServer()
  const templateDir = join(workDir, "template")
  const demo = await parleyCliJson<DemoSummary>(["demo"], templateDir)
  unlimitedTexts(join(templateDir, DB_FILE), demo.orgId)
  const from = demo.numbers[0]
  if (from === undefined) throw new Error("the demo org has no number")
  const key = demo.keys.live
  const headers = { authorization: `Bearer ${key}` }

  // The text the read path fetches: accepted and sent by a server on the template, which then stops, so
  // that every copy holds the same stable row (the next simulated step is an hour away).
  const setup = await ParleyServer.start({ dataDir: templateDir, env: BENCH_SERVER_ENV, logFile: join(workDir, "setup.log") })
  const accepted = await (await setup.fetch("/api/v1/messages", key, {
    method: "POST",
    headers: { "idempotency-key": "bench-read-setup" },
    body: JSON.stringify({ to: "+14155550123", fromNumberSid: from.sid, body: "Benchmark: your appointment is confirmed." })
  })).json() as { id: string }
  for (let i = 0; i < 200; i++) {
    const response = await setup.fetch(`/api/v1/messages/${accepted.id}`, key)
    if (response.ok && ((await response.json()) as { status: string }).status === "Sent") break
    await sleep(50)
  }
  await setup.stop()
  const routes: Record<string, string> = { message: `/api/v1/messages/${accepted.id}`, numbers: "/api/v1/numbers" }

  const measure = async (run: number, target: string, server: { readonly pid: number; readonly baseUrl: string }) => {
    for (const name of paths) {
      const path = routes[name]
      if (path === undefined) throw new Error(`--path ${name}: one of ${Object.keys(routes).join(", ")}`)
      let cpuStart = 0
      let startedAt = 0
      const result = await runLoad(
        { url: server.baseUrl, method: "GET", path, headers, connections: 10, durationSeconds: Number(values.seconds), warmupSeconds: 2 },
        () => {
          cpuStart = cpuSeconds(server.pid) ?? 0
          startedAt = performance.now()
        }
      )
      const wall = (performance.now() - startedAt) / 1000
      const cpu = (cpuSeconds(server.pid) ?? 0) - cpuStart
      process.stdout.write(`${JSON.stringify({
        run,
        target,
        path: name,
        rps: Math.round(result.rps),
        cpuMicrosEach: Math.round((cpu / wall) * 1e6 / result.rps),
        errors: result.non2xx + result.socketErrors
      })}\n`)
    }
  }

  for (let run = 0; run < Number(values.runs); run++) {
    const baselineDir = join(workDir, `baseline-${run}`)
    const baseline = await BaselineServer.start("read.ts", { dbFile: snapshot(templateDir, baselineDir) }, cpuProfileArgs(cpuProfDir))
    await measure(run, "baseline read.ts", baseline)
    await baseline.stop()
    rmSync(baselineDir, { recursive: true, force: true })
    for (const [index, bin] of bins.entries()) {
      const dir = join(workDir, `parley-${run}-${index}`)
      snapshot(templateDir, dir)
      const logFile = join(workDir, `parley-${run}-${index}.log`)
      writeFileSync(logFile, "")
      const server = await ParleyServer.start({
        dataDir: dir,
        env: BENCH_SERVER_ENV,
        logFile,
        ...(bin === undefined ? {} : { bin }),
        nodeArgs: cpuProfileArgs(cpuProfDir)
      })
      await measure(run, bin ?? "parley", server)
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

main().then(
  () => rmSync(workDir, { recursive: true, force: true }),
  (failure: unknown) => {
    err(failure instanceof Error ? failure.stack ?? failure.message : String(failure))
    process.exitCode = 1
  }
)
