/**
 * `pnpm test`: every package's tests, one package at a time in the order
 * `pnpm -r` uses (dependencies first), stopping at the first that fails; then
 * the ten slowest test files of each pass, the time each suite took, and the
 * notices suites leave for the end of the run (a Postgres pass skipped for want
 * of a PostgreSQL), so that they are the last thing on the screen rather than
 * lost in the middle of the output.
 *
 * `pnpm test:soak` (`--soak`): the packages' `test:soak` scripts instead — the
 * long runs (kill -9 rounds, fuzzing, backlogs) at full size, which `pnpm test`
 * runs short (PARLEY_TEST_SOAK=1; see packages/server/test/support/soak.ts).
 *
 * Suites append one line each to the file named by PARLEY_TEST_NOTICES, and
 * may report the parts of their run (the server's SQLite and Postgres passes)
 * as `label<TAB>milliseconds` lines in the file named by PARLEY_TEST_TIMES,
 * and their slowest files as `pass<TAB>file<TAB>milliseconds` lines in the file
 * named by PARLEY_TEST_SLOWEST.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"

const root = join(import.meta.dirname, "..")
const dir = mkdtempSync(join(tmpdir(), "parley-test-notices-"))
const notices = join(dir, "notices")
const times = join(dir, "times")
const slowest = join(dir, "slowest")
const soak = process.argv.includes("--soak")
const script = soak ? "test:soak" : "test"
const env = { ...process.env, PARLEY_TEST_NOTICES: notices, PARLEY_TEST_TIMES: times, PARLEY_TEST_SLOWEST: slowest }

/**
 * pnpm, on this Node (the pinned one: `pnpm test` runs this script on it). pnpm names itself in
 * npm_execpath for the scripts it runs; outside pnpm, the `pnpm` on PATH.
 */
const pnpm = (args, options) => {
  const self = process.env.npm_execpath
  return self !== undefined && /pnpm/.test(self)
    ? spawnSync(process.execPath, [self, ...args], options)
    : spawnSync("pnpm", args, options)
}

const readOr = (file, fallback) => {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return fallback
  }
}

/** The workspace's packages in `pnpm -r`'s order, as directories. */
const packages = () => {
  const listed = pnpm(["-r", "--workspace-concurrency=1", "-s", "exec", "node", "-e", "console.log(process.cwd())"], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"]
  })
  if (listed.error !== undefined) throw listed.error
  if (listed.status !== 0) throw new Error(`pnpm could not list the workspace's packages (exit ${listed.status})`)
  return listed.stdout.split("\n").map((line) => line.trim()).filter((line) => line !== "")
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`

/** The ten slowest files of each pass, as the suites reported them (slowest first). */
const slowestFiles = (text) => {
  const passes = new Map()
  for (const line of text.split("\n")) {
    const [pass, file, ms, self, children] = line.split("\t")
    if (pass === undefined || file === undefined || !Number.isFinite(Number(ms))) continue
    // The CPU of the file's worker and of the processes it started, where the suite measured them.
    const cpu = self !== undefined && self !== "" && children !== undefined && children !== ""
      ? `  CPU ${seconds(Number(self)).padStart(8)} in the worker, ${seconds(Number(children)).padStart(8)} in started processes`
      : ""
    passes.set(pass, [...(passes.get(pass) ?? []), { file, ms: Number(ms), cpu }])
  }
  return [...passes].map(([pass, files]) => {
    const width = Math.max(...files.map((row) => row.file.length))
    const all = files.find((row) => row.file === "*")
    const ranked = files.filter((row) => row.file !== "*")
    return [
      `Slowest test files, ${pass}:`,
      ...ranked.sort((a, b) => b.ms - a.ms).slice(0, 10).map((row) => `  ${row.file.padEnd(width)}  ${seconds(row.ms).padStart(9)}${row.cpu}`),
      // Every file's time and CPU summed: file time well above CPU means the pass waits more than it computes.
      ...(all === undefined ? [] : [`  all files: ${seconds(all.ms)} of file time;${all.cpu}`])
    ].join("\n")
  }).join("\n\n")
}

/** One row per suite: the package, then the parts it reported, each with its wall time. */
const summary = (rows, totalMs) => {
  const width = Math.max(...rows.map((row) => row.label.length + (row.part ? 4 : 2)), 8)
  const line = (label, ms, note = "") => `${label.padEnd(width)}  ${seconds(ms).padStart(9)}${note}`
  return [
    `Time per suite (wall clock, Node ${process.version}):`,
    ...rows.map((row) => line(`${row.part ? "    " : "  "}${row.label}`, row.ms, row.failed ? "  FAILED" : "")),
    line("  total", totalMs)
  ].join("\n")
}

let status = 0
const rows = []
const started = Date.now()
try {
  for (const pkg of packages()) {
    const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"))
    if (manifest.scripts?.[script] === undefined) continue
    const label = manifest.name ?? relative(root, pkg)
    const reportedBefore = readOr(times, "").length
    const start = Date.now()
    const run = pnpm(["run", script], { cwd: pkg, stdio: "inherit", env })
    const ms = Date.now() - start
    const failed = run.error !== undefined || run.status !== 0
    rows.push({ label, ms, failed })
    for (const reported of readOr(times, "").slice(reportedBefore).split("\n")) {
      const [part, partMs] = reported.split("\t")
      if (part !== undefined && part !== "" && Number.isFinite(Number(partMs))) rows.push({ label: part, ms: Number(partMs), part: true })
    }
    if (run.error !== undefined) process.stderr.write(`could not run pnpm: ${run.error.message}\n`)
    if (failed) {
      status = run.status ?? 1
      break
    }
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
  status = 1
}
const said = readOr(notices, "").trim()
const slow = slowestFiles(readOr(slowest, ""))
rmSync(dir, { recursive: true, force: true })
if (slow !== "") process.stderr.write(`\n${slow}\n`)
if (rows.length > 0) process.stderr.write(`\n${summary(rows, Date.now() - started)}\n`)
if (said !== "") process.stderr.write(`\n${said}\n`)
process.exit(status)
