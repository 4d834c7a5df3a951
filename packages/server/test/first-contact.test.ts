/**
 * What a newcomer meets first: `pnpm start` (serve --demo) prints the live
 * key first, both keys labelled, and a curl that uses the live key; the
 * README's curl tour (examples/curl/quickstart.sh) runs on a fresh server,
 * chaining the ids it is given, and stops at the first unexpected status.
 */
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, freePort, TestServer } from "./support/server.js"
import { testStore } from "./support/store.js"

const BIN = join(import.meta.dirname, "..", "bin", "parley.mjs")
const QUICKSTART = join(import.meta.dirname, "..", "..", "..", "examples", "curl", "quickstart.sh")

// `serve --demo` is the same on both stores; its output is checked in the SQLite pass only.
describe.skipIf(testStore === "postgres")("pnpm start (serve --demo)", () => {
  it("prints the live key first, both labelled, and a curl with the live key", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "parley-start-"))
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    const child = spawn(process.execPath, [BIN, "serve", "--demo"], {
      env: { ...inherited, PORT: String(await freePort()), PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    try {
      await until(async () => (stdout.includes("Docs:") ? true : undefined), { timeoutMs: 30_000, what: "the demo summary" })
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.once("close", resolve))
      rmSync(dataDir, { recursive: true, force: true })
    }
    const lines = stdout.split("\n")
    const live = lines.findIndex((line) => /^\s*Live key:\s+parley_live_\S+\s+\(acts for real/.test(line))
    const test = lines.findIndex((line) => /^\s*Test key:\s+parley_test_\S+\s+\(simulates/.test(line))
    expect(live, stdout).toBeGreaterThan(0)
    expect(test, stdout).toBeGreaterThan(live)
    const liveKey = /parley_live_\S+/.exec(lines[live] ?? "")?.[0]
    expect(stdout).toContain(`-H "Authorization: Bearer ${liveKey}"`)
  })

  it("prints no key when the server cannot listen (port in use): keys only once it listens", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "parley-start-"))
    const taken = createServer()
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, () => {
        const address = taken.address()
        resolve(typeof address === "object" && address !== null ? address.port : 0)
      })
    )
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    try {
      const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, "serve", "--demo"], {
          env: { ...inherited, PORT: String(port), PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "warn" },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
        child.once("close", (code) => resolve({ code, output }))
      })
      expect(result.code, result.output).not.toBe(0)
      expect(result.output).toMatch(/EADDRINUSE/)
      expect(result.output).not.toMatch(/parley_(live|test)_/)
    } finally {
      taken.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

const runQuickstart = (env: Record<string, string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    // The script's `node -e` helpers run on the Node running the tests (the pinned one).
    const PATH = `${dirname(process.execPath)}${delimiter}${process.env["PATH"] ?? ""}`
    execFile("bash", [QUICKSTART], { env: { ...process.env, PATH, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    })
  })

describe("examples/curl/quickstart.sh", () => {
  let server: TestServer
  let demo: DemoSummary
  beforeAll(async () => {
    server = await TestServer.start()
    // Through the real CLI process, as the README's tour does it.
    demo = await server.cliJson<DemoSummary>(["demo"])
  })
  afterAll(() => server?.dispose())

  it("runs the whole tour with the live key, each step on the ids the previous answers gave", async () => {
    // Actions made before the tour: its ids are not the fixed ones of a fresh database.
    for (const key of ["before-1", "before-2"]) {
      const response = await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": key },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "earlier" })
      })
      expect(response.status).toBe(202)
    }
    const run = await runQuickstart({ PARLEY_URL: server.baseUrl, PARLEY_API_KEY: demo.keys.live })
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`"status":"cancelled"`)
    expect(run.stdout).toContain("== conversations")
  })

  it("stops at the first unexpected status, saying which call and what it answered", async () => {
    const reader = await server.cliJson<{ readonly key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", "reader", "--scopes", "resources:read,messages:read", "--mode", "live"
    ])
    const run = await runQuickstart({ PARLEY_URL: server.baseUrl, PARLEY_API_KEY: reader.key })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("!! POST /api/v1/messages answered 403, expected 202")
    expect(run.stdout).not.toContain("== read it back")
  })

  it("stops on a wrong key at the first call", async () => {
    const run = await runQuickstart({ PARLEY_URL: server.baseUrl, PARLEY_API_KEY: "parley_live_not_a_key" })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("!! GET /api/v1/numbers answered 401, expected 200")
  })
})
