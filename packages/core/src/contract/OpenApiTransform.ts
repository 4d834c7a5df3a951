/**
 * A finishing pass over the generated OpenAPI document, attached to the API as
 * its `OpenApi.Transform` annotation so every consumer (openapi.json, the
 * docs page) gets the same document.
 *
 * The platform adds its own `HttpApiDecodeError` body to every operation;
 * Parley answers schema failures with INVALID_REQUEST in the common error
 * shape instead (the server converts them), so the document says that.
 */
import { JSONSchema } from "effect"
import { EVENT_DESCRIPTIONS, EventPayload } from "./Events.js"

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
 * The events as OpenAPI 3.1 `webhooks`, one entry per kind, all with the
 * EventPayload schema; its named parts go to `components.schemas` like the
 * API's own, so every `$ref` resolves within the document.
 */
const webhooks = (definitions: Record<string, JSONSchema.JsonSchema7>): Record<string, unknown> => {
  const schema = JSONSchema.fromAST(EventPayload.ast, {
    definitions,
    definitionPath: "#/components/schemas/",
    target: "openApi3.1"
  })
  return Object.fromEntries(
    Object.entries(EVENT_DESCRIPTIONS).map(([type, description]) => [type, {
      post: {
        summary: type,
        description: `${description}\n\n${SIGNING}`,
        requestBody: { required: true, content: { "application/json": { schema } } },
        responses: { "200": { description: "Any 2xx acknowledges the event." } }
      }
    }])
  )
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
    paths: replaceDecodeError(paths),
    components: {
      ...components,
      schemas: {
        ...eventDefinitions,
        ...Object.fromEntries(Object.entries(schemas).filter(([name]) => !PLATFORM_ONLY_SCHEMAS.has(name)))
      }
    }
  }
}
