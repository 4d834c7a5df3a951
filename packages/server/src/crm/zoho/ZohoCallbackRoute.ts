/**
 * `GET /oauth/zoho/callback`: where Zoho sends the browser back after
 * consent. Answers a small HTML page naming the connected user and Zoho
 * organisation, or saying in words what went wrong (4xx/5xx) — never a stack
 * trace or a token.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { escape } from "../../admin/Html.js"
import type { PlainRoute } from "../../http/PlainRoutes.js"
import { CALLBACK_PATH, complete } from "./ZohoConnect.js"


const page = (status: number, title: string, text: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body><h1>${escape(title)}</h1><p>${escape(text)}</p>` +
      // Zoho returns here (the registered redirect URL), not to the console page that started the consent.
      `<p><a href="/admin/crm">Back to the Parley console</a></p></body></html>`,
    { status, contentType: "text/html; charset=utf-8" }
  )

export const zohoCallbackRoutes = Effect.gen(function*() {
  const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof complete>>>()
  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
    const param = (name: string) => query.get(name) ?? undefined
    return yield* complete({
      code: param("code"),
      state: param("state"),
      accountsServer: param("accounts-server"),
      error: param("error")
    }).pipe(
      Effect.map((done) =>
        page(200, "Zoho CRM connected", `Parley now works in Zoho CRM as ${done.user}${done.email === "" ? "" : ` (${done.email})`}, in ${done.zohoOrg}. You can close this page.`)
      ),
      Effect.catchTag("CrmConnectFailed", (failed) => Effect.succeed(page(failed.status, "Zoho CRM was not connected", failed.message))),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.annotateLogs(Effect.logError("zoho callback failed"), { cause: error._tag }),
          page(503, "Zoho CRM was not connected", "Parley could not store the connection; try again shortly.")
        )
      ),
      Effect.provide(context)
    )
  })
  const routes: ReadonlyArray<PlainRoute> = [{ method: "GET", path: CALLBACK_PATH, handler }]
  return routes
})
