import { configDefaults, defineConfig } from "vitest/config"
import { announceAtEnd, isCi, planPostgres, unavailableNotice } from "./test/support/postgres.js"

// The server suite runs twice: on SQLite, then with PARLEY_TEST_STORE=postgres.
// The Postgres pass needs a PostgreSQL (found or started by test/support/postgres-setup.ts);
// where none can be had it is skipped with one loud line, except under CI.
// PARLEY_TEST_SOAK=1 (`test:soak`) runs only the files with long soaks, at full size (test/support/soak.ts).
const SOAK_FILES = ["test/crash-*.test.ts", "test/fuzz.test.ts", "test/replicas.test.ts"]

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
      // Two files at a time: much of a black-box test is waiting (a scheduled text's 30 seconds, a
      // lease lapsing, a provider's Retry-After), and each file has servers and databases of its own.
      fileParallelism: true,
      maxWorkers: 2,
      minWorkers: 1,
      // Each worker loads the server's modules (for the in-process admin CLI, test/support/admin.ts)
      // once, not once per file; no test changes global state another file could see.
      isolate: false
    }
  }
})
