/**
 * How the console reads requests and writes answers: its cookie, form bodies, query strings, and the headers
 * every console answer carries — a Content-Security-Policy without inline script, no framing, no caching of
 * pages (they show an organisation's settings, and a new key or signing secret once).
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { clientAddress } from "../http/ClientAddress.js"
import type { Html } from "./Html.js"
import { labelTableCells } from "./ResponsiveTables.js"

/**
 * `__Host-`: a browser takes it only from a secure origin, with Secure, Path=/ and no Domain, so a page on
 * another port or subdomain of the same host cannot plant a second session cookie beside it. Browsers
 * count https and loopback (`http://localhost`, `http://127.0.0.1`) as secure origins; the console served
 * over plain http on any other address cannot keep a session (see the README's console section).
 */
export const SESSION_COOKIE = "__Host-parley_admin"

/**
 * The console's Content-Security-Policy. `formTargets` are the other origins a form on the page may end up
 * at: Chromium applies `form-action` to the redirects after a post too, so a form whose answer redirects to
 * an external consent page (a CRM's accounts server) needs that origin here.
 */
export const contentSecurityPolicy = (formTargets: ReadonlyArray<string> = []): string =>
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  `form-action ${["'self'", ...formTargets].join(" ")}; frame-ancestors 'none'; base-uri 'none'`

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy(),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  // Sign-in links carry their token in the URL: it must not leave in a Referer. (Not no-referrer: with it,
  // Chromium sends `Origin: null` on the console's own form posts, which the same-origin check refuses.)
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
  "cross-origin-opener-policy": "same-origin"
}

export const page = (body: Html, options: { readonly status?: number; readonly headers?: Record<string, string> } = {}) =>
  HttpServerResponse.text(`<!doctype html>\n${labelTableCells(body.text)}`, {
    status: options.status ?? 200,
    contentType: "text/html; charset=utf-8",
    headers: { ...SECURITY_HEADERS, ...options.headers }
  })

/** After a POST: 303, so reloading the next page does not post again. */
export const redirect = (location: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.empty({ status: 303, headers: { ...SECURITY_HEADERS, location, ...headers } })

export const asset = (text: string, contentType: string) =>
  HttpServerResponse.text(text, {
    contentType,
    headers: { "x-content-type-options": "nosniff", "cache-control": "public, max-age=3600" }
  })

export const cookieValue = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** A console cookie as set: HttpOnly (no script reads it), SameSite=Lax, and what `__Host-` requires. */
export interface ConsoleCookie {
  readonly name: string
  readonly value: string
  readonly maxAgeSeconds: number
}

export const withCookies = (
  response: HttpServerResponse.HttpServerResponse,
  cookies: ReadonlyArray<ConsoleCookie>
): HttpServerResponse.HttpServerResponse =>
  cookies.reduce(
    (answer, cookie) =>
      HttpServerResponse.unsafeSetCookie(answer, cookie.name, cookie.value, {
        path: "/",
        secure: true,
        httpOnly: true,
        sameSite: "lax",
        maxAge: Duration.seconds(cookie.maxAgeSeconds)
      }),
    response
  )

export const sessionCookie = (token: string, maxAgeSeconds: number): ConsoleCookie => ({
  name: SESSION_COOKIE,
  value: token,
  maxAgeSeconds
})

export const clearedCookie: ConsoleCookie = { name: SESSION_COOKIE, value: "", maxAgeSeconds: 0 }

export interface ConsoleRequest {
  readonly method: string
  readonly query: URLSearchParams
  readonly form: URLSearchParams
  readonly cookie: string | undefined
  readonly origin: string | undefined
  readonly host: string | undefined
  /** The client's address (behind PARLEY_TRUSTED_PROXIES, the one they forwarded). */
  readonly address: string
  /** PARLEY_PUBLIC_URL's origin, when set: what a form post's Origin must be. */
  readonly publicOrigin: string | undefined
}

const originOf = (url: string): Option.Option<string> => {
  try {
    return Option.some(new URL(url).origin)
  } catch {
    return Option.none()
  }
}

export const readRequest: Effect.Effect<ConsoleRequest, never, HttpServerRequest.HttpServerRequest | ServerConfig> = Effect.gen(
  function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const config = yield* ServerConfig
    const peer = request.remoteAddress._tag === "Some" ? request.remoteAddress.value : "unknown"
    const url = new URL(request.url, "http://parley.local")
    // The pipeline read the body already (form routes only); a GET has none.
    const text = request.method === "POST" ? yield* Effect.orElseSucceed(request.text, () => "") : ""
    return {
      method: request.method,
      query: url.searchParams,
      form: new URLSearchParams(text),
      cookie: request.headers["cookie"],
      origin: request.headers["origin"],
      host: request.headers["host"],
      address: clientAddress(config.trustedProxies, peer, request.headers),
      publicOrigin: Option.getOrUndefined(Option.flatMap(config.publicUrl, originOf))
    }
  }
)

/** A cross-site form post sends its Origin; a same-origin one sends ours (or none, from older browsers). */
/**
 * With PARLEY_PUBLIC_URL set, the Origin must be its origin (a proxy need not forward Host); without it,
 * the request's own Host.
 */
export const sameOrigin = (request: ConsoleRequest): boolean => {
  if (request.origin === undefined) return true
  if (request.publicOrigin !== undefined) return Option.getOrUndefined(originOf(request.origin)) === request.publicOrigin
  if (request.host === undefined) return true
  try {
    return new URL(request.origin).host === request.host
  } catch {
    return false
  }
}
