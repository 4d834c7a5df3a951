/**
 * What a CRM's OAuth callback (`GET /oauth/<name>/callback`) answers the browser: a small HTML page naming
 * the connected user and account, or saying in words what went wrong (4xx/5xx) — never a stack trace or a
 * token — with a way back to the console (the CRM returns to the registered redirect URL, not to the page
 * that started the consent).
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { escape } from "../admin/Html.js"

export const callbackPage = (status: number, title: string, text: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body><h1>${escape(title)}</h1><p>${escape(text)}</p>` +
      `<p><a href="/admin/crm">Back to the Parley console</a></p></body></html>`,
    { status, contentType: "text/html; charset=utf-8" }
  )

/** The callback's query parameters: `param(name)` is undefined when absent. */
export const callbackQuery = (request: HttpServerRequest.HttpServerRequest) => {
  const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
  return (name: string) => query.get(name) ?? undefined
}
