/**
 * A vitest reporter (beside the default one) that names the ten slowest test files of the pass, so
 * that whoever makes the suite slower, or wants it faster, sees where the time goes: beside each file's
 * time, the CPU its worker spent and the CPU of the processes it started (servers, CLI processes,
 * Chromium; file-cpu.ts), and for the whole pass the CPU of every file against the time the pass's
 * workers had — a pass whose files wait more than they compute gains from more files at a time, one that
 * computes does not. Under the root `pnpm test` (scripts/test.mjs) it appends
 * `pass<TAB>file<TAB>milliseconds<TAB>selfCpuMs<TAB>childrenCpuMs` lines to the file named by
 * PARLEY_TEST_SLOWEST, and the root script prints them after every suite's output; run alone (vitest
 * in this package) it prints them itself at the end of the run.
 *
 * A file's time is what its worker spent on it: importing it (collect) plus its tests and hooks.
 */
import { appendFileSync } from "node:fs"
import { relative } from "node:path"
import type { Reporter, TestModule } from "vitest/node"
import { FILE_CPU_ENV, readFileCpu } from "./file-cpu.js"
import { passName } from "./soak.js"

const SHOWN = 10

const fileTime = (module: TestModule): number => {
  const diagnostic = module.diagnostic()
  return diagnostic.collectDuration + diagnostic.duration
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const cpuFile = process.env[FILE_CPU_ENV]
    const cpu = cpuFile === undefined || cpuFile === "" ? new Map() : readFileCpu(cpuFile)
    const files = modules.map((module) => {
      const file = relative(process.cwd(), module.moduleId)
      const used = cpu.get(file)
      return { file, ms: fileTime(module), self: used?.self, children: used?.children }
    })
    const slowest = [...files].sort((a, b) => b.ms - a.ms).slice(0, SHOWN)
    if (slowest.length === 0) return
    const pass = passName()
    const measured = files.filter((row) => row.self !== undefined)
    const total = (pick: (row: (typeof files)[number]) => number) => measured.reduce((sum, row) => sum + pick(row), 0)
    const target = process.env["PARLEY_TEST_SLOWEST"]
    if (target !== undefined && target !== "") {
      // The pass's totals as a line of their own, file "*" (scripts/test.mjs prints it under the ten).
      const totals = measured.length === 0
        ? []
        : [{ file: "*", ms: total((r) => r.ms), self: total((r) => r.self ?? 0), children: total((r) => r.children ?? 0) }]
      appendFileSync(
        target,
        [...slowest, ...totals].map((row) => `${pass}\t${row.file}\t${Math.round(row.ms)}\t${row.self ?? ""}\t${row.children ?? ""}\n`).join("")
      )
      return
    }
    const width = Math.max(...slowest.map((row) => row.file.length))
    const cpuOf = (row: (typeof files)[number]) =>
      row.self === undefined || row.children === undefined
        ? ""
        : `  CPU ${seconds(row.self).padStart(8)} in the worker, ${seconds(row.children).padStart(8)} in started processes`
    const summary = measured.length === 0
      ? ""
      : `\n  all ${measured.length} files: ${seconds(total((r) => r.ms))} of file time, CPU ${seconds(total((r) => r.self ?? 0))} in ` +
        `workers and ${seconds(total((r) => r.children ?? 0))} in started processes`
    process.stdout.write(
      `\nSlowest test files (${pass}):\n${
        slowest.map((row) => `  ${row.file.padEnd(width)}  ${seconds(row.ms).padStart(7)}${cpuOf(row)}`).join("\n")
      }${summary}\n`
    )
  }
}
