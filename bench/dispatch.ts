/**
 * `tsx bench/dispatch.ts [--actions N] [--window-ms W] [--runs R] [--bin FILE] [--cpu-prof DIR] [--keep]`:
 * the dispatcher scenario on its own, for working on the dispatcher. Much
 * shorter than `pnpm bench` and scriptable: one JSON line per run on stdout
 * (the row's figures, server CPU per action included), progress on stderr.
 * - `--window-ms 0` (default): all actions due at once; otherwise a steady stream over the window.
 * - `--bin FILE`: another build of the `parley` command (e.g. a saved copy of the bundle), so runs of
 *   two versions can alternate on a machine whose load changes.
 * - `--cpu-prof DIR`: the server writes a V8 CPU profile there when it stops.
 * - `--node-arg FLAG` (repeatable): more Node flags for the server, e.g. `--trace-gc`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { type DemoSummary, orgContext } from "./lib/demo.js"
import { BENCH_SERVER_ENV, buildServer, cpuProfileArgs, ParleyServer, parleyCliJson } from "./lib/processes.js"
import { unlimitedTexts } from "./lib/seed.js"
import type { ScenarioRow } from "./lib/types.js"
import { dispatcherScenario } from "./scenarios/dispatcher.js"

const { values } = parseArgs({
  options: {
    actions: { type: "string", default: "10000" },
    "window-ms": { type: "string", default: "0" },
    runs: { type: "string", default: "1" },
    bin: { type: "string" },
    "cpu-prof": { type: "string" },
    "node-arg": { type: "string", multiple: true, default: [] },
    "no-build": { type: "boolean", default: false },
    keep: { type: "boolean", default: false }
  }
})

const err = (line: string) => process.stderr.write(`${line}\n`)
const workDir = mkdtempSync(join(tmpdir(), "parley-dispatch-"))
const bin = values.bin === undefined ? undefined : resolve(values.bin)
const cpuProfDir = values["cpu-prof"] === undefined ? undefined : resolve(values["cpu-prof"])

const main = async () => {
  if (bin === undefined && !values["no-build"]) await buildServer()
  const templateDir = join(workDir, "template")
  const demo = await parleyCliJson<DemoSummary>(["demo"], templateDir)
  unlimitedTexts(join(templateDir, "parley.db"), demo.orgId)
  const org = orgContext(templateDir, demo)
  const bootMs: Array<number> = []
  const notes: Array<string> = []
  for (let run = 0; run < Number(values.runs); run++) {
    let row: ScenarioRow | undefined
    const id = `dispatch-${run}`
    await dispatcherScenario({
      step: err,
      log: err,
      note: (line) => notes.push(line),
      timed: (_name, f) => f(),
      dataDir: (name) => join(workDir, name),
      startParley: async (name, dir) => {
        const logFile = join(workDir, `${name}.log`)
        writeFileSync(logFile, "")
        const server = await ParleyServer.start({
          dataDir: dir,
          env: BENCH_SERVER_ENV,
          logFile,
          ...(bin === undefined ? {} : { bin }),
          nodeArgs: [
            ...cpuProfileArgs(cpuProfDir),
            ...(values["node-arg"] ?? [])
          ]
        })
        bootMs.push(server.bootMs)
        return server
      },
      stopParley: async (server) => {
        await server.stop()
      },
      record: (r) => (row = r),
      bootEstimateMs: Math.max(...bootMs, 2_000)
    }, templateDir, org, {
      id,
      actions: Number(values.actions),
      windowMs: Number(values["window-ms"]),
      timeoutMs: 120_000
    })
    rmSync(join(workDir, id), { recursive: true, force: true })
    if (row !== undefined) {
      const { name, p50, p95, p99, peakRssMb, rate } = row
      process.stdout.write(`${JSON.stringify({ bin: bin ?? "bin/parley.mjs", name, rate, p50, p95, p99, peakRssMb, details: row.details })}\n`)
    }
  }
  for (const note of notes) err(`note: ${note}`)
}

try {
  await main()
} finally {
  if (!values.keep) rmSync(workDir, { recursive: true, force: true })
}
