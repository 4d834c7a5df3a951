/**
 * Vitest global setup of both passes: reports how long this pass took to the
 * root `pnpm test` (scripts/test.mjs), which prints it under the package's own
 * time: one `label<TAB>milliseconds` line in the file named by PARLEY_TEST_TIMES.
 * Installed first, so its teardown runs last and the time covers the others'.
 */
import { appendFileSync } from "node:fs"
import { passName } from "./soak.js"

export default function setup(): () => void {
  const started = Date.now()
  return () => {
    const file = process.env["PARLEY_TEST_TIMES"]
    if (file === undefined || file === "") return
    appendFileSync(file, `${passName()}\t${Date.now() - started}\n`)
  }
}
