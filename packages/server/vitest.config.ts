import { availableParallelism } from "node:os"
import { configDefaults, defineConfig } from "vitest/config"
import { announceAtEnd, isCi, planPostgres, unavailableNotice } from "./test/support/postgres.js"
import LongWaitsFirst from "./test/support/long-waits-first.js"

// The server suite runs twice: on SQLite, then with PARLEY_TEST_STORE=postgres.
// The Postgres pass needs a PostgreSQL (found or started by test/support/postgres-setup.ts);
// where none can be had it is skipped with one loud line, except under CI.
// PARLEY_TEST_SOAK=1 (`test:soak`) runs only the files with long soaks, at full size (test/support/soak.ts).
const SOAK_FILES = ["test/crash-*.test.ts", "test/fuzz.test.ts", "test/replicas.test.ts"]

/**
 * Files run at a time: twice the cores, 4 to 6 (PARLEY_TEST_WORKERS sets it). A black-box file is a chain
 * of waits — on its server, a simulated carrier's steps, a lease to lapse, a scheduled text's 30 seconds,
 * a provider's Retry-After — with at most one of its processes on a core at a time, so with two files on
 * two cores a core stood idle whenever both waited; the explicit waits alone add up to minutes a pass
 * (docs/benchmarks.md). The cap bounds memory (a worker holds about 450 MB, each of its servers 230) and
 * the Postgres pass's connections (a file with three replicas peaks at about 30, one with a single server
 * at about 5, against a default PostgreSQL's 100).
 */
const workers = (): number => {
  const configured = Number(process.env["PARLEY_TEST_WORKERS"])
  if (Number.isInteger(configured) && configured > 0) return configured
  return Math.min(6, Math.max(4, 2 * availableParallelism()))
}

export default defineConfig(async () => {
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
