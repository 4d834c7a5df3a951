/**
 * Acceptance (issue 35, contract and HTTP edges), over real HTTP on both stores: the rate-limit headers on
 * every authenticated answer (organisation-state refusals and malformed bodies included), the key checked
 * before the body is read or parsed (401, not 400; no `100 Continue` for a request without a valid key),
 * and `Retry-After` never longer than the window.
 *
 * The server runs with a rate limit of 8 requests a minute per key; each test uses its own keys.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rawRequest, requestHead } from "./support/rawHttp.js"
import { TestServer } from "./support/server.js"
import { expectError } from "./support/wire.js"

const RATE_LIMIT = 8
/** Each admin CLI call starts a node process (about 2 s, far more on a loaded machine). */
const CLI_HEAVY = 240_000

const expectRateLimitHeaders = (response: Response, what: string) => {
  expect(response.headers.get("ratelimit-policy"), what).toBe(`${RATE_LIMIT};w=60`)
  expect(response.headers.get("ratelimit"), what).toMatch(new RegExp(`^limit=${RATE_LIMIT}, remaining=\\d+, reset=\\d+$`))
}

describe("contract edges (issue 35)", () => {
  let server: TestServer

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) } })
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  const run = async (args: ReadonlyArray<string>): Promise<void> => {
    const result = await server.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
  }

  /** A key of its own for each test (the limit is per key). */
  const freshKey = async (orgId: string, mode: "test" | "live" = "test") =>
    (await server.adminJson<{ readonly key: string }>(
      ["keys", "create", "--org", orgId, "--name", `edges ${Date.now()}`, "--scopes", "all", "--mode", mode]
    )).key

  it("organisation-state refusals (403, 503) carry RateLimit and RateLimit-Policy: they counted", async () => {
    const demo = await server.demo()
    const key = await freshKey(demo.orgId)
    const refused = async (status: number, code: string) => {
      const response = await server.fetch("/api/v1/numbers", { key })
      expectRateLimitHeaders(response, code)
      await expectError(response, status, code)
    }
    const update = (...flags: ReadonlyArray<string>) => run(["orgs", "update", demo.orgId, ...flags])

    await update("--subscription", "inactive")
    await refused(403, "SUBSCRIPTION_INACTIVE")
    await update("--subscription", "active", "--seat", "inactive")
    await refused(403, "SEAT_INACTIVE")
    await update("--seat", "active", "--pilot", "pending")
    await refused(503, "PILOT_PENDING")
    await update("--pilot", "open")
    await run(["crm", "disconnect", demo.orgId])
    await refused(403, "OAUTH_REQUIRED")
    await run(["crm", "connect", demo.orgId, "--account", "Dana Demo", "--account-id", "crm_user_edges"])
    await run(["crm", "identity-changed", demo.orgId])
    await refused(403, "IDENTITY_CHANGED")
    // `parley demo` answers the same organisation every time: leave it connected for the tests after this one.
    await run(["crm", "connect", demo.orgId, "--account", "Dana Demo", "--account-id", "crm_user_edges"])
  }, CLI_HEAVY)

  it("malformed JSON: 401 without a key, 400 with RateLimit headers with one", async () => {
    const demo = await server.demo()
    const post = (key: string | undefined) =>
      server.fetch("/api/v1/messages", {
        method: "POST",
        ...(key === undefined ? {} : { key }),
        headers: { "idempotency-key": `edges-${Date.now()}` },
        body: "{not json"
      })
    await expectError(await post(undefined), 401, "UNAUTHORIZED")
    await expectError(await post("parley_test_not_a_key"), 401, "UNAUTHORIZED")
    const malformed = await post(await freshKey(demo.orgId))
    expectRateLimitHeaders(malformed, "malformed JSON")
    const error = await expectError(malformed, 400, "INVALID_REQUEST")
    expect(error.message).toContain("not valid JSON")
    // Nested too deep and the wrong media type are read only after the key, too.
    await expectError(
      await server.fetch("/api/v1/messages", { method: "POST", body: "[".repeat(100) }),
      401,
      "UNAUTHORIZED"
    )
    await expectError(
      await server.fetch("/api/v1/messages", { method: "POST", headers: { "content-type": "text/plain" }, body: "x" }),
      401,
      "UNAUTHORIZED"
    )
  }, CLI_HEAVY)

  it("Expect: 100-continue without a valid key is answered 401, never invited to send its body", async () => {
    const outcome = await rawRequest(server.port, {
      head: requestHead("POST", "/api/v1/messages", [
        ["Host", "127.0.0.1"],
        ["Content-Type", "application/json"],
        ["Content-Length", "64"],
        ["Expect", "100-continue"],
        ["Authorization", "Bearer parley_test_not_a_key"]
      ]),
      timeoutMs: 10_000
    })
    expect(outcome._tag, JSON.stringify(outcome)).toBe("Answered")
    if (outcome._tag !== "Answered") return
    expect(outcome.answer.interim).toEqual([])
    expect(outcome.answer.status).toBe(401)
  })

  it("Idempotency-Key is counted in characters (code points), not bytes, and replays as sent", async () => {
    const demo = await server.demo()
    const key = await freshKey(demo.orgId)
    const number = demo.numbers.find((n) => !n.whatsApp)?.sid ?? ""
    const stamp = String(Date.now()).slice(-6)
    // Header bytes as a client sends them: UTF-8 (fetch refuses anything beyond latin1, so over a socket).
    const create = (idempotencyKey: string) => {
      const body = JSON.stringify({ to: "+12025550123", fromNumberSid: number, body: "edges" })
      return rawRequest(server.port, {
        head: requestHead("POST", "/api/v1/messages", [
          ["Host", "127.0.0.1"],
          ["Authorization", `Bearer ${key}`],
          ["Content-Type", "application/json"],
          ["Content-Length", String(Buffer.byteLength(body))],
          ["Idempotency-Key", idempotencyKey]
        ]) + body,
        timeoutMs: 20_000
      })
    }
    const answered = async (idempotencyKey: string) => {
      const outcome = await create(idempotencyKey)
      if (outcome._tag !== "Answered") return expect.fail(JSON.stringify(outcome))
      return outcome.answer
    }
    // 40 emoji (160 bytes of UTF-8) and 70 × é (140 bytes): within 128 characters.
    for (const idempotencyKey of [`${stamp}${"😀".repeat(34)}`, `${stamp}${"é".repeat(70)}`, `${stamp}${"é".repeat(122)}`]) {
      const first = await answered(idempotencyKey)
      expect(first.status, first.body).toBe(202)
      const again = await answered(idempotencyKey)
      expect(again.status, again.body).toBe(202)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(JSON.parse(again.body)).toEqual(JSON.parse(first.body))
    }
    const tooLong = await answered(`${stamp}${"é".repeat(123)}`)
    expect(tooLong.status, tooLong.body).toBe(400)
    expect(tooLong.body).toContain("at most 128 characters")
  }, CLI_HEAVY)

  it("an action id past BIGINT is a 404 (or 400), never a 5xx, on both stores", async () => {
    const demo = await server.demo()
    const key = await freshKey(demo.orgId)
    for (const path of ["/api/v1/messages/9999999999999999999", "/api/v1/ai-calls/9223372036854775808"]) {
      const response = await server.fetch(path, { key })
      expect([400, 404], `${path}: ${await response.clone().text()}`).toContain(response.status)
      await response.body?.cancel()
    }
  }, CLI_HEAVY)

  /** Writes `bytes` on one connection and reads until the server closes it (or the time runs out). */
  const exchange = (bytes: string, timeoutMs = 10_000) =>
    new Promise<{ readonly closed: boolean; readonly statuses: ReadonlyArray<number>; readonly received: string }>((resolve) => {
      const socket = connect(server.port, "127.0.0.1")
      let received = ""
      const done = (closed: boolean) => {
        clearTimeout(timer)
        socket.destroy()
        resolve({ closed, received, statuses: [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])) })
      }
      const timer = setTimeout(() => done(false), timeoutMs)
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")))
      socket.on("error", () => undefined)
      socket.on("close", () => done(true))
      socket.on("connect", () => socket.write(bytes))
    })

  it("a malformed request pipelined behind a valid one gets its own 400 (or 431) before the connection closes", async () => {
    const valid = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    const garbage = await exchange(`${valid}NOT A REQUEST\r\n\r\n`)
    expect(garbage.statuses, garbage.received.slice(0, 600)).toEqual([200, 400])
    expect(garbage.closed).toBe(true)
    expect(garbage.received).toContain("INVALID_REQUEST")
    const twoValid = await exchange(`${valid}${valid}GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n`)
    expect(twoValid.statuses, twoValid.received.slice(0, 600)).toEqual([200, 200, 400])
    const huge = await exchange(`${valid}GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`)
    expect(huge.statuses, huge.received.slice(0, 600)).toEqual([200, 431])
  })

  it("a wrong method on a plain route is a 405 with Allow, as on the contract's routes", async () => {
    for (const [method, path, allow] of [
      ["DELETE", "/healthz", "GET"],
      ["PUT", "/api/v1/openapi.json", "GET"],
      ["POST", "/docs", "GET"],
      ["GET", "/carrier/inbound", "POST"]
    ] as const) {
      const response = await server.fetch(path, { method })
      expect(response.headers.get("allow"), `${method} ${path}`).toBe(allow)
      await expectError(response, 405, "METHOD_NOT_ALLOWED")
    }
    // A console page answers a browser with the console's own page, the same status and Allow (issue 33, item 7).
    const consolePage = await server.fetch("/admin/keys", { method: "PATCH" })
    expect(consolePage.status).toBe(405)
    expect(consolePage.headers.get("allow")).toBe("GET")
    expect(consolePage.headers.get("content-type")).toContain("text/html")
    await expectError(await server.fetch("/healthz/nope", { method: "DELETE" }), 404, "NOT_FOUND")
  })

  it("limits the contract does not set answer in plain words, without schema noise (body, record.id, variables)", async () => {
    const demo = await server.demo()
    const key = await freshKey(demo.orgId)
    const number = demo.numbers.find((n) => !n.whatsApp)?.sid ?? ""
    const whatsApp = demo.numbers.find((n) => n.whatsApp)?.sid ?? number
    const cases: ReadonlyArray<readonly [Record<string, unknown>, ReadonlyArray<string>]> = [
      [{ to: "+12025550100", fromNumberSid: number, body: "", record: { module: "Leads", id: "x".repeat(65) } }, [
        "record.id: must be at most 64 characters"
      ]],
      [{ to: "+12025550100", fromNumberSid: number, body: "" }, ["body: must not be empty"]],
      [{
        to: "+12025550100",
        fromNumberSid: whatsApp,
        body: "x",
        channel: "WhatsApp",
        whatsAppContentVariables: { "{{1}}": "a".repeat(1025) }
      }, ["whatsAppContentVariables.{{1}}: must be at most 1024 characters"]]
    ]
    for (const [payload, expected] of cases) {
      const response = await server.fetch("/api/v1/messages", {
        method: "POST",
        key,
        headers: { "idempotency-key": `edges-${Date.now()}-${Math.random()}` },
        body: JSON.stringify(payload)
      })
      const error = await expectError(response, 400, "INVALID_REQUEST")
      for (const text of expected) expect(error.message).toContain(text)
      expect(error.message).not.toContain("Expected undefined")
    }
  }, CLI_HEAVY)

  it("the OpenAPI document declares the 415 (and 413) the cancellations answer, and a sliding window", async () => {
    const document = await (await server.fetch("/api/v1/openapi.json")).json() as {
      readonly paths: Readonly<Record<string, Readonly<Record<string, { readonly responses: Readonly<Record<string, unknown>> }>>>>
      readonly components: { readonly headers: Readonly<Record<string, { readonly description: string }>> }
    }
    for (const path of ["/api/v1/messages/{id}/cancel", "/api/v1/ai-calls/{id}/cancel"]) {
      const responses = document.paths[path]?.["post"]?.responses ?? {}
      expect(Object.keys(responses), path).toEqual(expect.arrayContaining(["413", "415"]))
    }
    expect(document.components.headers["RateLimit-Policy"]?.description).toContain("slides")
    expect(document.components.headers["RateLimit-Policy"]?.description).not.toContain("fixed window")
    expect(document.components.headers["Retry-After"]?.description).toContain("Never more than the window")
    const demo = await server.demo()
    const key = await freshKey(demo.orgId)
    for (const path of ["/api/v1/messages/1/cancel", "/api/v1/ai-calls/1/cancel"]) {
      const response = await server.fetch(path, { method: "POST", key, headers: { "content-type": "text/plain" }, body: "stop" })
      expectRateLimitHeaders(response, path)
      await expectError(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    }
  }, CLI_HEAVY)

  it("Retry-After is never longer than the window: the 9th request of a burst waits at most 60 s", async () => {
    const demo = await server.demo()
    const key = await freshKey(demo.orgId, "live")
    const statuses: Array<number> = []
    let refusal: Response | undefined
    for (let i = 0; i <= RATE_LIMIT; i++) {
      const response = await server.fetch("/api/v1/numbers", { key })
      statuses.push(response.status)
      if (response.status === 429) refusal = response
      else await response.body?.cancel()
    }
    expect(statuses.slice(0, RATE_LIMIT).every((status) => status === 200), statuses.join(",")).toBe(true)
    if (refusal === undefined) return expect.fail(`no 429 in ${statuses.join(",")}`)
    const retryAfter = Number(refusal.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expectRateLimitHeaders(refusal, "429")
    await expectError(refusal, 429, "RATE_LIMITED")
  }, CLI_HEAVY)
})
