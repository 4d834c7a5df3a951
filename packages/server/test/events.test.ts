/**
 * Signed events, verified the way receivers verify them: with the
 * `standardwebhooks` package, not with Parley's own code.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

interface Received {
  readonly headers: Record<string, string>
  readonly body: string
}

/** A webhook receiver on 127.0.0.1 whose answer per request is chosen by the test. */
class Receiver {
  readonly requests: Array<Received> = []
  respond: (request: Received, index: number) => { readonly status: number; readonly headers?: Record<string, string> } =
    () => ({ status: 200 })
  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<Receiver> {
    let receiver: Receiver | undefined
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const received = { headers: flatten(req.headers), body: Buffer.concat(chunks).toString("utf8") }
        const index = receiver?.requests.push(received) ?? 0
        const answer = receiver?.respond(received, index - 1) ?? { status: 200 }
        res.writeHead(answer.status, answer.headers ?? {}).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    receiver = new Receiver(server, `http://127.0.0.1:${port}/events`)
    return receiver
  }

  close() {
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

const flatten = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])))

interface EventPayload {
  readonly type: string
  readonly timestamp: string
  readonly data: { readonly id: string; readonly status: string; readonly modified: string }
}

describe("signed events", () => {
  let server: TestServer
  let demo: DemoSummary
  let receiver: Receiver
  let webhook: { id: string; secret: string }
  let n = 0

  beforeAll(async () => {
    server = await TestServer.start({
      env: {
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_RATE_LIMIT_PER_MINUTE: "100000",
        PARLEY_DISPATCH_POLL_MS: "20",
        // 5 s → 0.25 ms, 5 min → 15 ms, … the whole schedule (≈ 27.6 h) in about 5 s.
        PARLEY_WEBHOOK_RETRY_SCALE: "0.00005"
      }
    })
    demo = await server.demo()
    receiver = await Receiver.start()
    webhook = await server.adminJson<{ id: string; secret: string }>([
      "webhooks", "add", "--org", demo.orgId, "--url", receiver.url
    ])
  })
  afterAll(async () => {
    await receiver.close()
    await server.dispose()
  })

  const send = async (to = "+14155550123") => {
    const response = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `events-${++n}-${Date.now()}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: "event me" })
    })
    expect(response.status).toBe(202)
    return ((await response.json()) as { id: string }).id
  }

  const eventsFor = (id: string) =>
    receiver.requests
      .map((r) => ({ ...r, payload: JSON.parse(r.body) as EventPayload }))
      .filter((r) => r.payload.data.id === id)

  it("posts queued, sent and delivered events that verify with the signing secret", async () => {
    receiver.respond = () => ({ status: 204 })
    const id = await send()
    const events = await until(async () => {
      const got = eventsFor(id)
      return got.some((e) => e.payload.type === "message.delivered") ? got : undefined
    })
    const verifier = new Webhook(webhook.secret)
    for (const event of events) {
      expect(() => verifier.verify(event.body, event.headers)).not.toThrow()
      expect(event.headers["webhook-id"]).toMatch(/^evt_/)
      expect(event.payload.data.modified).toBeTypeOf("string")
    }
    expect(new Set(events.map((e) => e.payload.type))).toEqual(
      new Set(["message.queued", "message.sent", "message.delivered"])
    )
    // A tampered body does not verify.
    const first = events[0]!
    expect(() => verifier.verify(first.body.replace("event me", "evil"), first.headers)).toThrow()
    // The record in the last event is the record GET returns.
    const record = await (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).json()
    expect(events.find((e) => e.payload.type === "message.delivered")?.payload.data).toEqual(record)
  })

  it("signs with both secrets while one is rotated", async () => {
    const rotated = await server.adminJson<{ secret: string }>(["webhooks", "rotate", "--webhook", webhook.id])
    const id = await send()
    const events = await until(async () => {
      const got = eventsFor(id)
      return got.some((e) => e.payload.type === "message.delivered") ? got : undefined
    })
    for (const event of events) {
      expect(event.headers["webhook-signature"]?.split(" ")).toHaveLength(2)
      expect(() => new Webhook(rotated.secret).verify(event.body, event.headers)).not.toThrow()
      expect(() => new Webhook(webhook.secret).verify(event.body, event.headers)).not.toThrow()
    }
    webhook = { ...webhook, secret: rotated.secret }
  })

  it("retries while the receiver is down, with the same webhook-id, until it answers", async () => {
    const failures = new Map<string, number>()
    receiver.respond = (request) => {
      const eventId = request.headers["webhook-id"] ?? ""
      const seen = failures.get(eventId) ?? 0
      if (seen < 3) {
        failures.set(eventId, seen + 1)
        return { status: 503, headers: { "retry-after": "0" } }
      }
      return { status: 200 }
    }
    const id = await send()
    const delivered = await until(async () => {
      const got = eventsFor(id)
      const types = new Set(got.map((e) => e.payload.type))
      return types.has("message.delivered") && got.length >= 12 ? got : undefined
    }, { timeoutMs: 30_000 })
    // Three failed attempts and one success per event, all under one webhook-id per event.
    const byId = new Map<string, number>()
    for (const event of delivered) byId.set(event.headers["webhook-id"] ?? "", (byId.get(event.headers["webhook-id"] ?? "") ?? 0) + 1)
    expect([...byId.values()]).toEqual([4, 4, 4])
    receiver.respond = () => ({ status: 200 })
  })

  it("disables the endpoint when it answers 410 Gone, and says why", async () => {
    receiver.respond = () => ({ status: 410 })
    const before = receiver.requests.length
    await send()
    const list = await until(async () => {
      const listed = await server.adminJson<{ items: ReadonlyArray<{ id: string; status: string; disabledReason: string | null }> }>([
        "webhooks", "list", "--org", demo.orgId
      ])
      const row = listed.items.find((w) => w.id === webhook.id)
      return row?.status === "disabled" ? row : undefined
    })
    expect(list.disabledReason).toContain("410")
    // Nothing more is posted to a disabled endpoint.
    const afterDisable = receiver.requests.length
    await send()
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(receiver.requests.length).toBe(afterDisable)
    expect(afterDisable).toBeGreaterThan(before)
  })

  it("disables an endpoint that keeps failing for the whole retry schedule", async () => {
    const failing = await Receiver.start()
    failing.respond = () => ({ status: 500 })
    const added = await server.adminJson<{ id: string }>(["webhooks", "add", "--org", demo.orgId, "--url", failing.url])
    try {
      await send()
      const row = await until(async () => {
        const listed = await server.adminJson<{ items: ReadonlyArray<{ id: string; status: string; disabledReason: string | null }> }>([
          "webhooks", "list", "--org", demo.orgId
        ])
        const found = listed.items.find((w) => w.id === added.id)
        return found?.status === "disabled" ? found : undefined
      }, { timeoutMs: 60_000, intervalMs: 500 })
      expect(row.disabledReason).toContain("HTTP 500")
      // The event whose schedule ran out was tried 8 times under one webhook-id, and none more than that.
      // (Other events of the same message may be cut short: the endpoint is disabled as soon as one runs out.)
      const attempts = new Map<string, number>()
      for (const r of failing.requests) {
        const id = r.headers["webhook-id"] ?? ""
        attempts.set(id, (attempts.get(id) ?? 0) + 1)
      }
      expect(Math.max(...attempts.values())).toBe(8)
    } finally {
      await failing.close()
    }
  }, 90_000)
})
