/**
 * What a browser gets for a refusal the request pipeline makes under /admin (an address with no page, a
 * method a page does not take, a form over the body limit): the console's own page, with its headers (CSP,
 * no framing, no caching), instead of the API's JSON error. The pipeline asks before any route runs, so there
 * is no session here: the page links back to the console, which asks to sign in when needed.
 */
import type { HttpServerResponse } from "@effect/platform"
import { page } from "./ConsoleHttp.js"
import { html } from "./Html.js"
import { layout } from "./Layout.js"

const TITLES: Readonly<Record<number, string>> = {
  404: "Not found",
  405: "Not allowed",
  413: "Form too large"
}

const TEXTS: Readonly<Record<number, string>> = {
  404: "There is no console page at this address.",
  405: "This page cannot be used that way.",
  413: "The form sent more than this server accepts; nothing was changed. Go back, shorten what you typed and send it again."
}

export const consoleErrorPage = (path: string, status: number, message: string): HttpServerResponse.HttpServerResponse | null => {
  if (path !== "/admin" && !path.startsWith("/admin/")) return null
  return page(
    layout({
      title: TITLES[status] ?? "Refused",
      session: null,
      body: html`<p>${TEXTS[status] ?? message}</p><p><a href="/admin">Back to the console</a></p>`
    }),
    { status }
  )
}
