/**
 * `GET /oauth/hubspot/callback`: where HubSpot sends the browser back after an install. Answers a small HTML
 * page naming the connected user and portal, or saying in words what went wrong — never a stack or a token.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Crm } from "@parley/core/domain"
import { Effect } from "effect"
import { escape } from "../../admin/Html.js"
import type { PlainRoute } from "../../http/PlainRoutes.js"
import { CALLBACK_PATH, complete } from "./HubSpotConnect.js"

const page = (status: number, title: string, text: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body><h1>${escape(title)}</h1><p>${escape(text)}</p>` +
      `<p><a href="/admin/crm">Back to the Parley console</a></p></body></html>`,
    { status, contentType: "text/html; charset=utf-8" }
  )

export const callbackRoutes = Effect.gen(function*() {
  const context = yield* Effect.context<Exclude<Effect.Effect.Context<ReturnType<typeof complete>>, never>>()
  const builtIn = yield* Crm.Crm
  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
    const param = (name: string) => query.get(name) ?? undefined
    return yield* complete(builtIn, { code: param("code"), state: param("state"), error: param("error") }).pipe(
      Effect.map((done) =>
        page(200, "HubSpot connected", `Parley now works in HubSpot as ${done.user}, in portal ${done.hubId}${done.hubDomain === "" ? "" : ` (${done.hubDomain})`}. You can close this page.`)
      ),
      Effect.catchTag("HubSpotConnectFailed", (failed) => Effect.succeed(page(failed.status, "HubSpot was not connected", failed.message))),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.annotateLogs(Effect.logError("hubspot callback failed"), { cause: error._tag }),
          page(503, "HubSpot was not connected", "Parley could not store the connection; try again shortly.")
        )
      ),
      Effect.provide(context)
    )
  })
  const routes: ReadonlyArray<PlainRoute> = [{ method: "GET", path: CALLBACK_PATH, handler }]
  return routes
})
