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
 * Files run at a time: two (PARLEY_TEST_WORKERS sets it). Four to six were tried (2026-11-28): on two cores the
 * SQLite pass took 328 s against 343 s, and twice in two fresh-clone runs vitest 3.2's pool ended the pass with
 * "Unhandled Rejection: Terminating worker thread" (its idle workers above minWorkers terminated while
 * isolate is off; vitest-dev/vitest#8133), failing a pass whose tests had all passed. Memory bounds it too (a
 * worker holds about 450 MB, each of its servers 230), and the Postgres pass's connections (a file with
 * three replicas peaks at about 30, against a default PostgreSQL's 100).
 */
const workers = (): number => {
  const configured = Number(process.env["PARLEY_TEST_WORKERS"])
  return Number.isInteger(configured) && configured > 0 ? configured : 2
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
      minWorkers: 1,
      // Each worker loads the server's modules (for the in-process admin CLI, test/support/admin.ts)
      // once, not once per file; no test changes global state another file could see.
      isolate: false
    }
  }
})
