/**
 * Length limits count characters (Unicode code points), as JSON Schema's `maxLength` in the published
 * OpenAPI document does: a client that validates its request against the document must never be
 * refused by the server for a length the document allows, nor accepted for one it forbids.
 *
 * Property: for every limited field of the request bodies and the Idempotency-Key header, strings
 * around the limit made of ASCII, accented letters, emoji and other astral characters are judged
 * alike by an independent JSON Schema validator reading the OpenAPI document (@cfworker/json-schema,
 * which counts code points) and by the contract's schemas the server decodes with. Then the same on
 * the wire: the examples of the issue against a real server.
 */
import { Validator } from "@cfworker/json-schema"
import { CreateAiCallRequest, CreateMessageRequest, CreateWebhookEndpointRequest, IdempotencyHeaders, openApiDocument } from "@parley/core"
import { Either, Schema } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
interface Document {
  readonly components: { readonly schemas: Readonly<Record<string, Json>> }
  readonly paths: Readonly<Record<string, Readonly<Record<string, { readonly parameters?: ReadonlyArray<{ readonly name: string; readonly schema: Json }> }>>>>
}

/** The document as a client reads it: plain JSON. */
const doc = JSON.parse(JSON.stringify(openApiDocument())) as Document

/** A validator for one component of the document, resolving its `$ref`s inside the document. */
const documentValidator = (schema: Json): Validator =>
  new Validator({ ...(typeof schema === "object" && schema !== null && !Array.isArray(schema) ? schema : {}), components: doc.components }, "2020-12", false)

const componentValidator = (name: string): Validator => documentValidator({ $ref: `#/components/schemas/${name}` })

const idempotencyHeaderSchema = (): Json => {
  const parameter = doc.paths["/api/v1/messages"]?.["post"]?.parameters?.find((p) => p.name === "idempotency-key")
  if (parameter === undefined) throw new Error("POST /messages has no idempotency-key parameter in the document")
  return parameter.schema
}

/** Characters of every width: one UTF-16 unit (ASCII, é, 中) and two (emoji, a mathematical letter). */
const character = fc.oneof(
  fc.constantFrom("a", "é", "中", "😀", "𝔸", "🇫"),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => c !== "\u0000")
)

/** Strings of `limit - 3` to `limit + 3` characters, where a count in UTF-16 units and one in code points disagree. */
const aroundLimit = (limit: number) =>
  fc.integer({ min: Math.max(1, limit - 3), max: limit + 3 }).chain((length) =>
    fc.tuple(
      fc.array(character, { minLength: length, maxLength: length }),
      fc.constantFrom("a", "😀")
    ).map(([characters, filler]) =>
      // Mostly one filler character, so the string's length is near the limit in both counts.
      characters.map((c, index) => (index % 7 === 0 ? c : filler)).join("")
    )
  )

interface LimitedField {
  readonly name: string
  readonly limit: number
  readonly component: string
  /** Whether the contract's schema, as the server decodes with it, accepts the payload. */
  readonly accepts: (payload: unknown) => boolean
  readonly payload: (value: string) => unknown
}

const message = { to: "+14155550123", fromNumberSid: "PN1" }
const call = { to: "+14155550123", fromNumberSid: "PN1", botId: "bot_sales", mode: "follow_script" }

const acceptedBy = <A, I>(schema: Schema.Schema<A, I>) => (payload: unknown): boolean =>
  Either.isRight(Schema.decodeUnknownEither(schema)(payload))

const FIELDS: ReadonlyArray<LimitedField> = [
  { name: "body", limit: 5000, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (body) => ({ ...message, body }) },
  { name: "fromNumberSid (message)", limit: 64, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (fromNumberSid) => ({ ...message, fromNumberSid, body: "hi" }) },
  { name: "templateUuid", limit: 128, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (templateUuid) => ({ ...message, templateUuid }) },
  { name: "whatsAppContentSid", limit: 64, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (whatsAppContentSid) => ({ ...message, body: "hi", channel: "WhatsApp", whatsAppContentSid }) },
  { name: "whatsAppContentVariables value", limit: 1024, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (value) => ({ ...message, body: "hi", channel: "WhatsApp", whatsAppContentVariables: { "{{1}}": value } }) },
  { name: "record.id", limit: 64, component: "CreateMessageRequest", accepts: acceptedBy(CreateMessageRequest), payload: (id) => ({ ...message, body: "hi", record: { module: "Leads", id } }) },
  { name: "purposeMessage", limit: 4000, component: "CreateAiCallRequest", accepts: acceptedBy(CreateAiCallRequest), payload: (purposeMessage) => ({ ...call, purposeMessage }) },
  { name: "botId", limit: 128, component: "CreateAiCallRequest", accepts: acceptedBy(CreateAiCallRequest), payload: (botId) => ({ ...call, botId }) },
  { name: "fromNumberSid (AI call)", limit: 64, component: "CreateAiCallRequest", accepts: acceptedBy(CreateAiCallRequest), payload: (fromNumberSid) => ({ ...call, fromNumberSid }) },
  { name: "webhook description", limit: 256, component: "CreateWebhookEndpointRequest", accepts: acceptedBy(CreateWebhookEndpointRequest), payload: (description) => ({ url: "https://example.com/hook", enabledEvents: ["*"], description }) }
]

describe("the OpenAPI document and the contract's schemas agree on every length limit", () => {
  for (const field of FIELDS) {
    it(`${field.name}: at most ${field.limit} characters, in both`, () => {
      const validator = componentValidator(field.component)
      fc.assert(
        fc.property(aroundLimit(field.limit), (value) => {
          const payload = field.payload(value)
          const byDocument = validator.validate(payload).valid
          const byServer = field.accepts(payload)
          const characters = [...value].length
          expect({ characters, accepted: byServer }).toEqual({ characters, accepted: byDocument })
          expect(byDocument).toBe(characters <= field.limit)
        }),
        { numRuns: 100, seed: 23 }
      )
    })
  }

  it("Idempotency-Key: at most 128 characters, in both", () => {
    const validator = documentValidator(idempotencyHeaderSchema())
    const decode = Schema.decodeUnknownEither(IdempotencyHeaders)
    // Header values reach Node as Latin-1, one code unit per character: the letters of that range.
    const latin1 = fc.integer({ min: 120, max: 136 }).chain((length) =>
      fc.array(fc.constantFrom("k", "é", "ß", "ÿ"), { minLength: length, maxLength: length }).map((c) => c.join(""))
    )
    fc.assert(
      fc.property(fc.oneof(latin1, aroundLimit(128)), (key) => {
        const byDocument = validator.validate(key).valid
        const byServer = Either.isRight(decode({ "idempotency-key": key }))
        expect(byServer).toBe(byDocument)
      }),
      { numRuns: 100, seed: 23 }
    )
  })
})

describe("on the wire", () => {
  let server: TestServer
  let demo: DemoSummary
  let counter = 0
  const idem = () => `limits-${Date.now()}-${++counter}`

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "1000" } })
    demo = await server.demo()
  })

  afterAll(async () => {
    await server?.dispose()
  })

  const post = (path: string, payload: unknown) =>
    server.fetch(path, { method: "POST", key: demo.keys.test, headers: { "idempotency-key": idem() }, body: JSON.stringify(payload) })

  it("a body of 4,999 letters and one emoji (5,000 characters) is accepted; 5,001 characters are not", async () => {
    const sid = demo.numbers[0]!.sid
    const ack = await readJson<{ test: boolean }>(await post("/api/v1/messages", { to: "+14155550123", fromNumberSid: sid, body: `${"a".repeat(4999)}😀` }), 202)
    expect(ack.test).toBe(true)
    await readJson(await post("/api/v1/messages", { to: "+14155550123", fromNumberSid: sid, body: "😀".repeat(5000) }), 202)
    const refused = await expectError(await post("/api/v1/messages", { to: "+14155550123", fromNumberSid: sid, body: `${"a".repeat(5000)}😀` }), 400, "INVALID_REQUEST")
    expect(refused.message).toMatch(/body.*at most 5000 characters/)
  })

  it("a purposeMessage of 2,001 emoji (4,002 UTF-16 units) is accepted", async () => {
    const bot = demo.bots.find((candidate) => candidate.active)!
    await readJson(
      await post("/api/v1/ai-calls", {
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        botId: bot.id,
        mode: "deliver_specific_message",
        purposeMessage: "🙂".repeat(2001)
      }),
      202
    )
  })
})
