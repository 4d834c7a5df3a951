/**
 * Vitest global setup of both passes: reports how long this pass took to the
 * root `pnpm test` (scripts/test.mjs), which prints it under the package's own
 * time: one `label<TAB>milliseconds` line in the file named by PARLEY_TEST_TIMES.
 * Installed first, so its teardown runs last and the time covers the others'.
 */
import { appendFileSync } from "node:fs"

export default function setup(): () => void {
  const started = Date.now()
  return () => {
    const file = process.env["PARLEY_TEST_TIMES"]
    if (file === undefined || file === "") return
    const pass = process.env["PARLEY_TEST_STORE"] === "postgres" ? "Postgres pass" : "SQLite pass"
    appendFileSync(file, `${pass}\t${Date.now() - started}\n`)
  }
}
