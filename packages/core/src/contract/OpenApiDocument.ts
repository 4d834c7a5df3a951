/** The OpenAPI 3.1 document of /api/v1, derived from the contract (see OpenApiTransform for the finishing pass). */
import { OpenApi } from "@effect/platform"
import { ParleyApi } from "./Api.js"

export const openApiDocument = (): OpenApi.OpenAPISpec => OpenApi.fromApi(ParleyApi)
