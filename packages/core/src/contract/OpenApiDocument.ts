/**
 * The OpenAPI 3.1 document of /api/v1, derived from the contract.
 * The platform adds its own HttpApiDecodeError body to every operation; Parley
 * answers schema failures with INVALID_REQUEST in the common error shape
 * instead (the server converts them), so the document says that.
 */
import { OpenApi } from "@effect/platform"
import { ParleyApi } from "./Api.js"

const DECODE_ERROR_REF = "#/components/schemas/HttpApiDecodeError"
const INVALID_REQUEST_REF = "#/components/schemas/Error_INVALID_REQUEST"

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const replaceDecodeError = (value: Json): Json => {
  if (Array.isArray(value)) {
    const replaced = value.map(replaceDecodeError)
    // anyOf lists may now hold the same reference twice
    return replaced.filter((item, index) =>
      typeof item !== "object" || item === null || Array.isArray(item) ||
      replaced.findIndex((other) => JSON.stringify(other) === JSON.stringify(item)) === index
    )
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).map(([key, inner]): [string, Json] =>
      key === "$ref" && inner === DECODE_ERROR_REF ? [key, INVALID_REQUEST_REF] : [key, replaceDecodeError(inner)]
    )
    return Object.fromEntries(entries)
  }
  return value
}

export const openApiDocument = (): OpenApi.OpenAPISpec => {
  const spec = OpenApi.fromApi(ParleyApi)
  const { HttpApiDecodeError: _decodeError, Issue: _issue, PropertyKey: _propertyKey, ...schemas } =
    spec.components.schemas
  return {
    ...spec,
    paths: replaceDecodeError(spec.paths as unknown as Json) as unknown as OpenApi.OpenAPISpec["paths"],
    components: { ...spec.components, schemas }
  }
}
