/**
 * Postgres going away under a running server: requests answer 503
 * SETUP_UNAVAILABLE in the error shape (nothing is acknowledged that was not
 * stored) and the server recovers by itself when the database is back.
 * The server reaches Postgres through a TCP relay the test can cut, which is
 * what an unreachable database looks like from the server's side.
 */
import { createServer, type Server, type Socket, connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

/** A relay to Postgres that can be cut (every connection dropped, new ones refused) and restored on the same port. */
class Relay {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  constructor(private readonly target: URL, public port = 0) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 5432), this.target.hostname)
      for (const socket of [client, upstream]) {
        this.sockets.add(socket)
        socket.on("close", () => this.sockets.delete(socket))
        socket.on("error", () => socket.destroy())
      }
      client.pipe(upstream).pipe(client)
      client.on("close", () => upstream.destroy())
      upstream.on("close", () => client.destroy())
    })
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve))
    const address = server.address()
    if (typeof address === "object" && address !== null) this.port = address.port
    this.server = server
  }

  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  }
}

describe.skipIf(testStore !== "postgres")("Postgres outage", () => {
  let db: TestDatabase
  let relay: Relay
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    db = await createTestDatabase("postgres")
    const direct = new URL(db.env["DATABASE_URL"]!)
    relay = new Relay(direct)
    await relay.open()
    const relayed = new URL(direct)
    relayed.host = `127.0.0.1:${relay.port}`
    server = await TestServer.start({
      database: { ...db, env: { ...db.env, DATABASE_URL: relayed.toString() } },
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "10000" }
    })
    demo = await server.demo()
  }, 120_000)

  afterAll(async () => {
    await server.stop()
    await relay.cut()
    await db.drop()
  })

  const send = (key: string, idempotencyKey: string) =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: key })
    })

  it("answers 503 SETUP_UNAVAILABLE while the database is unreachable, and recovers by itself", async () => {
    const before = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
    expect(before.status, server.output).toBe(200)

    await relay.cut()
    const read = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
    expect(read.status).toBe(503)
    const body = (await read.json()) as { error: { code: string; message: string; requestId: string } }
    expect(body.error.code).toBe("SETUP_UNAVAILABLE")
    expect(body.error.requestId).toBe(read.headers.get("x-request-id"))
    // Nothing about the database leaks into the answer.
    expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|postgres|SELECT|127\.0\.0\.1/i)

    const write = await send("written during the outage", "outage-1")
    expect(write.status).toBe(503)
    expect(((await write.json()) as { error: { code: string } }).error.code).toBe("SETUP_UNAVAILABLE")
    // The process is alive (liveness: nothing to restart) but not ready: /readyz names the database.
    expect((await server.fetch("/healthz")).status).toBe(200)
    const ready = await server.fetch("/readyz")
    expect(ready.status).toBe(503)
    const readiness = (await ready.json()) as { status: string; failing: Array<string> }
    expect(readiness.status).toBe("unavailable")
    expect(readiness.failing.some((part) => part.startsWith("database"))).toBe(true)
    expect(JSON.stringify(readiness)).not.toMatch(/ECONNREFUSED|SELECT|127\.0\.0\.1/i)

    await relay.open()
    await until(async () => {
      const response = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
      return response.status === 200 ? true : undefined
    }, { timeoutMs: 30_000, intervalMs: 250, what: "the server to recover" })
    const readyAgain = await until(async () => {
      const response = await server.fetch("/readyz")
      return response.status === 200 ? response : undefined
    }, { timeoutMs: 30_000, intervalMs: 250, what: "/readyz to answer 200" })
    expect(await readyAgain.json()).toEqual({ status: "ready" })

    // The refused write was not stored: nothing was acknowledged, so nothing exists…
    const [stored] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM actions WHERE body = ?`, [
      "written during the outage"
    ])
    expect(stored!.n).toBe(0)
    // …and the client's retry with the same key goes through once.
    const retry = await send("written during the outage", "outage-1")
    expect(retry.status).toBe(202)
    const [after] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM actions WHERE body = ?`, [
      "written during the outage"
    ])
    expect(after!.n).toBe(1)
  }, 90_000)
})
