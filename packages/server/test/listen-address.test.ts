/**
 * HOST: the address the server listens on. A plain `serve` listens on every interface (a server in a
 * container or behind a proxy must be reachable); `serve --demo`, which `pnpm start` runs, listens on
 * 127.0.0.1 unless HOST says otherwise. "Another address of this machine" is 127.0.0.2: on Linux the
 * whole of 127/8 reaches the loopback interface, so a socket bound to 127.0.0.1 alone refuses it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { freePort } from "./support/server.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"

const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "parley.mjs")

interface Started {
  readonly child: ChildProcess
  readonly port: number
  output: string
}

const running: Started[] = []
const databases: TestDatabase[] = []

afterEach(async () => {
  for (const started of running.splice(0)) {
    if (started.child.exitCode === null && started.child.signalCode === null) {
      await new Promise<void>((resolve) => {
        started.child.once("exit", () => resolve())
        started.child.kill("SIGTERM")
      })
    }
  }
  for (const db of databases.splice(0)) await db.drop()
})

const answers = async (url: string): Promise<boolean> => {
  try {
    return (await fetch(url)).ok
  } catch {
    return false
  }
}

/** Starts `parley <args>` and waits until it answers on 127.0.0.1 (or exits). */
const start = async (args: ReadonlyArray<string>, env: Record<string, string>): Promise<Started> => {
  const db = await createTestDatabase()
  databases.push(db)
  const port = await freePort()
  const { DATABASE_URL: _ignored, HOST: _host, ...inherited } = process.env
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...inherited, LOG_LEVEL: "warn", ...db.env, ...env, PORT: String(port), PARLEY_DATA_DIR: db.dataDir },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const started: Started = { child, port, output: "" }
  running.push(started)
  child.stdout?.on("data", (chunk: Buffer) => (started.output += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (started.output += chunk.toString()))
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) return started
    if (await answers(`http://127.0.0.1:${port}/healthz`)) return started
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`server did not start: ${started.output}`)
}

describe("HOST", () => {
  it("unset, a plain serve listens on every interface", async () => {
    const server = await start(["serve"], {})
    expect(await answers(`http://127.0.0.2:${server.port}/healthz`)).toBe(true)
  })

  it("127.0.0.1 keeps the server to loopback", async () => {
    const server = await start(["serve"], { HOST: "127.0.0.1" })
    expect(await answers(`http://127.0.0.1:${server.port}/healthz`)).toBe(true)
    expect(await answers(`http://127.0.0.2:${server.port}/healthz`)).toBe(false)
  })

  it("unset, serve --demo (pnpm start) listens on 127.0.0.1 only", async () => {
    const server = await start(["serve", "--demo"], {})
    expect(await answers(`http://127.0.0.1:${server.port}/healthz`)).toBe(true)
    expect(await answers(`http://127.0.0.2:${server.port}/healthz`)).toBe(false)
  })

  it("serve --demo listens where HOST says", async () => {
    const server = await start(["serve", "--demo"], { HOST: "0.0.0.0" })
    expect(await answers(`http://127.0.0.2:${server.port}/healthz`)).toBe(true)
  })

  it("an empty HOST is refused, naming the variable", async () => {
    const server = await start(["serve"], { HOST: " " })
    await new Promise((resolve) => (server.child.exitCode === null ? server.child.once("exit", resolve) : resolve(null)))
    expect(server.child.exitCode).not.toBe(0)
    expect(server.output).toContain("HOST")
    expect(server.output).not.toMatch(/\n\s+at /) // no stack trace
  })

  it("an address this machine does not have is refused in one line", async () => {
    const server = await start(["serve"], { HOST: "192.0.2.123" })
    await new Promise((resolve) => (server.child.exitCode === null ? server.child.once("exit", resolve) : resolve(null)))
    expect(server.child.exitCode).not.toBe(0)
    expect(server.output).toMatch(/cannot listen on 192\.0\.2\.123 port \d+ \(HOST, PORT\): .*EADDRNOTAVAIL/)
    expect(server.output).not.toMatch(/\n\s+at /)
  })
})
