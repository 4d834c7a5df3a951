/**
 * A finishing pass over the generated OpenAPI document, attached to the API as
 * its `OpenApi.Transform` annotation so every consumer (openapi.json, the
 * docs page) gets the same document.
 *
 * The platform adds its own `HttpApiDecodeError` body to every operation;
 * Parley answers schema failures with INVALID_REQUEST in the common error
 * shape instead (the server converts them), so the document says that.
 */
import { JSONSchema, Schema } from "effect"
import { EVENT_DESCRIPTIONS, EventPayload, OptOutEventPayload, OptOutEventType } from "./Events.js"
import { IDEMPOTENCY_HEADER } from "./Requests.js"

const DECODE_ERROR_REF = "#/components/schemas/HttpApiDecodeError"
const INVALID_REQUEST_REF = "#/components/schemas/Error_INVALID_REQUEST"
const PLATFORM_ONLY_SCHEMAS = new Set(["HttpApiDecodeError", "Issue", "PropertyKey"])

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const isJsonObject = (value: unknown): value is { readonly [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const replaceDecodeError = (value: Json): Json => {
  if (Array.isArray(value)) {
    const replaced = value.map(replaceDecodeError)
    // anyOf lists may now name INVALID_REQUEST twice
    const seen = new Set<string>()
    return replaced.filter((item) => {
      const key = JSON.stringify(item)
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }
  if (isJsonObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]): [string, Json] =>
        key === "$ref" && inner === DECODE_ERROR_REF ? [key, INVALID_REQUEST_REF] : [key, replaceDecodeError(inner)]
      )
    )
  }
  return value
}

const SIGNING =
  "Posted as JSON with Standard Webhooks v1 headers: `webhook-id` (the event id, the same on every retry), " +
  "`webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>` with " +
  "the endpoint's `whsec_` secret; during a rotation one signature per active secret, space-separated). Answer 2xx " +
  "to acknowledge; other answers and timeouts (15 s) are retried at once, then after about 5 s, 5 min, 30 min, 2 h, " +
  "5 h, 10 h and 10 h, never before your Retry-After. 410 Gone disables the endpoint."

/**
 * The events as OpenAPI 3.1 `webhooks`, one entry per kind, with the
 * EventPayload schema (the opt-out list's with OptOutEventPayload); their
 * named parts go to `components.schemas` like the API's own, so every `$ref`
 * resolves within the document.
 */
const webhooks = (definitions: Record<string, JSONSchema.JsonSchema7>): Record<string, unknown> => {
  const schemaOf = (payload: typeof EventPayload | typeof OptOutEventPayload) =>
    JSONSchema.fromAST(payload.ast, {
      definitions,
      definitionPath: "#/components/schemas/",
      target: "openApi3.1"
    })
  const actionSchema = schemaOf(EventPayload)
  const optOutSchema = schemaOf(OptOutEventPayload)
  const isOptOutEvent = Schema.is(OptOutEventType)
  return Object.fromEntries(
    Object.entries(EVENT_DESCRIPTIONS).map(([type, description]) => [type, {
      post: {
        summary: type,
        description: `${description}\n\n${SIGNING}`,
        requestBody: {
          required: true,
          content: { "application/json": { schema: isOptOutEvent(type) ? optOutSchema : actionSchema } }
        },
        responses: { "200": { description: "Any 2xx acknowledges the event." } }
      }
    }])
  )
}

/**
 * The response headers the server sends, declared so that generated clients can read them. The
 * platform derives no response headers from the contract, so they are added here, by what decides
 * them: every response has a request id; an operation behind the bearer key gets the rate-limit
 * headers once the key is authenticated (so not on 401), and its 429 `Retry-After`;
 * an operation taking an Idempotency-Key marks a replayed success.
 */
const RESPONSE_HEADERS: Record<string, Json> = {
  "X-Request-ID": {
    description:
      "The request's id, equal to `error.requestId` in an error body. A safe incoming `X-Request-ID` " +
      "(`[A-Za-z0-9._:-]`, at most 128 characters) is reused; otherwise the server makes one.",
    required: true,
    schema: { type: "string", maxLength: 128 },
    example: "req_5d2CS3vRk2Zp1GQ4Kx0fWe"
  },
  "RateLimit-Policy": {
    description:
      "The key's quota, IETF draft RateLimit headers: `<limit>;w=<window seconds>`. The window slides: no " +
      "`<window seconds>` in a row hold more than `<limit>` requests per API key, wherever they start (every " +
      "request counted once the key is authenticated, refusals for the organisation's state included). Sent on " +
      "every answer once the key is authenticated.",
    schema: { type: "string" },
    example: "60;w=60"
  },
  "RateLimit": {
    description:
      "What is left of the quota in the sliding window: `limit=<limit>, remaining=<requests left now>, " +
      "reset=<seconds until every request counted so far has left the window>`. Sent on every answer once the key " +
      "is authenticated.",
    schema: { type: "string" },
    example: "limit=60, remaining=59, reset=60"
  },
  "Retry-After": {
    description:
      "Seconds to wait before the key may make another request: until the oldest requests still counted leave the " +
      "sliding window. Never more than the window.",
    required: true,
    schema: { type: "integer", minimum: 0 },
    example: 42
  },
  "Idempotent-Replayed": {
    description:
      "`true` when this answer replays the first one given to the same Idempotency-Key and payload (nothing new " +
      "was created); absent on the first answer.",
    schema: { type: "string", enum: ["true"] }
  }
}

const headerRef = (name: string): Json => ({ $ref: `#/components/headers/${name}` })

const isSecured = (operation: { readonly [key: string]: Json }): boolean =>
  Array.isArray(operation.security) && operation.security.some((requirement) => isJsonObject(requirement) && Object.keys(requirement).length > 0)

const takesIdempotencyKey = (operation: { readonly [key: string]: Json }): boolean =>
  Array.isArray(operation.parameters) &&
  operation.parameters.some((parameter) => isJsonObject(parameter) && parameter.in === "header" && parameter.name === IDEMPOTENCY_HEADER)

/**
 * Answers given before the key is counted: 401 (no valid key). The body is read only after the key
 * (413, 415 and malformed JSON carry the rate-limit headers like any other answer).
 */
const BEFORE_AUTHENTICATION = new Set(["401"])

const headersOf = (operation: { readonly [key: string]: Json }, status: string): Record<string, Json> => {
  const secured = isSecured(operation)
  const success = status.startsWith("2")
  return {
    "X-Request-ID": headerRef("X-Request-ID"),
    ...(secured && !BEFORE_AUTHENTICATION.has(status) ? { "RateLimit-Policy": headerRef("RateLimit-Policy"), "RateLimit": headerRef("RateLimit") } : {}),
    ...(secured && status === "429" ? { "Retry-After": headerRef("Retry-After") } : {}),
    ...(success && takesIdempotencyKey(operation) ? { "Idempotent-Replayed": headerRef("Idempotent-Replayed") } : {})
  }
}

const withResponseHeaders = (paths: Json): Json => {
  if (!isJsonObject(paths)) return paths
  return Object.fromEntries(Object.entries(paths).map(([path, item]): [string, Json] => [
    path,
    !isJsonObject(item) ? item : Object.fromEntries(Object.entries(item).map(([method, operation]): [string, Json] => {
      if (!isJsonObject(operation) || !isJsonObject(operation.responses)) return [method, operation]
      const responses = Object.fromEntries(Object.entries(operation.responses).map(([status, response]): [string, Json] => [
        status,
        isJsonObject(response)
          ? { ...response, headers: { ...(isJsonObject(response.headers) ? response.headers : {}), ...headersOf(operation, status) } }
          : response
      ]))
      return [method, { ...operation, responses }]
    }))
  ]))
}

export const finishOpenApiDocument = (spec: Record<string, unknown>): Record<string, unknown> => {
  const components = isJsonObject(spec.components) ? spec.components : {}
  const schemas = isJsonObject(components.schemas) ? components.schemas : {}
  const paths = isJsonObject(spec.paths) ? spec.paths : {}
  const eventDefinitions: Record<string, JSONSchema.JsonSchema7> = {}
  const events = webhooks(eventDefinitions)
  return {
    ...spec,
    webhooks: events,
    paths: withResponseHeaders(replaceDecodeError(paths)),
    components: {
      ...components,
      headers: { ...(isJsonObject(components.headers) ? components.headers : {}), ...RESPONSE_HEADERS },
      schemas: {
        ...eventDefinitions,
        ...Object.fromEntries(Object.entries(schemas).filter(([name]) => !PLATFORM_ONLY_SCHEMAS.has(name)))
      }
    }
  }
}
