/**
 * Acceptance: HTTP protocol edges over raw sockets — every request is
 * answered, within bounded time, in the error shape with `X-Request-ID`:
 * JSON media types (`+json`), deep nesting, what Node's HTTP parser rejects,
 * the carrier webhook's limits and errors, unknown body fields, and bodies
 * sent to unknown routes (never read).
 */
import { connect } from "node:net"
import { HttpApi } from "@effect/platform"
import { ParleyApi } from "@parley/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RawAnswer, type RawOutcome, rawRequest, requestHead } from "./support/rawHttp.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { CLI_HEAVY } from "./support/demo.js"

/** Generous for a loaded 2-core machine; a hang is what this catches, not slowness. */
const ANSWER_WITHIN_MS = 10_000
const KIB = 1024
const MIB = 1024 * KIB

interface ErrorDetail {
  readonly code: string
  readonly message: string
  readonly requestId: string
}

/** The contract's routes, read from the HttpApi itself (path parameters filled in). */
const contractRoutes: ReadonlyArray<{ readonly method: string; readonly path: string; readonly hasPayload: boolean }> =
  (() => {
    const routes: Array<{ method: string; path: string; hasPayload: boolean }> = []
    HttpApi.reflect(ParleyApi, {
      onGroup: () => undefined,
      onEndpoint: ({ endpoint }) => {
        routes.push({
          method: endpoint.method,
          path: endpoint.path.replace(/:\w+/g, "1"),
          hasPayload: endpoint.payloadSchema._tag === "Some"
        })
      }
    })
    return routes
  })()

let counter = 0
const idem = () => `protocol-${Date.now()}-${++counter}`

const answered = (outcome: RawOutcome, what: string): RawAnswer => {
  if (outcome._tag !== "Answered") {
    throw new Error(`${what}: ${outcome._tag} (received ${JSON.stringify(outcome.received.slice(0, 300))})`)
  }
  return outcome.answer
}

/** The spec's error body, with `error.requestId` equal to the `X-Request-ID` header. */
const expectErrorShape = (answer: RawAnswer, status: number, code: string, what = ""): ErrorDetail => {
  expect(answer.status, `${what} ${answer.body}`).toBe(status)
  expect(answer.headers["content-type"], what).toMatch(/^application\/json/)
  const body = JSON.parse(answer.body) as { readonly error: ErrorDetail }
  expect(Object.keys(body)).toEqual(["error"])
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "requestId"])
  expect(body.error.code, what).toBe(code)
  expect(body.error.message.length).toBeGreaterThan(0)
  expect(answer.headers["x-request-id"], what).toMatch(/^[A-Za-z0-9._:-]{1,128}$/)
  expect(body.error.requestId, what).toBe(answer.headers["x-request-id"])
  return body.error
}

describe("protocol edges", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_INBOUND_UNSIGNED: "accept" } })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  const send = (
    method: string,
    path: string,
    options: {
      readonly headers?: ReadonlyArray<readonly [string, string]>
      readonly body?: string | Buffer | undefined
      readonly key?: string
      readonly timeoutMs?: number
    } = {}
  ) => {
    const body = options.body === undefined
      ? undefined
      : typeof options.body === "string"
      ? Buffer.from(options.body)
      : options.body
    const headers: Array<readonly [string, string]> = [["Host", "127.0.0.1"], ["Connection", "close"]]
    if (options.key !== undefined) headers.push(["Authorization", `Bearer ${options.key}`])
    if (body !== undefined) headers.push(["Content-Length", String(body.length)])
    headers.push(...(options.headers ?? []))
    return rawRequest(server.port, {
      head: requestHead(method, path, headers),
      body: body === undefined ? [] : [body],
      timeoutMs: options.timeoutMs ?? ANSWER_WITHIN_MS,
      expectBody: method !== "HEAD"
    })
  }

  const message = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ to: "+12025550100", fromNumberSid: demo.numbers[0]?.sid, body: "hello", ...extra })

  describe("JSON media types (+json)", () => {
    it("accepts a body sent as application/ld+json or application/vnd.api+json, end to end", async () => {
      for (const contentType of ["application/ld+json", "application/vnd.api+json; charset=utf-8", "Application/JSON"]) {
        const answer = answered(
          await send("POST", "/api/v1/messages", {
            key: demo.keys.test,
            headers: [["Content-Type", contentType], ["Idempotency-Key", idem()]],
            body: message()
          }),
          contentType
        )
        expect(answer.status, `${contentType}: ${answer.body}`).toBe(202)
        expect(answer.headers["x-request-id"]).toMatch(/^req_/)
      }
      const call = answered(
        await send("POST", "/api/v1/ai-calls", {
          key: demo.keys.test,
          headers: [["Content-Type", "application/problem+json"], ["Idempotency-Key", idem()]],
          body: JSON.stringify({
            to: "+12025550100",
            fromNumberSid: demo.numbers[0]?.sid,
            botId: demo.bots[0]?.id,
            mode: "deliver_specific_message",
            purposeMessage: "Your order is ready."
          })
        }),
        "ai-call"
      )
      expect(call.status, call.body).toBe(202)
    })

    it("answers every route of the contract, whatever the method and media type, within bounded time", async () => {
      const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
      const contentTypes = [undefined, "application/json", "application/ld+json", "text/plain", "application/x-www-form-urlencoded"]
      const failures: Array<string> = []
      for (const route of contractRoutes) {
        for (const method of methods) {
          for (const contentType of contentTypes) {
            const what = `${method} ${route.path} (${contentType ?? "no content type"})`
            const outcome = await send(method, route.path, {
              key: demo.keys.test,
              headers: [
                ...(contentType === undefined ? [] : [["Content-Type", contentType] as const]),
                ["Idempotency-Key", idem()]
              ],
              body: contentType === undefined ? undefined : message(),
              timeoutMs: ANSWER_WITHIN_MS
            })
            if (outcome._tag !== "Answered") failures.push(`${what}: ${outcome._tag}`)
            else if (outcome.answer.status >= 500) failures.push(`${what}: ${outcome.answer.status}`)
            else if (outcome.answer.headers["x-request-id"] === undefined) failures.push(`${what}: no X-Request-ID`)
          }
        }
      }
      expect(failures).toEqual([])
    }, 300_000)
  })

  describe("empty bodies", () => {
    it("answers an empty chunked body on a route that takes JSON with 400, as an empty body with a length", async () => {
      for (const path of ["/api/v1/messages", "/api/v1/ai-calls"]) {
        for (const framing of [["Transfer-Encoding", "chunked"], ["Content-Length", "0"]] as const) {
          const answer = answered(
            await rawRequest(server.port, {
              head: requestHead("POST", path, [
                ["Host", "x"],
                ["Authorization", `Bearer ${demo.keys.test}`],
                ["Content-Type", "application/json"],
                ["Idempotency-Key", idem()],
                framing
              ]),
              body: framing[0] === "Transfer-Encoding" ? [Buffer.from("0\r\n\r\n")] : [],
              timeoutMs: ANSWER_WITHIN_MS
            }),
            `${path} ${framing[0]}`
          )
          expectErrorShape(answer, 400, "INVALID_REQUEST", `${path} ${framing[0]}`)
        }
      }
    })

    it("answers a POST without a body whatever media type it names", async () => {
      for (const contentType of ["multipart/form-data; boundary=x", "text/plain", "application/ld+json"]) {
        const answer = answered(
          await send("POST", "/api/v1/messages", {
            key: demo.keys.test,
            headers: [["Content-Type", contentType], ["Idempotency-Key", idem()]]
          }),
          contentType
        )
        expectErrorShape(answer, 400, "INVALID_REQUEST", contentType)
      }
    })
  })

  describe("NUL characters", () => {
    // Postgres cannot store U+0000 in text: a NUL reaching a query was a 503 there (and stored on SQLite).
    it("answers NUL in the path, the query, a JSON string or a form field with 400 INVALID_REQUEST", async () => {
      const cases: ReadonlyArray<readonly [string, string, string | undefined, string | undefined]> = [
        ["GET", "/api/v1/webhook-endpoints/%00", undefined, undefined],
        ["GET", "/api/v1/conversations?cursor=a%00b", undefined, undefined],
        ["POST", "/api/v1/messages", "application/json", message({ body: "a\u0000b" })],
        ["POST", "/api/v1/messages", "application/json", message({ record: { module: "Contacts", id: "\u0000" } })],
        ["POST", "/carrier/inbound", "application/x-www-form-urlencoded", `From=%2B447700900001&To=${encodeURIComponent(demo.numbers[0]?.phoneNumber ?? "")}&Body=a%00b`]
      ]
      for (const [method, path, contentType, body] of cases) {
        const answer = answered(
          await send(method, path, {
            key: demo.keys.live,
            headers: [...(contentType === undefined ? [] : [["Content-Type", contentType] as const]), ["Idempotency-Key", idem()]],
            body
          }),
          `${method} ${path}`
        )
        const error = expectErrorShape(answer, 400, "INVALID_REQUEST", `${method} ${path} ${body ?? ""}`)
        expect(error.message).toMatch(/NUL/)
      }
    })
  })

  describe("deep nesting", () => {
    const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

    it("answers a body nested 2,500 levels deep with 400 INVALID_REQUEST naming the depth limit", async () => {
      for (const body of [nested(2500), `{"to": ${nested(2500)}}`, `{"record": ${"{\"a\":".repeat(2500)}1${"}".repeat(2500)}}`]) {
        for (const path of ["/api/v1/messages", "/api/v1/ai-calls"]) {
          const answer = answered(
            await send("POST", path, {
              key: demo.keys.test,
              headers: [["Content-Type", "application/json"], ["Idempotency-Key", idem()]],
              body
            }),
            path
          )
          const error = expectErrorShape(answer, 400, "INVALID_REQUEST", path)
          expect(error.message).toMatch(/nested/i)
          expect(error.message).toMatch(/32/)
        }
      }
    })

    it("still names the field for a value nested within the limit", async () => {
      const answer = answered(
        await send("POST", "/api/v1/messages", {
          key: demo.keys.test,
          headers: [["Content-Type", "application/json"], ["Idempotency-Key", idem()]],
          body: JSON.stringify({ to: JSON.parse(nested(20)) as unknown, fromNumberSid: "PN1", body: "x" })
        }),
        "nested 20"
      )
      const error = expectErrorShape(answer, 400, "INVALID_REQUEST")
      expect(error.message).toContain("to")
      expect(error.message).not.toMatch(/nested/i)
    })
  })

  describe("what Node's HTTP parser rejects", () => {
    const raw = (head: string) => rawRequest(server.port, { head, timeoutMs: ANSWER_WITHIN_MS })

    it("answers unknown methods, malformed request lines and conflicting lengths with 400 in the error shape", async () => {
      const cases = [
        "FOO /api/v1/messages HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /api/v1/numbers HTTP/1.1 junk\r\nHost: x\r\n\r\n",
        "GET\r\n\r\n",
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n{}}",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Nul: a\u0000b\r\n\r\n"
      ]
      for (const head of cases) {
        const answer = answered(await raw(head), JSON.stringify(head))
        expectErrorShape(answer, 400, "INVALID_REQUEST", JSON.stringify(head))
        expect(answer.headers["connection"]).toBe("close")
      }
    })

    it("answers headers over Node's limit with 431 HEADERS_TOO_LARGE in the error shape", async () => {
      const answer = answered(
        await raw(`GET /api/v1/numbers HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * KIB)}\r\n\r\n`),
        "header overflow"
      )
      expectErrorShape(answer, 431, "HEADERS_TOO_LARGE")
    })

    it("answers CONNECT (Parley is not a proxy) in the error shape instead of dropping the connection", async () => {
      const answer = answered(await raw("CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n"), "CONNECT")
      expectErrorShape(answer, 400, "INVALID_REQUEST")
    })

    it("answers an unknown expectation like any other request, with X-Request-ID (no bare 417)", async () => {
      const answer = answered(await raw("GET /api/v1/nope HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n"), "Expect")
      expectErrorShape(answer, 404, "NOT_FOUND")
    })

    it("answers a chunked body that breaks off mid-way with 400 in the error shape", async () => {
      const answer = answered(
        await raw(
          "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n" +
            `Authorization: Bearer ${demo.keys.test}\r\n\r\n` +
            "2\r\n{}\r\nZZZ\r\n"
        ),
        "broken chunk"
      )
      expectErrorShape(answer, 400, "INVALID_REQUEST")
    })
  })

  describe("POST /carrier/inbound", () => {
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
    const formType = ["Content-Type", "application/x-www-form-urlencoded"] as const

    it("answers a body over the limit with 413 PAYLOAD_TOO_LARGE in the error shape, by length or chunked", async () => {
      const big = form({ From: "+447700900001", To: demo.numbers[0]?.phoneNumber ?? "", Body: "a".repeat(70 * KIB) })
      const byLength = answered(await send("POST", "/carrier/inbound", { headers: [formType], body: big }), "length")
      expectErrorShape(byLength, 413, "PAYLOAD_TOO_LARGE")

      const chunks: Array<Buffer> = []
      for (let i = 0; i < big.length; i += 8 * KIB) {
        const piece = big.slice(i, i + 8 * KIB)
        chunks.push(Buffer.from(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`))
      }
      chunks.push(Buffer.from("0\r\n\r\n"))
      const chunked = answered(
        await rawRequest(server.port, {
          head: requestHead("POST", "/carrier/inbound", [["Host", "x"], formType, ["Transfer-Encoding", "chunked"]]),
          body: chunks,
          timeoutMs: ANSWER_WITHIN_MS
        }),
        "chunked"
      )
      expectErrorShape(chunked, 413, "PAYLOAD_TOO_LARGE")
    })

    it("answers its errors in the error shape with a code and the request id", async () => {
      const unknownNumber = answered(
        await send("POST", "/carrier/inbound", {
          headers: [formType, ["X-Request-ID", "carrier-trace-1"]],
          body: form({ From: "+447700900001", To: "+19995550100", Body: "hi" })
        }),
        "unknown number"
      )
      expect(expectErrorShape(unknownNumber, 404, "NOT_FOUND").requestId).toBe("carrier-trace-1")
      const malformed = answered(
        await send("POST", "/carrier/inbound", { headers: [formType], body: form({ From: "nobody", To: "+1", Body: "hi" }) }),
        "malformed"
      )
      expectErrorShape(malformed, 400, "INVALID_REQUEST")
      const json = answered(
        await send("POST", "/carrier/inbound", { headers: [["Content-Type", "application/json"]], body: "{}" }),
        "json"
      )
      expectErrorShape(json, 415, "UNSUPPORTED_MEDIA_TYPE")
    })

    it("still takes a well-formed inbound text (TwiML answer)", async () => {
      const answer = answered(
        await send("POST", "/carrier/inbound", {
          headers: [["Content-Type", "application/x-www-form-urlencoded; charset=utf-8"]],
          body: form({ From: "+447700900009", To: demo.numbers[0]?.phoneNumber ?? "", Body: "hi", MessageSid: `SM${idem()}` })
        }),
        "inbound"
      )
      expect(answer.status, answer.body).toBe(200)
      expect(answer.headers["content-type"]).toMatch(/xml/)
      expect(answer.headers["x-request-id"]).toMatch(/^req_/)
    })
  })

  describe("unknown body fields", () => {
    it("answers a misspelt field with 400 INVALID_REQUEST naming it (and what was meant)", async () => {
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        ["/api/v1/messages", message({ scheduled_for: "2030-01-01T10:00:00Z" }), "scheduled_for"],
        ["/api/v1/messages", message({ record: { module: "Contacts", id: "1", nmae: "x" } }), "record.nmae"],
        ["/api/v1/ai-calls", JSON.stringify({
          to: "+12025550100",
          fromNumberSid: demo.numbers[0]?.sid,
          botId: demo.bots[0]?.id,
          mode: "ai_conversation",
          bot_id: "x"
        }), "bot_id"]
      ]
      for (const [path, body, field] of cases) {
        const answer = answered(
          await send("POST", path, {
            key: demo.keys.test,
            headers: [["Content-Type", "application/json"], ["Idempotency-Key", idem()]],
            body
          }),
          field
        )
        const error = expectErrorShape(answer, 400, "INVALID_REQUEST", field)
        expect(error.message, field).toContain(field)
      }
      const misspelt = answered(
        await send("POST", "/api/v1/messages", {
          key: demo.keys.test,
          headers: [["Content-Type", "application/json"], ["Idempotency-Key", idem()]],
          body: message({ scheduled_for: "2030-01-01T10:00:00Z" })
        }),
        "suggestion"
      )
      expect(expectErrorShape(misspelt, 400, "INVALID_REQUEST").message).toContain("scheduledFor")
    })
  })

  describe("bodies sent to unknown routes", () => {
    const declaredOnly = (method: string, path: string, length: number, extra: ReadonlyArray<readonly [string, string]> = []) =>
      rawRequest(server.port, {
        head: requestHead(method, path, [["Host", "x"], ["Content-Type", "application/json"], ["Content-Length", String(length)], ...extra]),
        timeoutMs: ANSWER_WITHIN_MS
      })

    it("answers POST /healthz with a 10 MB body 405 (404 on unknown paths) at once, without waiting for the body", async () => {
      // Only the headers are sent: an answer proves the body is not awaited.
      for (const path of ["/healthz", "/api/v1/nope", "/api/v2/messages"]) {
        const answer = answered(await declaredOnly("POST", path, 10 * MIB), path)
        // /healthz exists, for GET only (issue 35, 21: a wrong method on a plain route is a 405 with Allow).
        if (path === "/healthz") {
          expectErrorShape(answer, 405, "METHOD_NOT_ALLOWED", path)
          expect(answer.headers["allow"]).toBe("GET")
        } else {
          expectErrorShape(answer, 404, "NOT_FOUND", path)
        }
        // the unread body is not drained either: the connection is closed
        expect(answer.headers["connection"], path).toBe("close")
      }
      const smaller = answered(await declaredOnly("POST", "/api/v1/nope", 60 * KIB), "60 KiB")
      expectErrorShape(smaller, 404, "NOT_FOUND")
    })

    it("does not invite an unknown route's body with 100 Continue", async () => {
      const answer = answered(await declaredOnly("POST", "/healthz", 10 * MIB, [["Expect", "100-continue"]]), "expect")
      expect(answer.interim).toEqual([])
      expectErrorShape(answer, 405, "METHOD_NOT_ALLOWED")
    })

    it("sends 100 Continue where the body is read, and takes it", async () => {
      const body = Buffer.from(message())
      const answer = answered(
        await rawRequest(server.port, {
          head: requestHead("POST", "/api/v1/messages", [
            ["Host", "x"],
            ["Authorization", `Bearer ${demo.keys.test}`],
            ["Content-Type", "application/json"],
            ["Idempotency-Key", idem()],
            ["Content-Length", String(body.length)],
            ["Expect", "100-continue"]
          ]),
          body: [body],
          timeoutMs: ANSWER_WITHIN_MS
        }),
        "100-continue"
      )
      expect(answer.status, answer.body).toBe(202)
    })

    it("delivers the answer while the client is still uploading the unread body (no reset loses it)", async () => {
      // The server answers before reading and closes; closing under a running upload used to reset the
      // connection, and the reset could discard the answer before the client read it.
      const chunk = Buffer.concat([Buffer.from(`${(16 * KIB).toString(16)}\r\n`), Buffer.alloc(16 * KIB, 97), Buffer.from("\r\n")])
      const lost: Array<string> = []
      for (let attempt = 0; attempt < 20; attempt++) {
        for (const [method, path] of [["PUT", "/api/v1/nope"], ["POST", "/healthz"]] as const) {
          const outcome = await rawRequest(server.port, {
            head: requestHead(method, path, [["Host", "x"], ["Content-Type", "application/json"], ["Transfer-Encoding", "chunked"]]),
            body: Array.from({ length: 64 }, () => chunk),
            timeoutMs: ANSWER_WITHIN_MS
          })
          if (outcome._tag !== "Answered") lost.push(`${method} ${path}: ${outcome._tag}`)
          else expectErrorShape(outcome.answer, path === "/healthz" ? 405 : 404, path === "/healthz" ? "METHOD_NOT_ALLOWED" : "NOT_FOUND")
        }
      }
      expect(lost).toEqual([])
    })

    it("answers a 415 on a real route without waiting for a large declared body", async () => {
      const answer = answered(
        await rawRequest(server.port, {
          head: requestHead("POST", "/api/v1/messages", [
            ["Host", "x"],
            ["Content-Type", "text/plain"],
            ["Content-Length", String(10 * MIB)],
            ["Authorization", `Bearer ${demo.keys.test}`]
          ]),
          timeoutMs: ANSWER_WITHIN_MS
        }),
        "415"
      )
      expectErrorShape(answer, 415, "UNSUPPORTED_MEDIA_TYPE")
      expect(answer.headers["connection"]).toBe("close")
    })
  })
})

/** Parses consecutive answers from one connection's bytes: each final answer with the interim lines before it. */
const parseSequence = (received: Buffer): { readonly answers: ReadonlyArray<{ status: number; interim: Array<number>; headers: Record<string, string>; body: string }>; readonly rest: number } => {
  const answers: Array<{ status: number; interim: Array<number>; headers: Record<string, string>; body: string }> = []
  let offset = 0
  let interim: Array<number> = []
  for (;;) {
    const end = received.indexOf("\r\n\r\n", offset)
    if (end === -1) break
    const lines = received.subarray(offset, end).toString("latin1").split("\r\n")
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(lines[0] ?? "")?.[1] ?? "0")
    if (status === 0) break
    const headers: Record<string, string> = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":")
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (status < 200) {
      interim.push(status)
      offset = end + 4
      continue
    }
    const length = Number(headers["content-length"] ?? "0")
    if (received.length < end + 4 + length) break
    answers.push({ status, interim, headers, body: received.subarray(end + 4, end + 4 + length).toString("utf8") })
    interim = []
    offset = end + 4 + length
  }
  return { answers, rest: received.length - offset }
}

/** Writes `requests` at once on one connection; collects until `finals` answers, the connection closes, or the time is up. */
const pipeline = (port: number, requests: string, finals: number) =>
  new Promise<{ readonly received: Buffer; readonly closed: boolean }>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    let received = Buffer.alloc(0)
    let settled = false
    const settle = (closed: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ received, closed })
    }
    const timer = setTimeout(() => settle(false), ANSWER_WITHIN_MS)
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (parseSequence(received).answers.length >= finals) settle(false)
    })
    socket.on("close", () => settle(true))
    socket.on("error", () => settle(true))
    socket.write(requests)
  })

describe("pipelined requests on one connection", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  it("keeps answers in order when a provider route invites a pipelined body with 100 Continue", async () => {
    const form = "MessageSid=SMx1"
    const requests = `GET /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${demo.keys.live}\r\n\r\n` +
      `POST /providers/twilio/status?org=${demo.orgId}&action=1 HTTP/1.1\r\nHost: x\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nExpect: 100-continue\r\nContent-Length: ${form.length}\r\n\r\n${form}` +
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    for (let round = 0; round < 5; round++) {
      const { closed, received } = await pipeline(server.port, requests, 3)
      const { answers, rest } = parseSequence(received)
      const shown = received.toString("latin1")
      // Answered in order, or closed cleanly after an answer that says so (Node closes a connection whose
      // client expected 100 Continue and was answered without it): never an answer inside another.
      expect(answers.length, shown).toBeGreaterThanOrEqual(2)
      expect(answers[0]?.status, shown).toBe(200)
      expect(answers[0]?.interim).toEqual([])
      for (const answer of answers) expect(() => JSON.parse(answer.body), answer.body).not.toThrow()
      if (answers.length === 3) expect(answers[2]?.body).toBe('{"status":"ok"}')
      else {
        expect(answers.at(-1)?.headers["connection"], shown).toBe("close")
        expect(closed).toBe(true)
      }
      expect(rest, shown).toBe(0)
    }
  })

  /**
   * Issue 22, item 12: "a request with an unread body gets Connection: keep-alive and the connection is then
   * closed ~24 ms later". Not reproduced (SQLite and Postgres, raw sockets: small unread bodies on GET, 401,
   * 404, 405, 415 and refused callbacks, pipelined or sent later); this pins what every such answer must do:
   * an answer that says keep-alive keeps the connection, and the requests after it are answered.
   */
  it("keeps a connection whose answer said keep-alive after an unread small body, and answers what follows", async () => {
    const health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    const unread: ReadonlyArray<readonly [string, string]> = [
      ["GET with a body", `GET /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${demo.keys.live}\r\nContent-Length: 5\r\n\r\nhello`],
      ["401", "GET /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 5\r\n\r\nhello"],
      ["404", "POST /api/v1/nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"],
      ["405", `DELETE /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${demo.keys.live}\r\nContent-Length: 5\r\n\r\nhello`],
      ["415", `POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${demo.keys.live}\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello`]
    ]
    for (const [name, request] of unread) {
      const outcome = await new Promise<{ readonly received: Buffer; readonly closedAt: number | null; readonly answers: number }>(
        (resolve) => {
          const socket = connect(server.port, "127.0.0.1")
          let received = Buffer.alloc(0)
          let closedAt: number | null = null
          const started = Date.now()
          socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])))
          socket.on("close", () => (closedAt ??= Date.now() - started))
          socket.on("error", () => (closedAt ??= Date.now() - started))
          socket.write(request + health)
          // Well past the ~24 ms of the report: the connection must still be there, and serve one more.
          setTimeout(() => socket.write(health), 300)
          setTimeout(() => {
            socket.destroy()
            resolve({ received, closedAt, answers: parseSequence(received).answers.length })
          }, 1_500)
        }
      )
      const shown = `${name}: ${outcome.received.toString("latin1")}`
      const { answers, rest } = parseSequence(outcome.received)
      expect(answers[0]?.headers["connection"], shown).toBe("keep-alive")
      expect(answers.map((a) => a.status).slice(1), shown).toEqual([200, 200])
      expect(outcome.closedAt, shown).toBe(null)
      expect(rest, shown).toBe(0)
    }
  })

  it("answers a request asking for an Upgrade and closes the connection, saying so (nothing left hanging)", async () => {
    const requests = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" +
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    const { closed, received } = await pipeline(server.port, requests, 2)
    const { answers } = parseSequence(received)
    expect(answers[0]?.status, received.toString("latin1")).toBe(200)
    expect(answers[0]?.headers["connection"]).toBe("close")
    expect(closed || answers.length === 2).toBe(true)
  })
})
