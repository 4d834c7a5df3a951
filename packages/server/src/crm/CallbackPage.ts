/**
 * What a CRM's OAuth callback (`GET /oauth/<name>/callback`) answers the browser: a small HTML page naming
 * the connected user and account, or saying in words what went wrong (4xx/5xx) — never a stack trace or a
 * token — with a way back to the console (the CRM returns to the registered redirect URL, not to the page
 * that started the consent).
 */
import type { HttpServerRequest } from "@effect/platform"
import { page } from "../admin/ConsoleHttp.js"
import { html } from "../admin/Html.js"
import { layout } from "../admin/Layout.js"

/** A console page (its stylesheet, and its headers: CSP, no framing, no caching), outside the session. */
export const callbackPage = (status: number, title: string, text: string) =>
  page(
    layout({
      title,
      session: null,
      body: html`<p>${text}</p><p><a href="/admin/crm">Back to the Parley console</a></p>`
    }),
    { status }
  )

/** The callback's query parameters: `param(name)` is undefined when absent. */
export const callbackQuery = (request: HttpServerRequest.HttpServerRequest) => {
  const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
  return (name: string) => query.get(name) ?? undefined
}
