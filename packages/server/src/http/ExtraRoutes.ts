/**
 * Routes beside /api/v1: the OpenAPI document, the documentation page (Scalar,
 * served inline so it works offline) and the load balancers' health check.
 */
import { HttpApiBuilder, HttpApiScalar, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { openApiDocument } from "@parley/core"
import { Effect, Layer } from "effect"

const OpenApiRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const document = HttpServerResponse.unsafeJson(openApiDocument())
    yield* router.get("/api/v1/openapi.json", Effect.succeed(document))
  })
)

/** Healthy when the database answers; 503 otherwise, so a balancer stops sending traffic here. */
const HealthRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* router.get(
      "/healthz",
      sql`SELECT 1 AS ok`.pipe(
        Effect.as(HttpServerResponse.unsafeJson({ status: "ok" })),
        Effect.catchAll(() => Effect.succeed(HttpServerResponse.unsafeJson({ status: "unavailable" }, { status: 503 })))
      )
    )
  })
)

const DocsRoute = HttpApiScalar.layer({ path: "/docs" })

export const ExtraRoutesLive = Layer.mergeAll(OpenApiRoute, HealthRoute, DocsRoute)
