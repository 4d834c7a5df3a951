/**
 * Where a test file's time goes, in CPU: what the file's worker spent itself (its tests, the in-process
 * admin CLI, the fakes) and what the processes it started spent (servers, CLI processes, Chromium) — read
 * from the worker's own `/proc/self/stat` before and after the file (`utime`/`stime`, and
 * `cutime`/`cstime`: every child the worker has waited for, which Node does for each that exits). Vitest's
 * workers are processes (its `forks` pool) running one file at a time, so each file's difference is its own.
 *
 * A file whose CPU is small beside its time waits (leases, timers, polling); one whose started processes
 * dominate pays for server starts (about a second of CPU each). `slowest-files.ts` prints both beside the
 * ten slowest files; where /proc is missing (not Linux) nothing is recorded.
 */
import { appendFileSync, readFileSync } from "node:fs"

export interface CpuReading {
  /** This process's own CPU, ms. */
  readonly self: number
  /** CPU of the children it has waited for, ms. */
  readonly children: number
}

/** Clock ticks per second of /proc's CPU fields (USER_HZ: 100 on Linux everywhere). */
const TICKS_PER_SECOND = 100

export const readCpu = (): CpuReading | undefined => {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8")
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ms = (index: number) => (Number(fields[index]) * 1000) / TICKS_PER_SECOND
    // fields[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
    return { self: ms(11) + ms(12), children: ms(13) + ms(14) }
  } catch {
    return undefined
  }
}

/** The environment variable naming the file each worker appends `file<TAB>selfMs<TAB>childrenMs` lines to. */
export const FILE_CPU_ENV = "PARLEY_TEST_FILE_CPU"

export const recordFileCpu = (file: string, before: CpuReading, after: CpuReading): void => {
  const target = process.env[FILE_CPU_ENV]
  if (target === undefined || target === "") return
  appendFileSync(target, `${file}\t${Math.round(after.self - before.self)}\t${Math.round(after.children - before.children)}\n`)
}

export const readFileCpu = (file: string): Map<string, CpuReading> => {
  const byFile = new Map<string, CpuReading>()
  let text = ""
  try {
    text = readFileSync(file, "utf8")
  } catch {
    return byFile
  }
  for (const line of text.split("\n")) {
    const [name, self, children] = line.split("\t")
    if (name === undefined || name === "" || !Number.isFinite(Number(self)) || !Number.isFinite(Number(children))) continue
    const seen = byFile.get(name) ?? { self: 0, children: 0 }
    byFile.set(name, { self: seen.self + Number(self), children: seen.children + Number(children) })
  }
  return byFile
}
