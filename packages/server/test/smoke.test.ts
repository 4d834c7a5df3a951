import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

describe("server smoke", () => {
  let server: TestServer
  let demo: DemoSummary
  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
  })
  afterAll(() => server.dispose())

  it("lists the demo numbers with a request id", async () => {
    const response = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-request-id")).toMatch(/^req_/)
    const body = (await response.json()) as { items: ReadonlyArray<{ sid: string }> }
    expect(body.items.map((n) => n.sid)).toEqual(demo.numbers.map((n) => n.sid))
  })
})
