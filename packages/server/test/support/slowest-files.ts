/**
 * A vitest reporter (beside the default one) that names the ten slowest test files of the pass, so
 * that whoever makes the suite slower, or wants it faster, sees where the time goes. Under the root
 * `pnpm test` (scripts/test.mjs) it appends `pass<TAB>file<TAB>milliseconds` lines to the file named by
 * PARLEY_TEST_SLOWEST, and the root script prints them after every suite's output; run alone (vitest
 * in this package) it prints them itself at the end of the run.
 *
 * A file's time is what its worker spent on it: importing it (collect) plus its tests and hooks.
 */
import { appendFileSync } from "node:fs"
import { relative } from "node:path"
import type { Reporter, TestModule } from "vitest/node"
import { passName } from "./soak.js"

const SHOWN = 10

const fileTime = (module: TestModule): number => {
  const diagnostic = module.diagnostic()
  return diagnostic.collectDuration + diagnostic.duration
}

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const slowest = modules
      .map((module) => ({ file: relative(process.cwd(), module.moduleId), ms: fileTime(module) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN)
    if (slowest.length === 0) return
    const pass = passName()
    const target = process.env["PARLEY_TEST_SLOWEST"]
    if (target !== undefined && target !== "") {
      appendFileSync(target, slowest.map((row) => `${pass}\t${row.file}\t${Math.round(row.ms)}\n`).join(""))
      return
    }
    const width = Math.max(...slowest.map((row) => row.file.length))
    process.stdout.write(
      `\nSlowest test files (${pass}):\n${slowest.map((row) => `  ${row.file.padEnd(width)}  ${(row.ms / 1000).toFixed(1).padStart(7)} s`).join("\n")}\n`
    )
  }
}
