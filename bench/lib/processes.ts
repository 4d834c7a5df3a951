/**
 * Child processes: the real Parley server, the baselines, the load generator,
 * and the RSS sampler that watches whichever server is under load.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process"
import { createWriteStream, readFileSync, type WriteStream } from "node:fs"
import { createServer } from "node:net"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { LoadResult, LoadSpec } from "./types.js"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
export const BENCH = join(ROOT, "bench")
const SERVER_PACKAGE = join(ROOT, "packages", "server")
const PARLEY_BIN = join(SERVER_PACKAGE, "bin", "parley.mjs")

/** The rate limit every benchmarked server runs with (raised through configuration, as any operator could). */
export const BENCH_RATE_LIMIT = 100_000_000
/** Large, so that after the send no further simulated step (Sent → Delivered) competes with the measurement. */
export const BENCH_SIM_STEP_MS = 3_600_000

/** The environment every benchmarked Parley server starts with (run.ts and dispatch.ts alike). */
export const BENCH_SERVER_ENV: Readonly<Record<string, string>> = {
  LOG_LEVEL: "warn",
  PARLEY_RATE_LIMIT_PER_MINUTE: String(BENCH_RATE_LIMIT),
  PARLEY_SIM_STEP_MS: String(BENCH_SIM_STEP_MS)
}

/**
 * The Node flags `pnpm start` runs the server with (the heap cap, see docs/development.md's "Memory"), read from the
 * root package.json so the benchmark measures the server exactly as it is started.
 */
export const START_NODE_FLAGS: ReadonlyArray<string> = (() => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts?: { start?: string } }
  const words = (manifest.scripts?.start ?? "").split(/\s+/)
  const flags: Array<string> = []
  for (const word of words.slice(words.indexOf("node") + 1)) {
    if (!word.startsWith("--")) break
    flags.push(word)
  }
  return flags
})()

/**
 * Builds the server bundle that bin/parley.mjs runs while it is newer than the sources (what `pnpm install`
 * builds), so the run measures the shipped form even right after an edit.
 */
export const buildServer = () =>
  new Promise<void>((resolve, reject) => {
    // tsup's own entry on this Node (the pinned one), not the .bin shim, which runs whatever `node` PATH has.
    execFile(process.execPath, [join(ROOT, "node_modules", "tsup", "dist", "cli-default.js"), "--silent"], { cwd: SERVER_PACKAGE }, (error, _stdout, stderr) =>
      error === null ? resolve() : reject(new Error(`building the server bundle failed: ${stderr}`)))
  })

/** Node flags that load TypeScript (tsx's, inherited from how this process was started). */
const tsNodeArgs = (): Array<string> => {
  const inherited = process.execArgv.filter((arg) => !arg.startsWith("--cpu-prof") && !arg.startsWith("--inspect"))
  return inherited.length > 0 ? inherited : ["--import", "tsx"]
}

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

/** Node flags that make a server write a V8 CPU profile into `dir` when it stops (none without a dir). */
export const cpuProfileArgs = (dir: string | undefined): Array<string> =>
  dir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${dir}`]

/** Waits until the kernel has written every dirty page to disk (`sync`; skipped where there is none). */
export const flushDisk = () => {
  try {
    execFileSync("sync", { stdio: "ignore", timeout: 60_000 })
  } catch {
    // No `sync` on this system: the rows then share the disk's write-back as they come.
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Resident set size of a process in kB, from /proc (null once it is gone). */
export const rssKb = (pid: number): number | null => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
    return match?.[1] === undefined ? null : Number(match[1])
  } catch {
    return null
  }
}

/** CPU time (user + system) a process has used, in seconds, from /proc/<pid>/stat (null once it is gone). */
export const cpuSeconds = (pid: number): number | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may contain spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks / CLOCK_TICKS : null
  } catch {
    return null
  }
}
const CLOCK_TICKS = 100

/** Samples a process's RSS every 200 ms between start() and stop(), and its CPU use over the window. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined
  private peak = 0
  private samples = 0
  private cpuStart: number | null = null
  private startedAt = 0

  constructor(private readonly pid: number, private readonly intervalMs = 200) {}

  start(): this {
    this.sample()
    this.markCpuStart()
    this.timer = setInterval(() => this.sample(), this.intervalMs)
    this.timer.unref()
    return this
  }

  /** Starts the CPU window now (when the load actually begins). */
  markCpuStart() {
    this.cpuStart = cpuSeconds(this.pid)
    this.startedAt = performance.now()
  }

  private sample() {
    const kb = rssKb(this.pid)
    if (kb === null) return
    this.samples++
    if (kb > this.peak) this.peak = kb
  }

  /** Peak RSS in MB over the sampling window, and CPU use in % of one core. */
  stop(): { readonly peakMb: number | null; readonly samples: number; readonly cpuPercent: number | null } {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.sample()
    const cpuEnd = cpuSeconds(this.pid)
    const wall = (performance.now() - this.startedAt) / 1000
    const cpuPercent = this.cpuStart === null || cpuEnd === null || wall <= 0 ? null : ((cpuEnd - this.cpuStart) / wall) * 100
    return { peakMb: this.samples === 0 ? null : this.peak / 1024, samples: this.samples, cpuPercent }
  }
}

const waitForHealth = async (url: string, child: ChildProcess, timeoutMs: number, describe: () => string) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before it answered: ${describe()}`)
    }
    try {
      const response = await fetch(url)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await sleep(50)
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms: ${describe()}`)
}

export interface StopOutcome {
  /** From SIGTERM to exit. */
  readonly ms: number
  /** Whether it had to be killed after not exiting on SIGTERM within the timeout. */
  readonly killed: boolean
}

const stopChild = async (child: ChildProcess, timeoutMs = 10_000): Promise<StopOutcome> => {
  if (child.exitCode !== null || child.signalCode !== null) return { ms: 0, killed: false }
  const started = Date.now()
  let killed = false
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      killed = true
      child.kill("SIGKILL")
    }, timeoutMs)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })
  return { ms: Date.now() - started, killed }
}

export interface ParleyOptions {
  readonly dataDir: string
  readonly env: Readonly<Record<string, string>>
  readonly logFile: string
  /** Another build of the `parley` command (e.g. a saved bundle, to compare before and after); bin/parley.mjs by default. */
  readonly bin?: string
  /** Node flags for the server process, e.g. `--cpu-prof`. */
  readonly nodeArgs?: ReadonlyArray<string>
}

/** A real Parley server (`parley serve`) on a free port. */
export class ParleyServer {
  private tail = ""
  /** Warning and error lines the server logged (and anything on stderr), with their messages. */
  warnings = 0
  readonly messages = new Map<string, number>()
  readonly startedAt = Date.now()
  bootMs = 0
  idleRssMb: number | null = null

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly options: ParleyOptions,
    private readonly log: WriteStream
  ) {
    const onData = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
      const text = chunk.toString()
      this.log.write(text)
      this.tail = (this.tail + text).slice(-4000)
      for (const line of text.split("\n")) {
        if (line.trim() === "") continue
        const level = /"logLevel":"(WARN|ERROR|FATAL)"/.exec(line)
        if (level === null && stream === "stdout") continue
        this.warnings++
        const message = /"message":("(?:[^"\\]|\\.)*")/.exec(line)?.[1] ?? JSON.stringify(line.slice(0, 200))
        this.messages.set(message, (this.messages.get(message) ?? 0) + 1)
      }
    }
    child.stdout?.on("data", onData("stdout"))
    child.stderr?.on("data", onData("stderr"))
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get output(): string {
    return this.tail
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  get exitDescription(): string {
    return `exit code ${String(this.child.exitCode)}, signal ${String(this.child.signalCode)}`
  }

  static async start(options: ParleyOptions): Promise<ParleyServer> {
    const port = await freePort()
    const child = spawn(process.execPath, [...START_NODE_FLAGS, ...(options.nodeArgs ?? []), options.bin ?? PARLEY_BIN, "serve"], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: "warn", ...options.env, PORT: String(port), PARLEY_DATA_DIR: options.dataDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const server = new ParleyServer(child, port, options, createWriteStream(options.logFile, { flags: "a" }))
    await waitForHealth(`${server.baseUrl}/healthz`, child, 120_000, () => server.tail)
    server.bootMs = Date.now() - server.startedAt
    server.idleRssMb = (rssKb(server.pid) ?? 0) / 1024
    return server
  }

  fetch(path: string, key: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    headers.set("authorization", `Bearer ${key}`)
    if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json")
    return fetch(`${this.baseUrl}${path}`, { ...init, headers })
  }

  async stop(): Promise<StopOutcome> {
    const outcome = await stopChild(this.child)
    await new Promise<void>((resolve) => this.log.end(() => resolve()))
    return outcome
  }
}

/** Runs `parley <args> --json` against a data directory (or the store `env` selects, e.g. DATABASE_URL). */
export const parleyCliJson = <A>(
  args: ReadonlyArray<string>,
  dataDir: string,
  env: Readonly<Record<string, string>> = {}
): Promise<A> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [PARLEY_BIN, ...args, "--json"],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: "warn", ...env, PARLEY_DATA_DIR: dataDir }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) return reject(new Error(`parley ${args.join(" ")} failed: ${stderr}`))
        try {
          resolve(JSON.parse(stdout) as A)
        } catch (cause) {
          reject(new Error(`parley ${args.join(" ")} printed no JSON: ${stdout}`, { cause }))
        }
      }
    )
  })

/** A baseline server (bench/baselines/*.ts) in its own process; it prints `{"port":N}` once listening. */
export class BaselineServer {
  private constructor(readonly child: ChildProcess, readonly port: number) {}

  get pid(): number {
    return this.child.pid ?? -1
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** `nodeArgs`: extra flags for its Node (e.g. `cpuProfileArgs`, to profile a baseline beside Parley). */
  static async start(script: string, config: unknown, nodeArgs: ReadonlyArray<string> = []): Promise<BaselineServer> {
    const child = spawn(process.execPath, [...tsNodeArgs(), ...nodeArgs, join(BENCH, "baselines", script), JSON.stringify(config)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()))
    const port = await new Promise<number>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        out += chunk.toString()
        const line = out.split("\n").find((l) => l.startsWith("{"))
        if (line !== undefined) {
          child.stdout?.off("data", onData)
          resolve((JSON.parse(line) as { port: number }).port)
        }
      }
      child.stdout?.on("data", onData)
      child.once("exit", (code) => reject(new Error(`baseline ${script} exited (${String(code)}): ${err}`)))
    })
    const server = new BaselineServer(child, port)
    await waitForHealth(`${server.baseUrl}/healthz`, child, 30_000, () => err)
    return server
  }

  async stop(): Promise<void> {
    await stopChild(this.child)
  }
}

/** Runs the load generator in a separate process and returns its JSON result. */
export const runLoad = (spec: LoadSpec, onStart: () => void = () => {}): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsNodeArgs(), join(BENCH, "loadgen.ts"), JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    let started = false
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (!started && out.includes("\"event\":\"start\"")) {
        started = true
        onStart()
      }
    })
    child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()))
    child.once("exit", (code) => {
      const line = out.trim().split("\n").pop() ?? ""
      if (code !== 0 || !line.startsWith("{")) return reject(new Error(`load generator failed (${String(code)}): ${err}${out}`))
      resolve(JSON.parse(line) as LoadResult)
    })
  })
