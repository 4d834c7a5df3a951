/**
 * Property-based fuzzing of every route of the contract over raw sockets.
 *
 * Routes come from the contract (`HttpApi.reflect(ParleyApi)`), so an endpoint
 * added to it is fuzzed without touching this file; valid bodies are built
 * from each payload's JSON Schema, with demo data where a field must name
 * something that exists. Each case then mutates the request: bodies with
 * fields dropped, retyped, added, huge or deeply nested, unicode and NUL
 * bytes, raw bytes, truncated JSON; odd media types and methods; junk path
 * ids, queries and headers; chunked transfer. The properties: every request
 * is answered within bounded time, never with a 5xx, always with a safe
 * `X-Request-ID`, and every error in the spec's shape with `requestId` equal
 * to that header.
 *
 * A fixed seed and PARLEY_FUZZ_RUNS cases (default 3,000 in `pnpm test`, the
 * size with which this seed reaches every layer the last test asks for (500
 * cases met no 413), and 10,000 in `pnpm test:soak`: see support/soak.ts);
 * `PARLEY_FUZZ_RUNS=100000 npx vitest run test/fuzz.test.ts` for a long run,
 * PARLEY_FUZZ_SEED to explore other seeds.
 */
import { fc, test } from "@fast-check/vitest"
import { HttpApi } from "@effect/platform"
import { ParleyApi } from "@parley/core"
import { JSONSchema, Option, type Schema } from "effect"
import { afterAll, beforeAll, describe, expect } from "vitest"
import { type RawOutcome, rawRequest, requestHead } from "./support/rawHttp.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { soakSize } from "./support/soak.js"

const RUNS = Number(process.env["PARLEY_FUZZ_RUNS"] ?? soakSize(3_000, 10_000))
const SEED = Number(process.env["PARLEY_FUZZ_SEED"] ?? "20261122")
/** A hang is what this catches, not slowness: generous for a loaded 2-core machine. */
const ANSWER_WITHIN_MS = 15_000
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

// ---------------------------------------------------------------------------------------------------------------
// The routes, from the contract

interface Route {
  readonly method: string
  /** With `:name` path parameters. */
  readonly path: string
  /** As reflect gives it: the decoded type is erased, only the encoded side matters here. */
  readonly payload: Option.Option<Schema.Schema<never, unknown>>
}

const contractRoutes: ReadonlyArray<Route> = (() => {
  const routes: Array<Route> = []
  HttpApi.reflect(ParleyApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) => {
      routes.push({ method: endpoint.method, path: endpoint.path, payload: endpoint.payloadSchema })
    }
  })
  return routes
})()

/** Paths beside the contract, and near misses, fuzzed too. */
const otherPaths = [
  "/healthz",
  "/carrier/inbound",
  "/api/v1/openapi.json",
  "/docs",
  "/api/v1/nope",
  "/api/v1",
  "/",
  "//api/v1/numbers",
  "/api/v1/messages/../numbers",
  "/api/v1/numbers/",
  "/%00",
  "/api/v1/%ZZ",
  "*"
]

// ---------------------------------------------------------------------------------------------------------------
// Valid bodies, from each payload's JSON Schema

interface JsonSchemaNode {
  readonly $ref?: string
  readonly type?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly const?: unknown
  readonly examples?: ReadonlyArray<unknown>
  readonly anyOf?: ReadonlyArray<JsonSchemaNode>
  readonly allOf?: ReadonlyArray<JsonSchemaNode>
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>
  readonly required?: ReadonlyArray<string>
  readonly items?: JsonSchemaNode
  readonly minItems?: number
  readonly minLength?: number
  readonly minimum?: number
}

type Json = null | boolean | number | string | ReadonlyArray<Json> | JsonObject
interface JsonObject {
  readonly [key: string]: Json
}

/** Array.isArray does not narrow a ReadonlyArray out of a union. */
const isJsonObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A plain example value of a JSON Schema node (first enum value, first example, shortest string…). */
const exampleOf = (node: JsonSchemaNode, defs: Readonly<Record<string, JsonSchemaNode>>, depth = 0): Json => {
  if (depth > 8) return null
  if (node.$ref !== undefined) {
    const target = defs[node.$ref.replace("#/$defs/", "")]
    return target === undefined ? null : exampleOf(target, defs, depth + 1)
  }
  const first = node.examples?.[0] ?? node.enum?.[0] ?? node.const
  if (first !== undefined) return JSON.parse(JSON.stringify(first)) as Json
  const alternative = node.anyOf?.[0] ?? node.allOf?.[0]
  if (alternative !== undefined) return exampleOf(alternative, defs, depth + 1)
  switch (node.type) {
    case "object": {
      const out: Record<string, Json> = {}
      for (const name of node.required ?? []) {
        const property = node.properties?.[name]
        if (property !== undefined) out[name] = exampleOf(property, defs, depth + 1)
      }
      return out
    }
    case "array":
      return node.items === undefined || (node.minItems ?? 0) === 0 ? [] : [exampleOf(node.items, defs, depth + 1)]
    case "string":
      return "x".repeat(Math.max(1, node.minLength ?? 1))
    case "integer":
    case "number":
      return node.minimum ?? 1
    case "boolean":
      return true
    default:
      return null
  }
}

/**
 * Seeds for one payload: its required fields, and its required fields plus
 * each optional one in turn (so "exactly one of" rules have a valid seed).
 * Fields that must name something that exists take demo values.
 */
const seedsFor = <A, I>(schema: Schema.Schema<A, I>, known: Readonly<Record<string, Json>>): Array<Json> => {
  const document = JSONSchema.make(schema) as JsonSchemaNode & { readonly $defs?: Record<string, JsonSchemaNode> }
  const defs = document.$defs ?? {}
  let root: JsonSchemaNode = document
  while (root.$ref !== undefined) root = defs[root.$ref.replace("#/$defs/", "")] ?? {}
  const fill = (names: ReadonlyArray<string>): Json => {
    const out: Record<string, Json> = {}
    for (const name of names) {
      const property = root.properties?.[name]
      const value = known[name] ?? (property === undefined ? null : exampleOf(property, defs))
      out[name] = value
    }
    return out
  }
  const required = root.required ?? []
  const optional = Object.keys(root.properties ?? {}).filter((name) => !required.includes(name))
  return [fill(required), ...optional.map((name) => fill([...required, name]))]
}

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries

/** Header values and names never carry CR or LF: that would be another request, not a header. */
const headerSafe = (text: string) => text.replace(/[\r\n]/g, " ")

const junkString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("\u0000", "a\u0000b", "\uD800", "\uFFFF", "🦜", "ℌ𝔢𝔩𝔩𝔬", "' OR 1=1 --", "${jndi:x}", "%00", "null"),
  fc.integer({ min: 1_000, max: 80_000 }).map((n) => "x".repeat(n))
)

const deeplyNested = fc.tuple(fc.integer({ min: 1, max: 3_000 }), fc.boolean()).map(([depth, arrays]) => {
  let value: Json = 1
  for (let i = 0; i < depth; i++) value = arrays ? [value] : { a: value }
  return value
})

const junkValue: fc.Arbitrary<Json> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v ?? null)) as Json), weight: 4 },
  { arbitrary: junkString, weight: 3 },
  { arbitrary: fc.constantFrom<Json>(0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, true, false, null, [], {}, ""), weight: 2 },
  { arbitrary: deeplyNested, weight: 1 }
)

type Mutation =
  | { readonly kind: "drop"; readonly pick: number }
  | { readonly kind: "retype"; readonly pick: number; readonly value: Json }
  | { readonly kind: "add"; readonly name: string; readonly value: Json }
  | { readonly kind: "nest"; readonly pick: number; readonly value: Json }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("drop" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("retype" as const), pick: fc.nat(), value: junkValue }),
  fc.record({ kind: fc.constant("add" as const), name: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("scheduled_for", "__proto__", "constructor", "Body", "to ")), value: junkValue }),
  fc.record({ kind: fc.constant("nest" as const), pick: fc.nat(), value: junkValue })
)

const applyMutation = (value: Json, m: Mutation): Json => {
  if (!isJsonObject(value)) return value
  const record: Record<string, Json> = { ...value }
  const keys = Object.keys(record)
  const key = keys.length === 0 ? undefined : keys["pick" in m ? m.pick % keys.length : 0]
  switch (m.kind) {
    case "drop":
      if (key !== undefined) delete record[key]
      return record
    case "retype":
      if (key !== undefined) record[key] = m.value
      return record
    case "add":
      // defineProperty: a key named __proto__ must become a field, not the prototype
      Object.defineProperty(record, m.name, { value: m.value, enumerable: true, writable: true, configurable: true })
      return record
    case "nest": {
      if (key === undefined) return record
      const inner = record[key]
      record[key] = isJsonObject(inner)
        ? { ...inner, [String(m.pick)]: m.value }
        : [inner ?? null, m.value]
      return record
    }
  }
}

type BodyPlan =
  | { readonly kind: "none" }
  | { readonly kind: "mutated"; readonly seed: number; readonly mutations: ReadonlyArray<Mutation>; readonly cut?: number }
  | { readonly kind: "json"; readonly value: Json }
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "text"; readonly text: string }

const bodyPlan: fc.Arbitrary<BodyPlan> = fc.oneof(
  { arbitrary: fc.constant({ kind: "none" as const }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("mutated" as const), seed: fc.nat(), mutations: fc.constant([]) }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant("mutated" as const),
      seed: fc.nat(),
      mutations: fc.array(mutation, { maxLength: 3 })
    }),
    weight: 8
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("mutated" as const),
      seed: fc.nat(),
      mutations: fc.array(mutation, { maxLength: 1 }),
      cut: fc.nat()
    }),
    weight: 1
  },
  { arbitrary: fc.record({ kind: fc.constant("json" as const), value: junkValue }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("bytes" as const), bytes: fc.uint8Array({ maxLength: 300 }) }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant("text" as const),
      text: fc.oneof(fc.string(), fc.constantFrom("From=%2B1&To=%2B2&Body=x", "a=1&a=2", "{", "[]", "\u0000"))
    }),
    weight: 1
  }
)

const contentType = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 8 },
  {
    arbitrary: fc.constantFrom(
      "application/ld+json",
      "application/vnd.api+json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json; charset=latin1",
      "application/jsonx",
      "text/json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "",
      "*/*",
      "application/",
      ";;;"
    ),
    weight: 3
  },
  { arbitrary: fc.string({ maxLength: 30 }).map(headerSafe), weight: 1 },
  { arbitrary: fc.constant(undefined), weight: 1 }
)

const method = (route: Route) =>
  fc.oneof(
    { arbitrary: fc.constant(route.method), weight: 8 },
    {
      arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", "PROPFIND", "FOO", "get", "CONNECT"),
      weight: 2
    }
  )

const pathSegment = fc.oneof(
  { arbitrary: fc.constantFrom("1", "42", "999999999999999999", "0", "-1", "1e3", "test_abc", "conv_x"), weight: 3 },
  { arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent), weight: 3 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 10 }).map(encodeURIComponent), weight: 1 },
  { arbitrary: fc.constantFrom("%ZZ", "..", "a%2Fb", "%00", "x".repeat(600)), weight: 1 }
)

const query = fc.option(
  fc.oneof(
    fc.string({ maxLength: 60 }).map((s) => `cursor=${encodeURIComponent(s)}`),
    fc.constantFrom("cursor=", "cursor=a&cursor=b", "%ZZ", "a[b]=1", "cursor=" + "x".repeat(600)),
    fc.string({ maxLength: 20 }).map(encodeURIComponent)
  ),
  { nil: undefined }
)

const junkHeader = fc.tuple(
  fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/),
    fc.constantFrom(
      "Content-Length",
      "Transfer-Encoding",
      "Host",
      "Expect",
      "Connection",
      "Upgrade",
      "Authorization",
      "Idempotency-Key",
      "X-Request-ID",
      "Content-Encoding",
      "X-HTTP-Method-Override",
      "Bad Name",
      "X:Y"
    )
  ),
  fc.oneof(
    { arbitrary: fc.string({ maxLength: 40 }).map(headerSafe), weight: 5 },
    {
      arbitrary: fc.constantFrom("chunked", "100-continue", "-1", "99999999999", "close", "keep-alive", "websocket", "gzip", "a\u0000b", "é"),
      weight: 4
    },
    { arbitrary: fc.constant("a".repeat(20_000)), weight: 1 }
  )
)

interface Case {
  readonly route: number
  readonly other: number | undefined
  readonly method: string
  readonly segments: ReadonlyArray<string>
  readonly query: string | undefined
  readonly key: "test" | "live" | "none" | "junk"
  readonly contentType: string | undefined
  readonly body: BodyPlan
  readonly chunked: boolean
  readonly requestId: string | undefined
  readonly idempotencyKey: string | undefined
  readonly headers: ReadonlyArray<readonly [string, string]>
}

const fuzzCase: fc.Arbitrary<Case> = fc.nat(contractRoutes.length - 1).chain((index) => {
  const route = contractRoutes[index] ?? contractRoutes[0]!
  return fc.record({
    route: fc.constant(index),
    other: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 8 },
      { arbitrary: fc.nat(otherPaths.length - 1), weight: 1 }
    ),
    method: method(route),
    segments: fc.array(pathSegment, { minLength: 2, maxLength: 2 }),
    query,
    key: fc.oneof(
      { arbitrary: fc.constant("test" as const), weight: 6 },
      { arbitrary: fc.constantFrom("live" as const, "none" as const, "junk" as const), weight: 3 }
    ),
    contentType,
    body: bodyPlan,
    chunked: fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 }),
    requestId: fc.option(
      fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), fc.string({ maxLength: 140 }).map(headerSafe)),
      { nil: undefined }
    ),
    idempotencyKey: fc.option(fc.oneof(fc.uuid(), fc.string({ maxLength: 140 }).map(headerSafe), fc.constant("same")), {
      nil: undefined,
      freq: 6
    }),
    headers: fc.oneof(
      { arbitrary: fc.constant([]), weight: 3 },
      { arbitrary: fc.array(junkHeader, { minLength: 1, maxLength: 3 }), weight: 1 }
    )
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The suite

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly requestId: string }
}

const isErrorBody = (value: unknown): value is ErrorBody => {
  if (typeof value !== "object" || value === null || !("error" in value)) return false
  const error = value.error
  return Object.keys(value).length === 1 && typeof error === "object" && error !== null &&
    "code" in error && typeof error.code === "string" &&
    "message" in error && typeof error.message === "string" && error.message.length > 0 &&
    "requestId" in error && typeof error.requestId === "string" &&
    Object.keys(error).length === 3
}

describe("fuzzing every route of the contract", () => {
  let server: TestServer
  let demo: DemoSummary
  const seeds = new Map<number, ReadonlyArray<Json>>()
  const statuses = new Map<number, number>()

  beforeAll(async () => {
    server = await TestServer.start({
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000000", PARLEY_SIM_STEP_MS: "20", PARLEY_INBOUND_UNSIGNED: "accept" }
    })
    demo = await server.demo()
    const known: Record<string, Json> = {
      to: "+12025550100",
      fromNumberSid: demo.numbers[0]?.sid ?? "",
      botId: demo.bots[0]?.id ?? "",
      templateUuid: demo.templates[0]?.id ?? "",
      scheduledFor: new Date(Date.now() + 86_400_000).toISOString(),
      record: { module: demo.records[0]?.module ?? "Contacts", id: demo.records[0]?.id ?? "1" },
      // event deliveries to a fuzzed webhook endpoint go nowhere: the discard port refuses at once
      url: "http://127.0.0.1:9/hook"
    }
    contractRoutes.forEach((route, index) => {
      if (Option.isSome(route.payload)) seeds.set(index, seedsFor(route.payload.value, known))
    })
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
    console.log(`fuzz: ${RUNS} cases, seed ${SEED}; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`)
  })

  const bodyBytes = (plan: BodyPlan, routeIndex: number): Buffer | undefined => {
    switch (plan.kind) {
      case "none":
        return undefined
      case "json":
        return Buffer.from(JSON.stringify(plan.value))
      case "bytes":
        return Buffer.from(plan.bytes)
      case "text":
        return Buffer.from(plan.text)
      case "mutated": {
        const pool = seeds.get(routeIndex) ?? [{}]
        const seed = pool[plan.seed % pool.length] ?? {}
        const text = JSON.stringify(plan.mutations.reduce(applyMutation, seed))
        return Buffer.from(plan.cut === undefined ? text : text.slice(0, plan.cut % (text.length + 1)))
      }
    }
  }

  const send = (c: Case): Promise<RawOutcome> => {
    const route = contractRoutes[c.route] ?? contractRoutes[0]!
    let segment = 0
    const concrete = c.other !== undefined
      ? otherPaths[c.other] ?? "/"
      : route.path.replace(/:\w+/g, () => c.segments[segment++ % c.segments.length] ?? "1")
    const target = c.query === undefined || concrete === "*" ? concrete : `${concrete}?${c.query}`
    const body = bodyBytes(c.body, c.route)
    const headers: Array<readonly [string, string]> = [["Host", "127.0.0.1"], ["Connection", "close"]]
    if (c.key === "test") headers.push(["Authorization", `Bearer ${demo.keys.test}`])
    if (c.key === "live") headers.push(["Authorization", `Bearer ${demo.keys.live}`])
    if (c.key === "junk") headers.push(["Authorization", "Bearer parley_live_nope"])
    if (c.contentType !== undefined) headers.push(["Content-Type", c.contentType])
    if (c.requestId !== undefined) headers.push(["X-Request-ID", c.requestId])
    if (c.idempotencyKey !== undefined) headers.push(["Idempotency-Key", c.idempotencyKey])
    // A declared length or chunking with no body would leave the server rightly waiting for it: junk framing
    // headers go only with a body, where they conflict with the real framing (a parser error to answer).
    headers.push(...c.headers.filter(([name]) => body !== undefined || !/^(content-length|transfer-encoding)$/i.test(name)))
    const pieces: Array<Buffer> = []
    if (body !== undefined && c.chunked) {
      headers.push(["Transfer-Encoding", "chunked"])
      for (let i = 0; i < body.length; i += 16 * 1024) {
        const piece = body.subarray(i, i + 16 * 1024)
        pieces.push(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]))
      }
      pieces.push(Buffer.from("0\r\n\r\n"))
    } else if (body !== undefined) {
      headers.push(["Content-Length", String(body.length)])
      pieces.push(body)
    }
    return rawRequest(server.port, {
      head: Buffer.from(requestHead(c.method, target, headers), "utf8"),
      body: pieces,
      timeoutMs: ANSWER_WITHIN_MS,
      expectBody: c.method !== "HEAD"
    })
  }

  test.prop([fuzzCase], { numRuns: RUNS, seed: SEED, endOnFailure: true })(
    "answers every request in time, never with a 5xx, errors in the spec's shape with X-Request-ID",
    async (c) => {
      const outcome = await send(c)
      if (outcome._tag !== "Answered") {
        throw new Error(`${outcome._tag}; received ${JSON.stringify(outcome.received.slice(0, 200))}`)
      }
      const { answer } = outcome
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      expect(answer.status, answer.body.slice(0, 300)).toBeGreaterThanOrEqual(100)
      expect(answer.status, answer.body.slice(0, 300)).toBeLessThan(500)
      const requestId = answer.headers["x-request-id"]
      expect(requestId, `status ${answer.status}`).toMatch(SAFE_REQUEST_ID)
      if (answer.status >= 400 && c.method !== "HEAD") {
        expect(answer.headers["content-type"]).toMatch(/^application\/json/)
        const body: unknown = JSON.parse(answer.body)
        expect(isErrorBody(body), answer.body.slice(0, 300)).toBe(true)
        if (isErrorBody(body)) expect(body.error.requestId).toBe(requestId)
        // nothing internal: no stack frame, no source path
        expect(answer.body).not.toMatch(/\\n\s+at |node:internal|\/src\/\S+\.ts/)
      }
    },
    Math.max(120_000, RUNS * 400)
  )

  test("reaches the handlers: valid bodies are accepted and errors come from every layer", () => {
    // Without this the suite could pass by never getting past the first 400.
    expect(statuses.get(202) ?? 0).toBeGreaterThan(0)
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0)
    for (const status of [400, 401, 404, 405, 413, 415]) expect(statuses.get(status) ?? 0, String(status)).toBeGreaterThan(0)
  })
})
