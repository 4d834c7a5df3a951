/**
 * `GET /metrics` in the Prometheus text format, two ways (both may be on):
 * - on the API port when PARLEY_METRICS_TOKEN is set, and then only with
 *   `Authorization: Bearer <that token>` (401 otherwise; 404 when it is unset);
 * - on a listener of its own, PARLEY_METRICS_PORT on PARLEY_METRICS_HOST
 *   (default 127.0.0.1), without a token: for a scraper on the same host or
 *   network namespace (a sidecar, a node agent).
 * A scrape first reads the database's figures (queue depth, the oldest
 * pending webhook delivery), so any replica reports the true queue.
 */
import { createServer, type Server } from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { NotFound, OptOutSource, SetupUnavailable, Unauthorized } from "@parley/core/internal"
import { Clock, Effect, Layer, Option, Redacted, Runtime } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { refusal } from "../http/ErrorResponses.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
import { constantTimeEqual } from "../providers/ProviderExchange.js"
import { Metrics } from "./Metrics.js"

/** Reads the database's figures into the gauges, then renders the registry. */
const scrape = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const metrics = yield* Metrics
  const now = yield* Clock.currentTimeMillis
  // Queued actions not yet handed to a provider: due now, scheduled by the sender (work_at up to the time
  // asked for), or held past it by the organisation's sending window. The actions_work index serves it.
  const [queue] = yield* sql<{ due: unknown; scheduled: unknown; held: unknown }>`
    SELECT COALESCE(SUM(CASE WHEN work_at <= ${now} THEN 1 ELSE 0 END), 0) AS due,
           COALESCE(SUM(CASE WHEN work_at > ${now} AND work_at <= due_at THEN 1 ELSE 0 END), 0) AS scheduled,
           COALESCE(SUM(CASE WHEN work_at > ${now} AND work_at > due_at THEN 1 ELSE 0 END), 0) AS held
    FROM actions WHERE work_at IS NOT NULL AND status = 'Queued' AND charged_at IS NULL`
  metrics.setQueueDepth("due", Number(queue?.due ?? 0))
  metrics.setQueueDepth("scheduled", Number(queue?.scheduled ?? 0))
  metrics.setQueueDepth("held", Number(queue?.held ?? 0))
  const [oldest] = yield* sql<{ oldest: string | null }>`
    SELECT MIN(e.timestamp) AS oldest FROM webhook_deliveries d
    JOIN events e ON e.id = d.event_id JOIN webhooks w ON w.id = d.webhook_id
    WHERE d.state = 'pending' AND w.disabled_at IS NULL`
  const since = oldest?.oldest === null || oldest?.oldest === undefined ? now : Date.parse(oldest.oldest)
  metrics.setWebhookOldestPending((now - since) / 1000)
  const optOuts = yield* sql<{ source: string; count: number | string }>`
    SELECT source, COUNT(*) AS count FROM opt_outs GROUP BY source`
  // Every source is shown, 0 included, so a query over the series never finds a source missing.
  const bySource = new Map(optOuts.map((row) => [row.source, Number(row.count)]))
  for (const source of OptOutSource.literals) metrics.setOptOuts(source, bySource.get(source) ?? 0)
  const text = yield* Effect.promise(() => metrics.registry.metrics())
  return { text, contentType: metrics.registry.contentType }
})

const answer = (scraped: { readonly text: string; readonly contentType: string }) =>
  HttpServerResponse.text(scraped.text, { contentType: scraped.contentType })

/** The route on the API port: 404 without a token configured, 401 without the right one. */
export const metricsRoute: Effect.Effect<PlainRoute, never, ServerConfig | SqlClient.SqlClient | Metrics> = Effect.gen(
  function*() {
    const config = yield* ServerConfig
    const context = yield* Effect.context<SqlClient.SqlClient | Metrics>()
    const handler = Option.match(config.metricsToken, {
      onNone: () => refusal(new NotFound({ message: "No route GET /metrics." })),
      onSome: (token) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const given = request.headers["authorization"] ?? ""
          if (!constantTimeEqual(given, `Bearer ${Redacted.value(token)}`)) {
            return yield* refusal(new Unauthorized({ message: "GET /metrics needs Authorization: Bearer <PARLEY_METRICS_TOKEN>." }))
          }
          return answer(yield* Effect.provide(scrape, context))
        }).pipe(
          Effect.catchTag("SqlError", () =>
            refusal(new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." })))
        )
    })
    return { method: "GET", path: "/metrics", handler }
  }
)

/** The listener of its own (PARLEY_METRICS_PORT), when configured: GET /metrics and nothing else. */
export const MetricsListenerLive = Layer.scopedDiscard(Effect.gen(function*() {
  const config = yield* ServerConfig
  if (Option.isNone(config.metricsPort)) return
  const port = config.metricsPort.value
  const run = Runtime.runPromise(yield* Effect.runtime<SqlClient.SqlClient | Metrics>())
  const server = yield* Effect.acquireRelease(
    Effect.sync(() =>
      createServer((request, response) => {
        if (request.method !== "GET" || (request.url ?? "").split("?")[0] !== "/metrics") {
          response.writeHead(404, { "content-type": "text/plain" }).end("Not found: GET /metrics only.\n")
          return
        }
        run(scrape).then(
          (scraped) => response.writeHead(200, { "content-type": scraped.contentType }).end(scraped.text),
          () => response.writeHead(503, { "content-type": "text/plain" }).end("The database did not answer.\n")
        )
      })
    ),
    (server: Server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )
  yield* Effect.async<void, Error>((resume) => {
    server.once("error", (cause) => resume(Effect.fail(cause)))
    server.listen({ port, host: config.metricsHost }, () => resume(Effect.void))
  }).pipe(Effect.orDie)
  yield* Effect.log(`Metrics on http://${config.metricsHost}:${port}/metrics`)
}))
