// The Promise client against a scripted HTTP server on 127.0.0.1: every endpoint of the contract is
// a method, answers decode to the contract's classes, 429/503 are retried as Retry explains with one
// Idempotency-Key per call; and the retry policy itself on Effect's TestClock.
import { describe, expect, it } from "@effect/vitest"
import { HttpApi, HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Effect, Fiber, Ref, TestClock } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { DEFAULT_RETRY_POLICY, retryDelay, withRetries } from "../src/client/Retry.js"
import {
  createParleyClient,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  ParleyApi,
  ParleyConnectionError,
  ParleyUnexpectedResponse,
  RateLimited,
  SetupUnavailable
} from "../src/index.js"

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}
interface Answer {
  readonly status: number
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** A server that answers from a script, one answer a request, and keeps what it was sent. */
let server: Server
let baseUrl = ""
let script: Array<Answer> = []
let seen: Array<Seen> = []

const errorBody = (code: string, message: string) => ({ error: { code, message, requestId: "req_1" } })
const ack = { id: "1042", status: "accepted", test: false }
const message = { to: "+14155550123", fromNumberSid: "PN1", body: "Hi", channel: "SMS" } as const

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString()))
    request.on("end", () => {
      seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body })
      const answer = script.shift() ?? { status: 500, body: errorBody("INTERNAL", "the script ran out") }
      const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? null)
      response.writeHead(answer.status, {
        "content-type": typeof answer.body === "string" ? "text/html" : "application/json",
        ...answer.headers
      })
      response.end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address: AddressInfo | string | null = server.address()
  baseUrl = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
beforeEach(() => {
  script = []
  seen = []
})

const client = (options: Partial<Parameters<typeof createParleyClient>[0]> = {}) =>
  createParleyClient({ baseUrl, apiKey: "parley_test_key", retry: { baseDelayMs: 1 }, ...options })

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => expect.fail("the call should have failed"), (error: unknown) => error)

describe("createParleyClient", () => {
  it("has a method for every endpoint of the contract, read from the contract", () => {
    const parley: unknown = client()
    const missing: Array<string> = []
    let endpoints = 0
    HttpApi.reflect(ParleyApi, {
      onGroup: () => undefined,
      onEndpoint: ({ endpoint, group }) => {
        endpoints++
        const methods: unknown = Reflect.get(Object(parley), group.identifier)
        if (typeof Reflect.get(Object(methods), endpoint.name) !== "function") {
          missing.push(`${group.identifier}.${endpoint.name}`)
        }
      }
    })
    expect(endpoints).toBeGreaterThan(10)
    expect(missing).toEqual([])
  })

  it("sends the key and the request, and resolves with the decoded answer", async () => {
    script = [{ status: 200, body: { items: [] } }, { status: 404, body: errorBody("NOT_FOUND", "no such message") }]
    const numbers = await client().resources.listNumbers()
    expect(numbers.items).toEqual([])
    const error = await rejection(client().messages.getMessage({ path: { id: "77" } }))
    expect(error).toBeInstanceOf(NotFound)
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ _tag: "NotFound", message: "no such message", requestId: "req_1" })
    expect(seen.map((s) => `${s.method} ${s.url} ${s.headers.authorization}`)).toEqual([
      "GET /api/v1/numbers Bearer parley_test_key",
      "GET /api/v1/messages/77 Bearer parley_test_key"
    ])
  })

  it("lets parts whose fields are all optional be left out", async () => {
    script = [{ status: 200, body: { items: [], nextCursor: null } }]
    await client().conversations.listConversations()
    expect(seen[0]?.url).toBe("/api/v1/conversations")
  })

  it("makes one Idempotency-Key per creation and keeps it across its retries of 429", async () => {
    let made = 0
    const parley = client({ idempotencyKey: () => `key-${++made}` })
    script = [
      { status: 429, body: errorBody("RATE_LIMITED", "slow down"), headers: { "retry-after": "0" } },
      { status: 429, body: errorBody("RATE_LIMITED", "slow down"), headers: { "retry-after": "0" } },
      { status: 202, body: ack },
      { status: 202, body: ack }
    ]
    expect(await parley.messages.createMessage({ payload: message })).toMatchObject(ack)
    await parley.messages.createMessage({ payload: message })
    expect(seen.map((s) => s.headers["idempotency-key"])).toEqual(["key-1", "key-1", "key-1", "key-2"])
    expect(JSON.parse(seen[0]?.body ?? "")).toMatchObject(message)
  })

  it("sends the caller's own Idempotency-Key unchanged, and none where the contract declares none", async () => {
    script = [{ status: 202, body: ack }, { status: 200, body: { id: "1042", status: "cancelled" } }]
    await client().aiCalls.createAiCall({
      headers: { "idempotency-key": "order-1042" },
      payload: { to: "+14155550123", fromNumberSid: "PN1", botId: "bot_sales", mode: "follow_script" }
    })
    await client().messages.cancelMessage({ path: { id: "1042" } })
    expect(seen.map((s) => s.headers["idempotency-key"])).toEqual(["order-1042", undefined])
  })

  it("retries 503 where resending cannot act twice (GET, or a keyed POST) and not otherwise", async () => {
    const unavailable = { status: 503, body: errorBody("SETUP_UNAVAILABLE", "storage away"), headers: { "retry-after": "0" } }
    script = [unavailable, { status: 200, body: { items: [] } }]
    await client().resources.listBots()
    script = [unavailable, { status: 202, body: ack }]
    await client().messages.createMessage({ payload: message })
    script = [unavailable]
    const error = await rejection(
      client().webhookEndpoints.createWebhookEndpoint({ payload: { url: "https://example.com/hook", enabledEvents: ["*"] } })
    )
    expect(error).toBeInstanceOf(SetupUnavailable)
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      "GET /api/v1/bots",
      "GET /api/v1/bots",
      "POST /api/v1/messages",
      "POST /api/v1/messages",
      "POST /api/v1/webhook-endpoints"
    ])
  })

  it("gives up after maxRetries, and at once when Retry-After is longer than it accepts", async () => {
    const limited = { status: 429, body: errorBody("RATE_LIMITED", "slow down"), headers: { "retry-after": "0" } }
    script = [limited, limited, limited]
    const exhausted = await rejection(client({ retry: { maxRetries: 2 } }).resources.listNumbers())
    expect(exhausted).toBeInstanceOf(RateLimited)
    expect(seen).toHaveLength(3)

    seen = []
    script = [{ ...limited, headers: { "retry-after": "3600" } }]
    const tooLong = await rejection(client().resources.listNumbers())
    expect(tooLong).toBeInstanceOf(RateLimited)
    expect(seen).toHaveLength(1)
  })

  it("refuses a request the contract's schemas refuse before sending it, as InvalidRequest", async () => {
    const error = await rejection(client().messages.createMessage({ payload: { ...message, to: "0123" } }))
    expect(error).toBeInstanceOf(InvalidRequest)
    expect(error).toMatchObject({ message: "to: must be an E.164 telephone number such as +14155550100" })
    expect(seen).toEqual([])
  })

  it("decodes any error of the catalogue, and calls other answers unexpected", async () => {
    script = [
      { status: 405, body: errorBody("METHOD_NOT_ALLOWED", "no") },
      { status: 502, body: "<html>Bad gateway</html>" },
      { status: 200, body: { items: "not a list" } }
    ]
    expect(await rejection(client().resources.listNumbers())).toBeInstanceOf(MethodNotAllowed)
    const proxy = await rejection(client().resources.listNumbers())
    expect(proxy).toBeInstanceOf(ParleyUnexpectedResponse)
    expect(proxy).toMatchObject({ status: 502, body: "<html>Bad gateway</html>" })
    const shape = await rejection(client().resources.listNumbers())
    expect(shape).toBeInstanceOf(ParleyUnexpectedResponse)
    expect(shape).toMatchObject({ status: 200 })
  })

  it("rejects with ParleyConnectionError when nothing answers", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const address: AddressInfo | string | null = closed.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const error = await rejection(
      createParleyClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k" }).resources.listNumbers()
    )
    expect(error).toBeInstanceOf(ParleyConnectionError)
  })
})

describe("retry policy", () => {
  const policy = DEFAULT_RETRY_POLICY
  const now = Date.parse("2026-03-02T10:00:00Z")

  it("waits for Retry-After in seconds or as a date, backs off without it, and gives up past maxDelayMs", () => {
    expect(retryDelay(policy, "7", 0, now)).toBe(7_000)
    expect(retryDelay(policy, "Mon, 02 Mar 2026 10:00:30 GMT", 0, now)).toBe(30_000)
    expect([0, 1, 2].map((retry) => retryDelay(policy, undefined, retry, now))).toEqual([500, 1_000, 2_000])
    expect(retryDelay(policy, undefined, 30, now)).toBe(policy.maxDelayMs)
    expect(retryDelay(policy, "61", 0, now)).toBeUndefined()
  })

  it.effect("sends again only once Retry-After has passed", () =>
    Effect.gen(function*() {
      const sent = yield* Ref.make(0)
      const stub = HttpClient.make((request) =>
        Effect.map(Ref.updateAndGet(sent, (n) => n + 1), (n) =>
          HttpClientResponse.fromWeb(
            request,
            n === 1 ? new Response("{}", { status: 429, headers: { "retry-after": "5" } }) : new Response("{}")
          ))
      )
      const fiber = yield* Effect.fork(withRetries()(stub).execute(HttpClientRequest.get("http://parley.test/api/v1/bots")))
      yield* TestClock.adjust("4999 millis")
      expect(yield* Ref.get(sent)).toBe(1)
      yield* TestClock.adjust("1 millis")
      const response = yield* Fiber.join(fiber)
      expect(response.status).toBe(200)
      expect(yield* Ref.get(sent)).toBe(2)
    }))
})
