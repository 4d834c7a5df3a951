/**
 * Where the Postgres pass of the server tests gets its PostgreSQL, so that
 * `pnpm test` needs no server running beforehand:
 * 1. the server at PARLEY_TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/test), when it answers;
 * 2. otherwise a throw-away cluster started from the machine's PostgreSQL binaries
 *    (`initdb` and `pg_ctl` on the PATH or in the usual package folders), in a
 *    temporary directory on a free 127.0.0.1 port, stopped and removed afterwards;
 * 3. otherwise none: the pass is skipped with one loud line, or fails under CI.
 *
 * PARLEY_TEST_PG_BIN_DIRS (directories separated like PATH) replaces the binary
 * search; set it empty to search nowhere (how the tests hide the binaries).
 * Used by vitest.config.ts (the plan) and postgres-setup.ts (starting and stopping).
 */
import { execFile, execFileSync } from "node:child_process"
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"

const run = promisify(execFile)

export const DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/test"

export const configuredUrl = (env: NodeJS.ProcessEnv = process.env): string =>
  env["PARLEY_TEST_PG_URL"] || DEFAULT_PG_URL

/** CI providers set CI=true; anything but empty, 0 or false counts. */
export const isCi = (env: NodeJS.ProcessEnv = process.env): boolean => {
  const value = (env["CI"] ?? "").trim().toLowerCase()
  return value !== "" && value !== "0" && value !== "false"
}

/** The URL without its password, for messages. */
export const shown = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(not a URL)"
  }
}

/** Undefined when a client can connect and run a query; otherwise why not. */
export const whyNotAnswering = async (url: string): Promise<string | undefined> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  // A refused connection also surfaces as an 'error' event; without a listener it would crash the process.
  client.on("error", () => undefined)
  try {
    await client.connect()
    await client.query("SELECT 1")
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  } finally {
    await client.end().catch(() => undefined)
  }
}

const versionOf = (dir: string): number => Number(/(?:postgresql[/@-]?|pgsql-)(\d+)/i.exec(dir)?.[1] ?? 0)

/** Folders under `parent` whose name starts with `prefix`, newest version first. */
const versioned = (parent: string, prefix: string, suffix: string): Array<string> => {
  try {
    return readdirSync(parent)
      .filter((name) => name.startsWith(prefix))
      .map((name) => join(parent, name, suffix))
      .sort((a, b) => versionOf(b) - versionOf(a))
  } catch {
    return []
  }
}

/** Where PostgreSQL's server binaries are looked for, in order. */
export const binarySearchPath = (env: NodeJS.ProcessEnv = process.env): ReadonlyArray<string> => {
  const override = env["PARLEY_TEST_PG_BIN_DIRS"]
  if (override !== undefined) return override.split(delimiter).filter((dir) => dir !== "")
  return [
    ...(env["PATH"] ?? "").split(delimiter).filter((dir) => dir !== ""),
    // Debian and Ubuntu keep initdb off the PATH; RHEL, Homebrew and source builds have their own folders.
    ...versioned("/usr/lib/postgresql", "", "bin"),
    ...versioned("/usr", "pgsql-", "bin"),
    ...versioned("/opt/homebrew/opt", "postgresql", "bin"),
    ...versioned("/usr/local/opt", "postgresql", "bin"),
    "/usr/local/pgsql/bin"
  ]
}

/** The first folder holding both initdb and pg_ctl. */
export const findBinaries = (env: NodeJS.ProcessEnv = process.env): string | undefined =>
  binarySearchPath(env).find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")))

/**
 * initdb refuses to run as root. As root, the cluster is created and run by an
 * unprivileged account (postgres if the machine has one, else nobody).
 */
interface RunAs {
  readonly user: string
  readonly uid: number
  readonly gid: number
}

const accountOf = (user: string): RunAs | undefined => {
  try {
    const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim())
    const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim())
    return Number.isInteger(uid) && uid !== 0 ? { user, uid, gid } : undefined
  } catch {
    return undefined
  }
}

const unprivilegedAccount = (): RunAs | undefined => accountOf("postgres") ?? accountOf("nobody")

const isRoot = (): boolean => typeof process.getuid === "function" && process.getuid() === 0

const shellQuote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`

const commandFor = (account: RunAs | undefined, file: string, args: ReadonlyArray<string>): [string, Array<string>] => {
  if (account === undefined) return [file, [...args]]
  if (existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")) {
    return ["runuser", ["-u", account.user, "--", file, ...args]]
  }
  return ["su", ["-s", "/bin/sh", account.user, "-c", [file, ...args].map(shellQuote).join(" ")]]
}

export type PostgresPlan =
  | { readonly kind: "server"; readonly url: string }
  | { readonly kind: "throwaway"; readonly binDir: string; readonly unanswered: string }
  | { readonly kind: "none"; readonly reason: string }

/** What the Postgres pass will run on, decided without starting anything. */
export const planPostgres = async (env: NodeJS.ProcessEnv = process.env): Promise<PostgresPlan> => {
  const url = configuredUrl(env)
  const why = await whyNotAnswering(url)
  if (why === undefined) return { kind: "server", url }
  const unanswered = `nothing answered at PARLEY_TEST_PG_URL=${shown(url)} (${why})`
  const binDir = findBinaries(env)
  if (binDir === undefined) {
    const searched = env["PARLEY_TEST_PG_BIN_DIRS"] !== undefined
      ? `PARLEY_TEST_PG_BIN_DIRS=${JSON.stringify(env["PARLEY_TEST_PG_BIN_DIRS"])}`
      : "the PATH, /usr/lib/postgresql/*/bin, /usr/pgsql-*/bin, Homebrew's opt folders, /usr/local/pgsql/bin"
    return { kind: "none", reason: `${unanswered}, and no initdb/pg_ctl was found (searched ${searched})` }
  }
  if (isRoot() && unprivilegedAccount() === undefined) {
    return { kind: "none", reason: `${unanswered}; PostgreSQL's binaries are in ${binDir}, but initdb refuses to run as root and there is no postgres or nobody account to run it as` }
  }
  return { kind: "throwaway", binDir, unanswered }
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export interface ThrowawayPostgres {
  readonly url: string
  readonly binDir: string
  readonly dir: string
  /** Stops the cluster and removes its directory; safe to call twice (synchronous, so it can run on exit). */
  readonly stop: () => void
}

/** A fresh cluster in a temporary directory on a free 127.0.0.1 port, trusting local connections. */
export const startThrowawayPostgres = async (binDir: string): Promise<ThrowawayPostgres> => {
  const account = isRoot() ? unprivilegedAccount() : undefined
  const dir = mkdtempSync(join(tmpdir(), "parley-pg-"))
  if (account !== undefined) chownSync(dir, account.uid, account.gid)
  const data = join(dir, "data")
  const port = await freePort()
  const initdb = commandFor(account, join(binDir, "initdb"), [
    "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"
  ])
  // The socket goes in the cluster's own directory: the packaged default (/var/run/postgresql) may not be writable.
  // Durability settings are off: the cluster is thrown away after the run.
  const serverOptions = `-p ${port} -k ${shellQuote(dir)} -c listen_addresses=127.0.0.1 -c max_connections=200 ` +
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  const pgCtl = (args: ReadonlyArray<string>) => commandFor(account, join(binDir, "pg_ctl"), ["-D", data, ...args])
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    process.removeListener("exit", stop)
    try {
      const [file, args] = pgCtl(["-m", "fast", "-w", "stop"])
      execFileSync(file, args, { stdio: "ignore" })
    } catch {
      // Not running (start failed, or already stopped): only the directory is left to remove.
    }
    rmSync(dir, { recursive: true, force: true })
  }
  // Also on an interrupted run: a cluster left running would hold its port and directory.
  process.once("exit", stop)
  try {
    await run(initdb[0], initdb[1])
    const start = pgCtl(["-l", join(dir, "postgres.log"), "-w", "-t", "60", "-o", serverOptions, "start"])
    await run(start[0], start[1])
  } catch (error) {
    const output = error instanceof Error && "stderr" in error ? String(error.stderr).trim() : String(error)
    stop()
    throw new Error(`could not start a throw-away PostgreSQL from ${binDir}: ${output.split("\n").slice(-3).join(" ")}`)
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, binDir, dir, stop }
}

/** The one loud line for a Postgres pass that could not run: what, why, and how to get it. */
export const unavailableNotice = (reason: string, outcome: "skipped" | "failed"): string =>
  (outcome === "skipped"
    ? "!! SKIPPED: the Postgres pass of the server tests"
    : "!! FAILED (CI=true, where a skipped pass fails the run): the Postgres pass of the server tests") +
  ` (@parley/server, PARLEY_TEST_STORE=postgres) could not run: ${reason}. ` +
  "To run it, start PostgreSQL and point PARLEY_TEST_PG_URL at it, or install PostgreSQL's server binaries " +
  "(e.g. apt-get install postgresql) so the tests start a throw-away one themselves."

/**
 * Says `line` once, at the end of the run: into the file the root `pnpm test`
 * collects notices in (PARLEY_TEST_NOTICES), or else on stderr as this process exits.
 */
export const announceAtEnd = (line: string, env: NodeJS.ProcessEnv = process.env): void => {
  const file = env["PARLEY_TEST_NOTICES"]
  if (file !== undefined && file !== "") {
    appendFileSync(file, `${line}\n`)
    return
  }
  process.once("exit", () => process.stderr.write(`\n${line}\n`))
}
