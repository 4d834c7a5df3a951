/**
 * Black-box test support: a real Parley server process on a fresh store (a
 * temporary SQLite data directory, or a fresh Postgres database when
 * PARLEY_TEST_STORE=postgres; see store.ts) and a free port, driven over
 * HTTP, and the admin CLI against the same store: `cli` starts the real
 * process (for tests of the CLI itself), `admin` runs the same commands in the
 * test process (for set-up; see admin.ts).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { type CliResult, runAdmin } from "./admin.js"
import { createTestDatabase, type TestDatabase } from "./store.js"

export type { CliResult } from "./admin.js"

const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "parley.mjs")

/**
 * Node's on-disk compile cache for the server and CLI processes the tests start (hundreds a run): each
 * reuses the bytecode of the 5 MB bundle instead of compiling it again (about a seventh of a start's CPU).
 * Node checks every entry against the source's hash, so an edited bundle is compiled afresh.
 */
const COMPILE_CACHE = join(tmpdir(), "parley-test-compile-cache")

export interface DemoSummary {
  readonly orgId: string
  readonly numbers: ReadonlyArray<{ readonly sid: string; readonly phoneNumber: string; readonly whatsApp: boolean }>
  readonly bots: ReadonlyArray<{ readonly id: string; readonly name: string; readonly active: boolean }>
  readonly templates: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly records: ReadonlyArray<{ readonly module: string; readonly id: string; readonly name: string }>
  readonly keys: { readonly test: string; readonly live: string }
}

/** A port nothing listens on now, on 127.0.0.1 (for servers the tests start). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export class TestServer {
  private child: ChildProcess | undefined
  private stopping = false
  output = ""

  private constructor(
    /** The store this server runs on; tests may look inside it. */
    readonly db: TestDatabase,
    /** Whether dispose() removes the store (false when several servers share it). */
    private readonly ownsDatabase: boolean,
    readonly port: number,
    readonly env: Readonly<Record<string, string>>
  ) {}

  get dataDir(): string {
    return this.db.dataDir
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /**
   * Starts a server on a fresh store (or on the given one, shared with other
   * servers: replicas) and waits until it answers /healthz.
   */
  static async start(options: { readonly env?: Record<string, string>; readonly database?: TestDatabase } = {}) {
    const db = options.database ?? await createTestDatabase()
    const server = new TestServer(db, options.database === undefined, await freePort(), options.env ?? {})
    try {
      await server.boot()
    } catch (error) {
      if (server.ownsDatabase) await db.drop()
      throw error
    }
    return server
  }

  private processEnv(): NodeJS.ProcessEnv {
    // A DATABASE_URL from the developer's shell must not turn a SQLite run into a Postgres one.
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    return {
      NODE_COMPILE_CACHE: COMPILE_CACHE,
      ...inherited,
      LOG_LEVEL: "warn",
      // The test's webhook receivers listen on loopback, which deliveries reach only when the operator lists it.
      PARLEY_WEBHOOK_ALLOWED_NETWORKS: "127.0.0.0/8,::1/128",
      // The same for the providers' fakes: connections to providers' APIs reach loopback only when listed.
      PARLEY_PROVIDER_ALLOWED_NETWORKS: "127.0.0.0/8,::1/128",
      // The store's settings first: a test may override one (its own PARLEY_SECRET_KEY, say).
      ...this.db.env,
      ...this.env,
      PORT: String(this.port),
      PARLEY_DATA_DIR: this.dataDir
    }
  }

  private async boot(): Promise<void> {
    const child = spawn(process.execPath, [BIN, "serve"], { env: this.processEnv(), stdio: ["ignore", "pipe", "pipe"] })
    this.child = child
    child.stdout?.on("data", (chunk: Buffer) => (this.output += chunk.toString()))
    child.stderr?.on("data", (chunk: Buffer) => (this.output += chunk.toString()))
    // A server that dies while the tests still use it says how, instead of leaving only ECONNREFUSED.
    // (An exit during start-up is reported by the error below.)
    let booted = false
    child.once("exit", (code, signal) => {
      if (this.stopping || !booted) return
      process.stderr.write(
        `\nparley server on port ${this.port} exited before the test stopped it (exit code ${code}, signal ${signal ?? "none"}` +
          `${code === 0 ? "; 0 is a graceful stop: something sent it SIGTERM or SIGINT" : ""}); its last output:\n` +
          `${this.output.split("\n").slice(-60).join("\n")}\n`
      )
    })
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`server exited with ${child.exitCode ?? child.signalCode}: ${this.output}`)
      }
      try {
        const response = await fetch(`${this.baseUrl}/healthz`)
        if (response.ok) {
          booted = true
          return
        }
      } catch {
        // not listening yet
      }
      // Asked often: a test (a crash round) may start a server many times, and a start is waited for.
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    // A server that missed the deadline is not left running: on a loaded machine, servers left behind by
    // one file's failed starts would load it further and fail the next file's starts too.
    await this.stop("SIGKILL")
    throw new Error(`server did not start: ${this.output}`)
  }

  /** Runs `parley <args>` against this server's data directory, with `input` on its standard input and `env` added. */
  cli(args: ReadonlyArray<string>, options: { readonly input?: string; readonly env?: Readonly<Record<string, string>> } = {}): Promise<CliResult> {
    return new Promise((resolve) => {
      const child = execFile(process.execPath, [BIN, ...args], { env: { ...this.processEnv(), ...options.env } }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1
        resolve({ code, stdout, stderr })
      })
      child.stdin?.end(options.input ?? "")
    })
  }

  async cliJson<A>(args: ReadonlyArray<string>): Promise<A> {
    const result = await this.cli([...args, "--json"])
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed: ${result.stderr}`)
    return JSON.parse(result.stdout) as A
  }

  /** Runs `parley <args>` against this server's store in the test process (see admin.ts). */
  admin(args: ReadonlyArray<string>): Promise<CliResult> {
    return runAdmin(this.processEnv(), args)
  }

  /** `admin`, for set-up: a command that fails throws with its exit code and standard error. */
  async adminOk(args: ReadonlyArray<string>): Promise<CliResult> {
    const result = await this.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
    return result
  }

  async adminJson<A>(args: ReadonlyArray<string>): Promise<A> {
    const result = await this.admin([...args, "--json"])
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed: ${result.stderr}`)
    return JSON.parse(result.stdout) as A
  }

  demo(): Promise<DemoSummary> {
    return this.adminJson<DemoSummary>(["demo"])
  }

  fetch(path: string, init: RequestInit & { readonly key?: string } = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (init.key !== undefined) headers.set("authorization", `Bearer ${init.key}`)
    if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json")
    return fetch(`${this.baseUrl}${path}`, { ...init, headers })
  }

  /** Stops the process: SIGTERM for a graceful stop, SIGKILL to simulate a crash. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    this.stopping = true
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill(signal)
    })
  }

  async restart(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    await this.stop(signal)
    this.stopping = false
    await this.boot()
  }

  async dispose(): Promise<void> {
    await this.stop()
    if (this.ownsDatabase) await this.db.drop()
  }
}
