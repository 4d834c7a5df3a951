/**
 * No phone number leaves the server through a conversation id or a request
 * log line: ids are encrypted (nothing in them decodes to the numbers they
 * name), and each request is logged by its route template, never by the path
 * sent (ids, and unknown paths, can carry a number).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { type Page } from "./support/demo.js"

const COUNTERPART = "+14155550177"
const DIGITS = "4155550177"

describe("phone numbers in conversation ids and logs", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { LOG_LEVEL: "info" } })
    demo = await server.demo()
  }, 180_000)
  afterAll(() => server?.dispose())

  it("gives an id that reveals no number, and logs route templates instead of paths", async () => {
    const created = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": "privacy-1" },
      body: JSON.stringify({ to: COUNTERPART, fromNumberSid: demo.numbers[0]?.sid, body: "hello" })
    })
    expect(created.status).toBe(202)
    const list = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
    const conversation = ((await list.json()) as Page<{ readonly id: string; readonly phone: string }>).items
      .find((c) => c.phone === COUNTERPART)
    expect(conversation).toBeDefined()
    const id = conversation?.id ?? ""
    for (const decoding of ["base64url", "base64", "latin1"] as const) {
      expect(Buffer.from(id, decoding === "latin1" ? "latin1" : decoding).toString("latin1")).not.toContain(DIGITS)
    }
    const read = await server.fetch(`/api/v1/conversations/${encodeURIComponent(id)}`, { key: demo.keys.live })
    expect(read.status).toBe(200)
    // A path nothing matches, holding a number: answered, and logged without it.
    expect((await server.fetch(`/api/v1/numbers/${COUNTERPART}/x`, { key: demo.keys.live })).status).toBe(404)
    await until(async () => (server.output.includes('"route":null') ? true : undefined), {
      timeoutMs: 10_000,
      what: "the request log line of the unknown path"
    })
    const lines = server.output.split("\n").filter((line) => line.includes('"message":"request"'))
    expect(lines.length).toBeGreaterThanOrEqual(4)
    expect(server.output).not.toContain(DIGITS)
    expect(server.output).not.toContain(id)
    const routes = lines.map((line) => (JSON.parse(line) as { readonly annotations?: { readonly route?: unknown } }).annotations?.route)
    expect(routes, lines.join("\n")).toEqual(expect.arrayContaining(["/api/v1/messages", "/api/v1/conversations", "/api/v1/conversations/:id", null]))
  })
})
