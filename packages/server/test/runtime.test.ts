/**
 * The runtime: the suite runs on the Node 24 the workspace pins (the root devDependency `node`), the
 * SQLite driver lives through a process's teardown on it, and an older Node starting bin/parley.mjs
 * gets one plain line instead of a native-module stack trace.
 */
import { execFile, execFileSync } from "node:child_process"
import { accessSync, constants, readFileSync } from "node:fs"
import { delimiter, join } from "node:path"
import { describe, expect, it } from "vitest"
import { testStore } from "./support/store.js"

const ROOT = join(import.meta.dirname, "..", "..", "..")
const BIN = join(import.meta.dirname, "..", "bin", "parley.mjs")

const run = (node: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) => {
    execFile(node, args, { env: { ...process.env, LOG_LEVEL: "warn" } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, signal: error?.signal ?? null, stdout, stderr })
    })
  })

/** A `node` on PATH older than 24 (the machine's own, behind the pinned one pnpm puts first), if there is one. */
const olderNode = (): string | undefined => {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    const candidate = join(dir, "node")
    try {
      accessSync(candidate, constants.X_OK)
      const version = execFileSync(candidate, ["--version"], { encoding: "utf8" }).trim()
      if (Number(/^v(\d+)/.exec(version)?.[1] ?? 0) < 24) return candidate
    } catch {
      // Not there, or not a Node.
    }
  }
  return undefined
}

// The same on both stores: checked in the SQLite pass only.
describe.skipIf(testStore === "postgres")("the runtime", () => {
  it("is the Node the workspace pins", () => {
    const manifest: { devDependencies: Record<string, string> } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
    expect(process.version).toBe(`v${manifest.devDependencies["node"]}`)
  })

  it("`parley --help` exits 0 (better-sqlite3 12 built for Node >= 24.19 aborted in a Statement destructor at exit)", async () => {
    const result = await run(process.execPath, [BIN, "--help"])
    expect(result.stderr).not.toMatch(/Assertion failed|RemoveEnvironmentCleanupHook/)
    expect(result.signal).toBeNull()
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain("parley")
  })

  const older = olderNode()
  it.skipIf(older === undefined)(`bin/parley.mjs on an older Node (${older ?? "none on PATH"}) says it needs Node 24, in one line`, async () => {
    const result = await run(older!, [BIN, "orgs", "list"])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr.trim().split("\n")).toHaveLength(1)
    expect(result.stderr).toMatch(/needs Node 24 or newer .*`pnpm parley …` or `pnpm start`/)
    expect(result.stderr).not.toMatch(/NODE_MODULE_VERSION|\n\s+at /)
  })
})
