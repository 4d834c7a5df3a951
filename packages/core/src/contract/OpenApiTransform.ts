/**
 * A finishing pass over the generated OpenAPI document, attached to the API as
 * its `OpenApi.Transform` annotation so every consumer (openapi.json, the
 * docs page) gets the same document.
 *
 * The platform adds its own `HttpApiDecodeError` body to every operation;
 * Parley answers schema failures with INVALID_REQUEST in the common error
 * shape instead (the server converts them), so the document says that.
 */
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

export const finishOpenApiDocument = (spec: Record<string, unknown>): Record<string, unknown> => {
  const components = isJsonObject(spec.components) ? spec.components : {}
  const schemas = isJsonObject(components.schemas) ? components.schemas : {}
  const paths = isJsonObject(spec.paths) ? spec.paths : {}
  return {
    ...spec,
    paths: replaceDecodeError(paths),
    components: {
      ...components,
      schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => !PLATFORM_ONLY_SCHEMAS.has(name)))
    }
  }
}
