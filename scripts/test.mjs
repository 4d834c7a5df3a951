/**
 * `pnpm test`: every package's tests, one package at a time, then the notices
 * suites leave for the end of the run (a Postgres pass skipped for want of a
 * PostgreSQL), so that they are the last thing on the screen rather than lost
 * in the middle of the output. Suites append one line each to the file named
 * by PARLEY_TEST_NOTICES.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "parley-test-notices-"))
const notices = join(dir, "notices")
const run = spawnSync("pnpm", ["-r", "--workspace-concurrency=1", "test"], {
  stdio: "inherit",
  env: { ...process.env, PARLEY_TEST_NOTICES: notices }
})
let said = ""
try {
  said = readFileSync(notices, "utf8").trim()
} catch {
  // No suite left a notice.
}
rmSync(dir, { recursive: true, force: true })
if (said !== "") process.stderr.write(`\n${said}\n`)
if (run.error !== undefined) process.stderr.write(`could not run pnpm: ${run.error.message}\n`)
process.exit(run.status ?? 1)
