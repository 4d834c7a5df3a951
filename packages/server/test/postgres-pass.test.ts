/**
 * The Postgres pass needs no PostgreSQL running beforehand: when nothing
 * answers at PARLEY_TEST_PG_URL it starts a throw-away cluster from the
 * machine's binaries, and where there are none it is skipped with one loud
 * line (or fails under CI). "Nothing answers" is a closed port here, and
 * "no binaries" is an empty search path: the machine's own cluster is never touched.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { findBinaries, planPostgres, startThrowawayPostgres, type ThrowawayPostgres, whyNotAnswering } from "./support/postgres.js"
import { testStore } from "./support/store.js"

/** A 127.0.0.1 URL on a port nothing listens on. */
const closedUrl = async (): Promise<string> => {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 1))
    })
  })
  return `postgres://postgres@127.0.0.1:${port}/test`
}

/** The environment of a run on this machine with nothing answering, minus whatever the outer run set. */
const bareEnv = (url: string, extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["CI", "PARLEY_TEST_NOTICES", "PARLEY_TEST_TIMES", "PARLEY_TEST_SLOWEST", "PARLEY_TEST_SOAK", "PARLEY_TEST_PG_BIN_DIRS", "VITEST", "VITEST_POOL_ID", "VITEST_WORKER_ID"]) {
    delete env[name]
  }
  return { ...env, PARLEY_TEST_STORE: "postgres", PARLEY_TEST_PG_URL: url, ...extra }
}

const vitestCli = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs")

/** Runs this package's vitest as `pnpm test` would for the Postgres pass. */
const vitestRun = (env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number | null; output: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [vitestCli, "run"], {
      cwd: join(import.meta.dirname, ".."),
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      stderr += chunk.toString()
    })
    child.on("close", (code) => resolve({ code, output, stderr }))
  })

const hidden = { PARLEY_TEST_PG_BIN_DIRS: "" }

describe.skipIf(testStore === "postgres")("where the Postgres pass gets its PostgreSQL", () => {
  it("plans none when nothing answers and no binaries are found, saying both", async () => {
    const url = await closedUrl()
    const plan = await planPostgres(bareEnv(url, hidden))
    expect(plan.kind).toBe("none")
    if (plan.kind === "none") {
      expect(plan.reason).toContain(url)
      expect(plan.reason).toContain("ECONNREFUSED")
      expect(plan.reason).toContain("no initdb/pg_ctl")
    }
  })

  describe.skipIf(findBinaries() === undefined)("with PostgreSQL's binaries on the machine", () => {
    let cluster: ThrowawayPostgres | undefined
    afterAll(() => cluster?.stop())

    it("starts a throw-away cluster when nothing answers, and stop removes it", async () => {
      // Where the packaged binaries are off the PATH (Debian's /usr/lib/postgresql/<version>/bin), use those.
      const offPath = findBinaries({ PATH: "" }) !== undefined
      const plan = await planPostgres(bareEnv(await closedUrl(), offPath ? { PATH: "" } : {}))
      expect(plan.kind).toBe("throwaway")
      if (plan.kind !== "throwaway") return
      if (offPath) expect(plan.binDir).toBe(findBinaries({ PATH: "" }))

      cluster = await startThrowawayPostgres(plan.binDir)
      expect(cluster.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
      expect(await whyNotAnswering(cluster.url)).toBeUndefined()
      // What the tests do with it: create a database and work in it.
      const admin = new pg.Client({ connectionString: cluster.url })
      await admin.connect()
      await admin.query("CREATE DATABASE parley_throwaway_check")
      await admin.end()
      const inside = new pg.Client({ connectionString: cluster.url.replace(/\/postgres$/, "/parley_throwaway_check") })
      await inside.connect()
      await inside.query("CREATE TABLE t (n int)")
      await inside.query("INSERT INTO t VALUES (7)")
      expect((await inside.query<{ n: number }>("SELECT n FROM t")).rows).toEqual([{ n: 7 }])
      await inside.end()

      cluster.stop()
      expect(existsSync(cluster.dir)).toBe(false)
      expect(await whyNotAnswering(cluster.url)).toContain("ECONNREFUSED")
    })
  })

  it("skips the pass with one loud line at the end when there is no PostgreSQL at all", async () => {
    const run = await vitestRun(bareEnv(await closedUrl(), hidden))
    expect(run.code).toBe(0)
    const loud = run.output.split("\n").filter((line) => line.startsWith("!! SKIPPED"))
    expect(loud).toHaveLength(1)
    expect(loud[0]).toContain("PARLEY_TEST_PG_URL")
    expect(loud[0]).toContain("apt-get install postgresql")
    // The last thing the run says.
    expect(run.stderr.trim().split("\n").at(-1)).toBe(loud[0])
  })

  it("hands the line to the root run's notices file instead, when there is one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-notices-"))
    try {
      const notices = join(dir, "notices")
      const run = await vitestRun(bareEnv(await closedUrl(), { ...hidden, PARLEY_TEST_NOTICES: notices }))
      expect(run.code).toBe(0)
      expect(run.output).not.toContain("!! SKIPPED")
      expect(readFileSync(notices, "utf8")).toMatch(/^!! SKIPPED: the Postgres pass .*\n$/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("fails the run under CI=true instead of skipping", async () => {
    const run = await vitestRun(bareEnv(await closedUrl(), { ...hidden, CI: "true" }))
    expect(run.code).not.toBe(0)
    expect(run.output).toContain("!! FAILED (CI=true")
    expect(run.output).not.toContain("!! SKIPPED")
  })
})
