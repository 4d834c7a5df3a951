// The OpenAPI document derived from the HttpApi definition: the eleven
// operations of the spec's endpoint table and Parley's additions (issue 13: record lists, webhook endpoints) with their scope, parameters,
// success status and error responses in the common error shape; and the
// script that writes it.
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { main, writeOpenApi } from "../scripts/write-openapi.js"
import { openApiDocument } from "../src/contract/OpenApiDocument.js"

interface JsonSchema {
  readonly $ref?: string
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly oneOf?: ReadonlyArray<JsonSchema>
  readonly type?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly required?: ReadonlyArray<string>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly items?: JsonSchema
  readonly maxLength?: number
  readonly description?: string
}
interface Parameter {
  readonly name: string
  readonly in: string
  readonly required?: boolean
  readonly schema?: JsonSchema
}
interface Response {
  readonly description?: string
  readonly content?: Readonly<Record<string, { readonly schema?: JsonSchema }>>
  readonly headers?: Readonly<Record<string, { readonly $ref?: string }>>
}
interface Operation {
  readonly security?: ReadonlyArray<Readonly<Record<string, ReadonlyArray<string>>>>
  readonly parameters?: ReadonlyArray<Parameter>
  readonly requestBody?: { readonly required?: boolean; readonly content?: Readonly<Record<string, { readonly schema?: JsonSchema }>> }
  readonly responses: Readonly<Record<string, Response>>
}
interface Document {
  readonly openapi: string
  readonly info: { readonly title: string; readonly version: string }
  readonly paths: Readonly<Record<string, Readonly<Record<string, Operation>>>>
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>
    readonly securitySchemes?: Readonly<Record<string, { readonly type: string; readonly scheme?: string }>>
    readonly headers?: Readonly<Record<string, { readonly required?: boolean; readonly schema?: JsonSchema }>>
  }
}

/** The document as a client sees it: plain JSON. */
const doc = JSON.parse(JSON.stringify(openApiDocument())) as Document

type Kind = "list" | "get" | "create" | "cancel" | "subscribe" | "put" | "delete"

/** The filters of GET /messages and /ai-calls. */
const LIST_QUERY = ["cursor", "status", "since", "number"]

/** The spec's endpoint table. */
const ENDPOINTS: ReadonlyArray<{
  readonly method: "get" | "post" | "put" | "delete"
  readonly path: string
  readonly scope: string
  readonly success: "200" | "201" | "202" | "204"
  readonly kind: Kind
  /** Optional query parameters, when not only the conversations' cursor. */
  readonly query?: ReadonlyArray<string>
}> = [
  { method: "get", path: "/api/v1/numbers", scope: "resources:read", success: "200", kind: "list" },
  { method: "get", path: "/api/v1/bots", scope: "resources:read", success: "200", kind: "list" },
  { method: "get", path: "/api/v1/templates", scope: "resources:read", success: "200", kind: "list" },
  { method: "get", path: "/api/v1/conversations", scope: "messages:read", success: "200", kind: "list" },
  { method: "get", path: "/api/v1/conversations/{id}", scope: "messages:read", success: "200", kind: "get" },
  { method: "post", path: "/api/v1/messages", scope: "messages:write", success: "202", kind: "create" },
  { method: "post", path: "/api/v1/ai-calls", scope: "calls:write", success: "202", kind: "create" },
  { method: "get", path: "/api/v1/messages/{id}", scope: "messages:read", success: "200", kind: "get" },
  { method: "get", path: "/api/v1/ai-calls/{id}", scope: "calls:read", success: "200", kind: "get" },
  { method: "post", path: "/api/v1/messages/{id}/cancel", scope: "messages:write", success: "200", kind: "cancel" },
  { method: "post", path: "/api/v1/ai-calls/{id}/cancel", scope: "calls:write", success: "200", kind: "cancel" },
  { method: "get", path: "/api/v1/messages", scope: "messages:read", success: "200", kind: "list", query: LIST_QUERY },
  { method: "get", path: "/api/v1/ai-calls", scope: "calls:read", success: "200", kind: "list", query: LIST_QUERY },
  { method: "post", path: "/api/v1/webhook-endpoints", scope: "webhooks:write", success: "201", kind: "subscribe" },
  { method: "get", path: "/api/v1/webhook-endpoints", scope: "webhooks:read", success: "200", kind: "list" },
  { method: "get", path: "/api/v1/webhook-endpoints/{id}", scope: "webhooks:read", success: "200", kind: "get" },
  { method: "delete", path: "/api/v1/webhook-endpoints/{id}", scope: "webhooks:write", success: "200", kind: "delete" },
  { method: "get", path: "/api/v1/opt-outs", scope: "optouts:read", success: "200", kind: "list", query: ["cursor", "phone"] },
  { method: "get", path: "/api/v1/opt-outs/{phone}", scope: "optouts:read", success: "200", kind: "get" },
  { method: "put", path: "/api/v1/opt-outs/{phone}", scope: "optouts:write", success: "200", kind: "put" },
  { method: "delete", path: "/api/v1/opt-outs/{phone}", scope: "optouts:write", success: "204", kind: "delete" }
]

/** The status of every error code the issue names. */
const ISSUE_CODE_STATUS: Readonly<Record<string, string>> = {
  INVALID_REQUEST: "400",
  IDEMPOTENCY_KEY_REQUIRED: "400",
  IDEMPOTENCY_KEY_REUSED: "400",
  UNAUTHORIZED: "401",
  SCOPE_MISSING: "403",
  RESOURCE_DENIED: "403",
  SUBSCRIPTION_INACTIVE: "403",
  SEAT_INACTIVE: "403",
  OAUTH_REQUIRED: "403",
  IDENTITY_CHANGED: "403",
  CRM_PERMISSION_DENIED: "403",
  ALLOWANCE_EXHAUSTED: "403",
  AI_CALLS_DISABLED: "403",
  OUTSIDE_SENDING_HOURS: "403",
  NOT_FOUND: "404",
  ACTION_PROCESSING: "409",
  ACTION_NOT_CANCELLABLE: "409",
  PAYLOAD_TOO_LARGE: "413",
  RATE_LIMITED: "429",
  INTERNAL: "500",
  CRM_UNAVAILABLE: "502",
  PILOT_PENDING: "503",
  SETUP_UNAVAILABLE: "503"
}

/** With Parley's own additions (405 is the router's answer and appears on no operation). */
const CODE_STATUS: Readonly<Record<string, string>> = {
  ...ISSUE_CODE_STATUS,
  METHOD_NOT_ALLOWED: "405",
  UNSUPPORTED_MEDIA_TYPE: "415",
  DESTINATION_NOT_ALLOWED: "403",
  RECIPIENT_OPTED_OUT: "403",
  OPT_OUT_NOT_REMOVABLE: "409",
  CRM_REJECTED: "400",
  SETUP_REQUIRED: "503",
  CRM_RATE_LIMITED: "503"
}

const operation = (method: string, path: string): Operation => {
  const op = doc.paths[path]?.[method]
  if (op === undefined) throw new Error(`no ${method.toUpperCase()} ${path} in the document`)
  return op
}

const resolveRef = (schema: JsonSchema): JsonSchema => {
  if (schema.$ref === undefined) return schema
  const name = schema.$ref.replace("#/components/schemas/", "")
  const target = doc.components.schemas[name]
  if (target === undefined) throw new Error(`dangling $ref ${schema.$ref}`)
  return resolveRef(target)
}

/** The alternatives of a response schema (anyOf/oneOf flattened), resolved. */
const alternatives = (schema: JsonSchema): ReadonlyArray<JsonSchema> => {
  const union = schema.anyOf ?? schema.oneOf
  if (union !== undefined) return union.flatMap(alternatives)
  const resolved = resolveRef(schema)
  return resolved === schema ? [schema] : alternatives(resolved)
}

const errorSchemas = (response: Response): ReadonlyArray<JsonSchema> => {
  const schema = response.content?.["application/json"]?.schema
  if (schema === undefined) throw new Error("error response without an application/json schema")
  return alternatives(schema)
}

/** The `code` of an error schema in the `{error: {code, message, requestId}}` shape; throws otherwise. */
const errorCode = (schema: JsonSchema): string => {
  expect(schema.type).toBe("object")
  expect(schema.required).toEqual(["error"])
  const inner = schema.properties?.["error"]
  expect(inner).toBeDefined()
  const error = resolveRef(inner ?? {})
  expect(error.type).toBe("object")
  expect([...(error.required ?? [])].sort()).toEqual(["code", "message", "requestId"])
  expect(resolveRef(error.properties?.["message"] ?? {}).type).toBe("string")
  expect(resolveRef(error.properties?.["requestId"] ?? {}).type).toBe("string")
  const code = resolveRef(error.properties?.["code"] ?? {})
  expect(code.type).toBe("string")
  expect(code.enum).toHaveLength(1)
  return String(code.enum?.[0])
}

const codesAt = (op: Operation, status: string): ReadonlyArray<string> => {
  const response = op.responses[status]
  if (response === undefined) throw new Error(`no ${status} response`)
  return errorSchemas(response).map(errorCode)
}

describe("OpenAPI document", () => {
  it("is OpenAPI 3.1 with a versioned info block and an http bearer security scheme", () => {
    expect(doc.openapi).toMatch(/^3\.1\./)
    expect(doc.info.version).toBe("1.0.0")
    expect(doc.components.securitySchemes?.["bearer"]).toMatchObject({ type: "http", scheme: "bearer" })
  })

  it("lists exactly the operations of the spec and Parley's additions, under /api/v1", () => {
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`)
    )
    expect(listed.sort()).toEqual(ENDPOINTS.map((e) => `${e.method.toUpperCase()} ${e.path}`).sort())
  })

  describe.each(ENDPOINTS)("$method $path", ({ kind, method, path, query, scope, success }) => {
    const op = operation(method, path)

    it(`requires bearer with scope ${scope}`, () => {
      expect(op.security).toEqual([{ bearer: [scope] }])
    })

    it(`answers ${success} on success and no other 2xx`, () => {
      const ok = Object.keys(op.responses).filter((s) => s.startsWith("2"))
      expect(ok).toEqual([success])
      const schema = op.responses[success]?.content?.["application/json"]?.schema
      if (success === "204") expect(schema).toBeUndefined()
      else expect(schema).toBeDefined()
    })

    it("declares its path, query and header parameters", () => {
      const params = (op.parameters ?? []).map((p) => [p.in, p.name, p.required === true])
      const expected: Array<[string, string, boolean]> = []
      if (path.includes("{id}")) expected.push(["path", "id", true])
      if (path.includes("{phone}")) expected.push(["path", "phone", true])
      if (path.startsWith("/api/v1/conversations")) expected.push(["query", "cursor", false])
      for (const name of query ?? []) expected.push(["query", name, false])
      if (kind === "create") expected.push(["header", "idempotency-key", true])
      expect(params.sort()).toEqual(expected.sort())
    })

    it("answers 400/401/403/429/500/503 in the common error shape, each code under its own status", () => {
      for (const status of ["400", "401", "403", "429", "500", "503"]) {
        expect(Object.keys(op.responses), status).toContain(status)
      }
      for (const [status, response] of Object.entries(op.responses)) {
        if (status.startsWith("2")) continue
        for (const schema of errorSchemas(response)) {
          const code = errorCode(schema)
          expect(CODE_STATUS[code], `${code} under ${status}`).toBe(status)
        }
      }
      expect(codesAt(op, "400")).toContain("INVALID_REQUEST")
      expect(codesAt(op, "401")).toContain("UNAUTHORIZED")
      expect(codesAt(op, "403")).toEqual(expect.arrayContaining([
        "SCOPE_MISSING",
        "SUBSCRIPTION_INACTIVE",
        "SEAT_INACTIVE",
        "OAUTH_REQUIRED",
        "IDENTITY_CHANGED"
      ]))
      expect(codesAt(op, "429")).toContain("RATE_LIMITED")
      expect(codesAt(op, "500")).toContain("INTERNAL")
      expect(codesAt(op, "503")).toEqual(expect.arrayContaining(["PILOT_PENDING", "SETUP_UNAVAILABLE"]))
    })

    if (kind === "create") {
      it("answers 409 ACTION_PROCESSING, 413 PAYLOAD_TOO_LARGE and the idempotency 400s and resource 403s", () => {
        expect(codesAt(op, "409")).toContain("ACTION_PROCESSING")
        expect(codesAt(op, "413")).toContain("PAYLOAD_TOO_LARGE")
        expect(codesAt(op, "400")).toEqual(
          expect.arrayContaining(["IDEMPOTENCY_KEY_REQUIRED", "IDEMPOTENCY_KEY_REUSED"])
        )
        expect(codesAt(op, "403")).toEqual(
          expect.arrayContaining(["RESOURCE_DENIED", "ALLOWANCE_EXHAUSTED", "CRM_PERMISSION_DENIED"])
        )
        if (path.endsWith("/ai-calls")) expect(codesAt(op, "403")).toContain("AI_CALLS_DISABLED")
        if (path.endsWith("/messages")) expect(codesAt(op, "403")).toContain("OUTSIDE_SENDING_HOURS")
        expect(op.requestBody?.required).toBe(true)
        const header = op.parameters?.find((p) => p.name === "idempotency-key")
        expect(header?.schema?.maxLength).toBe(128)
      })
    } else if (kind === "put") {
      it("takes a required body and answers 413 PAYLOAD_TOO_LARGE, with no idempotency key (a PUT is idempotent)", () => {
        expect(op.requestBody?.required).toBe(true)
        expect(codesAt(op, "413")).toContain("PAYLOAD_TOO_LARGE")
      })
    } else if (kind === "subscribe") {
      it("takes a required body, answers 413 PAYLOAD_TOO_LARGE, and needs no idempotency key", () => {
        expect(op.requestBody?.required).toBe(true)
        expect(codesAt(op, "413")).toContain("PAYLOAD_TOO_LARGE")
        expect(codesAt(op, "403")).toEqual(expect.arrayContaining(["RESOURCE_DENIED", "CRM_PERMISSION_DENIED"]))
      })
    } else {
      it(kind === "cancel" ? "has no request body; one sent anyway is checked (413, 415)" : "has no request body and no 413", () => {
        expect(op.requestBody).toBeUndefined()
        // A POST's body is read and checked like any POST's, after the key (issue 35, 10).
        if (kind === "cancel") expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["413", "415"]))
        else expect(Object.keys(op.responses)).not.toContain("413")
      })
    }

    if (kind === "get" || kind === "cancel" || kind === "delete") {
      it("answers 404 NOT_FOUND", () => {
        expect(codesAt(op, "404")).toEqual(["NOT_FOUND"])
      })
    } else {
      it("has no 404", () => {
        expect(Object.keys(op.responses)).not.toContain("404")
      })
    }

    if (kind === "cancel") {
      it("answers 409 ACTION_NOT_CANCELLABLE", () => {
        expect(codesAt(op, "409")).toContain("ACTION_NOT_CANCELLABLE")
      })
    }
  })

  it("puts the Limits table into the request schemas", () => {
    const message = resolveRef({ $ref: "#/components/schemas/CreateMessageRequest" })
    const call = resolveRef({ $ref: "#/components/schemas/CreateAiCallRequest" })
    const maxOf = (schema: JsonSchema, field: string) => resolveRef(schema.properties?.[field] ?? {}).maxLength
    expect(maxOf(message, "fromNumberSid")).toBe(64)
    expect(maxOf(message, "body")).toBe(5000)
    expect(maxOf(message, "templateUuid")).toBe(128)
    expect(maxOf(message, "whatsAppContentSid")).toBe(64)
    expect(maxOf(call, "fromNumberSid")).toBe(64)
    expect(maxOf(call, "botId")).toBe(128)
    expect(maxOf(call, "purposeMessage")).toBe(4000)
    expect([...(message.required ?? [])].sort()).toEqual(["fromNumberSid", "to"])
    expect([...(call.required ?? [])].sort()).toEqual(["botId", "fromNumberSid", "mode", "to"])
    expect(resolveRef(message.properties?.["channel"] ?? {}).enum).toEqual(["SMS", "WhatsApp"])
    expect(resolveRef(call.properties?.["mode"] ?? {}).enum).toEqual(["follow_script", "deliver_specific_message"])
  })

  it("shows mediaUrls, an array of URL strings with its description, on every message record and event", () => {
    const success = (path: string) => resolveRef(doc.paths[path]?.["get"]?.responses["200"]?.content?.["application/json"]?.schema ?? {})
    const itemOf = (page: JsonSchema) => resolveRef(resolveRef(page.properties?.["items"] ?? {}).items ?? {})
    const records = {
      "GET /messages/{id}": success("/api/v1/messages/{id}"),
      "GET /messages": itemOf(success("/api/v1/messages")),
      "GET /conversations/{id}": itemOf(success("/api/v1/conversations/{id}")),
      "event data": resolveRef(resolveRef({ $ref: "#/components/schemas/EventPayload" }).properties?.["data"] ?? {})
    }
    for (const [where, record] of Object.entries(records)) {
      const field = resolveRef(record.properties?.["mediaUrls"] ?? {})
      expect({ where, type: field.type, items: field.items?.type }).toEqual({ where, type: "array", items: "string" })
      expect(field.description, where).toMatch(/MediaUrl0.*empty array/s)
    }
  })

  it("every error schema in the document has the {error: {code, message, requestId}} shape and a description", () => {
    const errors = Object.entries(doc.components.schemas).filter(([name]) => name.startsWith("Error_"))
    expect(errors.map(([name]) => name.replace("Error_", ""))).toEqual(
      expect.arrayContaining(Object.keys(ISSUE_CODE_STATUS))
    )
    for (const [name, schema] of errors) {
      expect(errorCode(schema), name).toBe(name.replace("Error_", ""))
      expect(schema.description, name).toMatch(/\S/)
    }
  })

  it("declares the response headers the server sends, so generated clients can read them", () => {
    const headerNames = (path: string, method: string, status: string) =>
      Object.entries(doc.paths[path]?.[method]?.responses[status]?.headers ?? {}).map(([name, header]) => {
        expect(header.$ref, `${name} on ${method} ${path} ${status}`).toBe(`#/components/headers/${name}`)
        expect(doc.components.headers?.[name], `${name} is not in components.headers`).toBeDefined()
        return name
      })
    for (const { method, path } of ENDPOINTS) {
      const op = operation(method, path)
      for (const status of Object.keys(op.responses)) {
        const names = headerNames(path, method, status)
        expect(names, `${method} ${path} ${status}`).toContain("X-Request-ID")
        // Every operation is behind the key: its quota is told on every answer given once the key is read.
        // Only a 401 comes before the key is counted; the body (413, 415) is read after it.
        if (status === "401") expect(names).not.toContain("RateLimit")
        else expect(names, `${method} ${path} ${status}`).toEqual(expect.arrayContaining(["RateLimit-Policy", "RateLimit"]))
        expect(names.includes("Retry-After"), `${method} ${path} ${status}`).toBe(status === "429")
        expect(names.includes("Idempotent-Replayed"), `${method} ${path} ${status}`).toBe(
          status.startsWith("2") && (op.parameters ?? []).some((p) => p.name === "idempotency-key")
        )
      }
    }
    expect(doc.components.headers?.["X-Request-ID"]?.required).toBe(true)
    expect(doc.components.headers?.["Retry-After"]).toMatchObject({ required: true, schema: { type: "integer" } })
    // Creations are the operations that take an Idempotency-Key.
    expect(headerNames("/api/v1/messages", "post", "202")).toContain("Idempotent-Replayed")
    expect(headerNames("/api/v1/ai-calls", "post", "202")).toContain("Idempotent-Replayed")
  })

  it("keeps no HttpApiDecodeError and no dangling $ref", () => {
    const text = JSON.stringify(doc)
    expect(text).not.toContain("HttpApiDecodeError")
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? "")
    expect(refs.length).toBeGreaterThan(0)
    for (const ref of new Set(refs)) {
      expect(ref).toMatch(/^#\/components\/(schemas|headers)\//)
      const target = ref.startsWith("#/components/headers/")
        ? doc.components.headers?.[ref.replace("#/components/headers/", "")]
        : doc.components.schemas[ref.replace("#/components/schemas/", "")]
      expect(target, ref).toBeDefined()
    }
  })
})

describe("scripts/write-openapi.ts", () => {
  it("writes the pretty-printed document to the given path and answers where", () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-openapi-"))
    try {
      const target = join(dir, "nested", "openapi.json")
      const written = writeOpenApi(target)
      expect(written).toBe(target)
      const text = readFileSync(target, "utf8")
      expect(JSON.parse(text)).toEqual(doc)
      expect(text).toBe(`${JSON.stringify(doc, null, 2)}\n`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("main takes the path from its first argument and prints where it wrote", () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-openapi-"))
    try {
      const target = join(dir, "out.json")
      const lines: Array<string> = []
      const written = main([target], (line) => lines.push(line))
      expect(written).toBe(target)
      expect(lines).toEqual([`Wrote the OpenAPI document to ${target}`])
      expect(JSON.parse(readFileSync(target, "utf8"))).toEqual(doc)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
