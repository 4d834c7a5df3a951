/**
 * Vitest global setup of both passes: the server processes the tests start
 * run the bundle (dist/parley.mjs), not the TypeScript sources. bin/parley.mjs
 * runs the bundle only while it is newer than its sources, and falls back to
 * compiling every module through tsx at each start (2–4 s instead of under
 * one, for each of the suite's server and CLI processes). After any edit of
 * the sources that fallback is what a test run would get, so the bundle is
 * rebuilt here, once per run, when it is older than what it is built from.
 * A build that fails is not fatal: the processes then run the sources, as before.
 */
import { execFile } from "node:child_process"
import { readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const SERVER = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const ROOT = join(SERVER, "..", "..")

const modifiedMs = (path: string): number => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return Number.NEGATIVE_INFINITY
  }
}

const newestIn = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    return Math.max(newest, entry.isDirectory() ? newestIn(path) : modifiedMs(path))
  }, modifiedMs(dir))

/** The same inputs bin/parley.mjs compares the bundle with. */
const newestInput = (): number =>
  Math.max(
    newestIn(join(SERVER, "src")),
    newestIn(join(ROOT, "packages", "core", "src")),
    modifiedMs(join(SERVER, "package.json")),
    modifiedMs(join(SERVER, "tsup.config.ts")),
    modifiedMs(join(ROOT, "pnpm-lock.yaml"))
  )

export default async function setup(): Promise<void> {
  if (modifiedMs(join(SERVER, "dist", "parley.mjs")) > newestInput()) return
  const started = Date.now()
  try {
    // tsup's own entry on this Node (the pinned one), not the .bin shim, which runs whatever `node` PATH has.
    await promisify(execFile)(process.execPath, [join(ROOT, "node_modules", "tsup", "dist", "cli-default.js"), "--silent"], { cwd: SERVER })
    console.log(`Built the server bundle (dist/parley.mjs) for this run's server processes in ${((Date.now() - started) / 1000).toFixed(1)} s.`)
  } catch (error) {
    const said = error instanceof Error && "stderr" in error ? String(error.stderr).trim().split("\n").slice(-3).join(" ") : String(error)
    console.log(`The server bundle could not be built (${said}); server processes run the TypeScript sources through tsx.`)
  }
}
