import { configDefaults, defineConfig } from "vitest/config"
import { announceAtEnd, isCi, planPostgres, unavailableNotice } from "./test/support/postgres.js"
import LongWaitsFirst from "./test/support/long-waits-first.js"
import { FILE_CPU_ENV } from "./test/support/file-cpu.js"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

// The server suite runs twice: on SQLite, then with PARLEY_TEST_STORE=postgres.
// The Postgres pass needs a PostgreSQL (found or started by test/support/postgres-setup.ts);
// where none can be had it is skipped with one loud line, except under CI.
// PARLEY_TEST_SOAK=1 (`test:soak`) runs only the files with long soaks, at full size (test/support/soak.ts).
const SOAK_FILES = ["test/crash-*.test.ts", "test/fuzz.test.ts", "test/replicas.test.ts"]

/**
 * Files run at a time: three (PARLEY_TEST_WORKERS sets it). A pass computes less than it waits: on one
 * worker the SQLite pass's 103 files spent 417 s of CPU (92 in the workers, 325 in the servers, CLI
 * processes and Chromium they started; test/support/file-cpu.ts), against 526 s of wall time for the pass
 * at two files at a time on two cores — under half the CPU the machine had. Four to six at a time ended two
 * fresh-clone runs (2026-11-27) with vitest 3.2's "Unhandled Rejection: Terminating worker thread" after
 * every test had passed: its pool terminates idle workers above `minWorkers`, which fails while isolate is
 * off (vitest-dev/vitest#8133, #8564); so `minWorkers` equals `maxWorkers` and no worker is ever idle-
 * terminated. Memory bounds it too (a worker holds about 450 MB, each of its servers 230), and the Postgres
 * pass's connections (a file with three replicas peaks at about 30, against a default PostgreSQL's 100).
 */
const workers = (): number => {
  // `vitest run FILE --maxWorkers=1` (one file while working on it) sets the pool's maximum; the minimum
  // below must not exceed it (tinypool refuses the pool otherwise).
  const flag = process.argv.findIndex((arg) => /^--max-?workers(=|$)/i.test(arg))
  const fromFlag = flag === -1 ? NaN : Number(process.argv[flag]?.includes("=") ? process.argv[flag]?.split("=")[1] : process.argv[flag + 1])
  if (Number.isInteger(fromFlag) && fromFlag > 0) return fromFlag
  const configured = Number(process.env["PARLEY_TEST_WORKERS"])
  return Number.isInteger(configured) && configured > 0 ? configured : 3
}

export default defineConfig(async () => {
  // Each file's CPU and that of the processes it starts (test/support/file-cpu.ts), for the reporter below;
  // set before the workers start, which inherit it.
  if (process.env[FILE_CPU_ENV] === undefined) {
    process.env[FILE_CPU_ENV] = join(mkdtempSync(join(tmpdir(), "parley-test-cpu-")), "files")
  }
  const postgresPass = process.env["PARLEY_TEST_STORE"] === "postgres"
  const soak = process.env["PARLEY_TEST_SOAK"] === "1"
  const plan = postgresPass ? await planPostgres() : undefined
  const skipped = plan?.kind === "none" && !isCi()
  if (plan?.kind === "none" && skipped) announceAtEnd(unavailableNotice(plan.reason, "skipped"))
  return {
    test: {
      include: soak ? SOAK_FILES : ["test/**/*.test.ts"],
      // The ten slowest files of the pass, printed at the end (or by the root `pnpm test`).
      reporters: ["default", "./test/support/slowest-files.ts"],
      // Files known to wait long start first on a fresh clone (test/support/long-waits-first.ts).
      sequence: { sequencer: LongWaitsFirst },
      exclude: skipped ? ["**/*"] : configDefaults.exclude,
      passWithNoTests: skipped,
      setupFiles: ["test/support/file-cpu-setup.ts"],
      globalSetup: [
        // How long the pass took, for the root `pnpm test`'s summary.
        "test/support/pass-time-setup.ts",
        // Server processes start from the bundle, rebuilt first if the sources changed.
        ...(skipped ? [] : ["test/support/bundle-setup.ts"]),
        ...(postgresPass && !skipped ? ["test/support/postgres-setup.ts"] : [])
      ],
      // Black-box tests start real server processes; give them room on 2 cores.
      testTimeout: 60_000,
      hookTimeout: 60_000,
      // Several files at a time (see workers above); each file has servers and databases of its own.
      fileParallelism: true,
      maxWorkers: workers(),
      // Never fewer: an idle worker terminated by the pool fails the run with isolate off (see workers above).
      minWorkers: workers(),
      // Each worker loads the server's modules (for the in-process admin CLI, test/support/admin.ts)
      // once, not once per file; no test changes global state another file could see.
      isolate: false
    }
  }
})
