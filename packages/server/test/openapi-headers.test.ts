/**
 * The response headers the OpenAPI document declares are the ones the server sends: for answers of
 * every kind (success, a replayed creation, errors after and before the key is read, 429), each of
 * Parley's own headers on the response is declared for that operation and status, and each header
 * declared as required is on the response.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { PN1 } from "./support/demo.js"

interface HeaderObject {
  readonly $ref?: string
  readonly required?: boolean
}
interface Document {
  readonly paths: Readonly<Record<string, Readonly<Record<string, {
    readonly responses: Readonly<Record<string, { readonly headers?: Readonly<Record<string, HeaderObject>> }>>
  }>>>>
  readonly components: { readonly headers?: Readonly<Record<string, HeaderObject>> }
}

/** The headers Parley adds of its own; the others (content-type, date, …) are HTTP's. */
const PARLEY_HEADERS = ["x-request-id", "ratelimit-policy", "ratelimit", "retry-after", "idempotent-replayed"]

const RATE_LIMIT = 4

let server: TestServer
let demo: DemoSummary
let doc: Document

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) } })
  demo = await server.demo()
  doc = (await (await server.fetch("/api/v1/openapi.json")).json()) as Document
})

afterAll(async () => {
  await server?.dispose()
})

/** The declared headers of one answer, by lower-case name, with whether each is required. */
const declared = (method: string, path: string, status: number): ReadonlyMap<string, boolean> => {
  const response = doc.paths[path]?.[method]?.responses[String(status)]
  expect(response, `${method.toUpperCase()} ${path} declares no ${status} answer`).toBeDefined()
  const headers = new Map<string, boolean>()
  for (const [name, header] of Object.entries(response?.headers ?? {})) {
    const resolved = header.$ref === undefined ? header : doc.components.headers?.[header.$ref.replace("#/components/headers/", "")]
    expect(resolved, `${name}: ${header.$ref} does not resolve`).toBeDefined()
    headers.set(name.toLowerCase(), resolved?.required === true)
  }
  return headers
}

const agree = (method: string, path: string, response: Response) => {
  const headers = declared(method, path, response.status)
  const sent = PARLEY_HEADERS.filter((name) => response.headers.has(name))
  for (const name of sent) {
    expect(headers.has(name), `${method.toUpperCase()} ${path} ${response.status} sends ${name}, which the document does not declare`).toBe(true)
  }
  for (const [name, required] of headers) {
    if (required) expect(sent, `${method.toUpperCase()} ${path} ${response.status} declares ${name} required but does not send it`).toContain(name)
  }
  return sent
}

const create = (key: string, idempotencyKey: string, payload: unknown, headers: Record<string, string> = {}) =>
  server.fetch("/api/v1/messages", {
    method: "POST",
    key,
    headers: { "idempotency-key": idempotencyKey, ...headers },
    body: typeof payload === "string" ? payload : JSON.stringify(payload)
  })

describe("the response headers of the OpenAPI document and of the server", () => {
  it("agree on successes, a replayed creation, errors and 429", async () => {
    const live = demo.keys.live
    const message = { to: "+14155550123", fromNumberSid: PN1, body: "Headers" }

    expect(agree("get", "/api/v1/numbers", await server.fetch("/api/v1/numbers", { key: live }))).toEqual(
      ["x-request-id", "ratelimit-policy", "ratelimit"]
    )
    const first = await create(live, "headers-1", message)
    expect(first.status).toBe(202)
    expect(agree("post", "/api/v1/messages", first)).not.toContain("idempotent-replayed")
    const replay = await create(live, "headers-1", message)
    expect(replay.status).toBe(202)
    expect(agree("post", "/api/v1/messages", replay)).toContain("idempotent-replayed")
    const invalid = await create(live, "headers-2", { ...message, to: "nope" })
    expect(invalid.status).toBe(400)
    agree("post", "/api/v1/messages", invalid)
    const limited = await server.fetch("/api/v1/numbers", { key: live })
    expect(limited.status).toBe(429)
    expect(agree("get", "/api/v1/numbers", limited)).toEqual(["x-request-id", "ratelimit-policy", "ratelimit", "retry-after"])

    const test = demo.keys.test
    const missing = await server.fetch("/api/v1/messages/999999", { key: test })
    expect(missing.status).toBe(404)
    agree("get", "/api/v1/messages/{id}", missing)
    const unauthorized = await server.fetch("/api/v1/numbers")
    expect(unauthorized.status).toBe(401)
    expect(agree("get", "/api/v1/numbers", unauthorized)).toEqual(["x-request-id"])
    const tooLarge = await create(test, "headers-3", JSON.stringify({ ...message, body: "x".repeat(70 * 1024) }))
    expect(tooLarge.status).toBe(413)
    agree("post", "/api/v1/messages", tooLarge)
    const notJson = await create(test, "headers-4", "to=+14155550123", { "content-type": "text/plain" })
    expect(notJson.status).toBe(415)
    agree("post", "/api/v1/messages", notJson)
  })
})
