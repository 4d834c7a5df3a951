/**
 * The one request path, for every route (the contract's and the plain ones):
 * - gives every request its id (a safe incoming `X-Request-ID` of ≤ 128
 *   characters is reused) and puts it on every response, errors included;
 * - reads a body only for the routes that take one (the contract's POST
 *   routes, the provider webhooks): anything else is answered without waiting
 *   for its body, and a large or chunked unread body closes the connection
 *   rather than being drained;
 * - asks a route that has one its admission (PlainRoute.admit: the provider
 *   callbacks' CallbackGate) before reading anything, so a refused callback
 *   costs no body reading, decoding or fiber;
 * - on the contract's routes, reads the body only once the key is checked and
 *   counted (ApiRouter): a request without a valid key is a 401 whatever its
 *   body, is never sent `100 Continue`, and every answer after the key carries
 *   the rate-limit headers;
 * - refuses bodies over the limit (413, by Content-Length up front and while
 *   streaming a chunked body), bodies of the wrong media type (415) and JSON
 *   nested deeper than MAX_JSON_DEPTH (400) before any parsing;
 * - answers unknown routes (404), wrong methods on any route (405 with `Allow`), malformed
 *   JSON (400) and unexpected failures (500, nothing internal in the body) in
 *   the spec's error shape;
 * - runs the route's work as an Effect program on the application's runtime
 *   (one fiber per request), then writes the answer with `node:http` directly;
 * - writes one structured log line per request at Info, with no key, token or body, naming the route by its
 *   template (`/api/v1/conversations/:id`), never the path sent: ids and unknown paths can carry phone numbers.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cookies, Headers, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import {
  type ApiError,
  Crypto,
  CurrentRequestId,
  Internal,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RequestTimeout,
  UnsupportedMediaType
} from "@parley/core/internal"
import { Cause, Context, Effect, type Exit, FiberRefs, LogLevel, Runtime } from "effect"
import { type ContractAnswer, type ContractRoute, matchRoute } from "./ApiRouter.js"
import {
  acceptsMediaType,
  type BodyKind,
  containsNul,
  encodesNul,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  parseJson
} from "./BodyRules.js"
import { describeCause, errorBody } from "./ErrorResponses.js"
import type { PlainRoute } from "./PlainRoutes.js"
import { DISCARD_LIMIT_BYTES, readBody } from "./RequestBody.js"
import { CurrentRequest, type RequestState } from "./RequestState.js"
import { type RequestObserver, type RequestTracer, routeTemplate, UNMATCHED_ROUTE } from "./Observation.js"

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export interface PipelineOptions {
  readonly maxBodyBytes: number
  readonly logLevel: LogLevel.LogLevel
  /** Told of every answer, by route template (observability/RequestObservation). */
  readonly observe?: RequestObserver
  /** Wraps a route's program in the request's span; absent when tracing is off (costs nothing then). */
  readonly trace?: RequestTracer
  /**
   * The page a browser gets instead of the API's JSON error for a path that is a person's (the console's
   * unknown pages, its oversized forms); null for the JSON error. Asked only for refusals made here.
   */
  readonly errorPage?: (path: string, status: number, message: string) => HttpServerResponse.HttpServerResponse | null
}

interface CompiledPlainRoute {
  readonly method: string
  readonly segments: ReadonlyArray<string | null>
  readonly params: ReadonlyArray<string | null>
  readonly route: PlainRoute
}

type Matched =
  | { readonly _tag: "Contract"; readonly route: ContractRoute; readonly params: Record<string, string> }
  | { readonly _tag: "Plain"; readonly route: PlainRoute }

/** What the pipeline writes: status, headers and a body (JSON text, bytes, or nothing). */
interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string | Uint8Array | undefined
  /** Set-Cookie lines (a plain route's cookies), one header each. */
  readonly cookies?: ReadonlyArray<string>
}

const splitPath = (path: string): Array<string> => {
  // A trailing slash names the same resource (`/api/v1/numbers/`), as the platform's router took it.
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path
  return trimmed.split("/").slice(1)
}

/** Whether the request announces a body (a length above zero, or chunks). */
const announcesBody = (request: IncomingMessage) =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? "0") > 0

/**
 * Whether an unread body is not worth draining: Node reads and discards what
 * is left of a request after its answer, to keep the connection. A 10 MB body
 * sent to an unknown route would be received in full; closing stops that.
 */
const unreadBodyTooLargeToDrain = (request: IncomingMessage) =>
  request.headers["transfer-encoding"] !== undefined ||
  Number(request.headers["content-length"] ?? "0") > DISCARD_LIMIT_BYTES

const nulInBody = new InvalidRequest({ message: "body: text must not contain NUL characters (U+0000)." })
const nulInUrl = new InvalidRequest({ message: "path and query must not contain NUL characters (%00)." })
const notJson = new InvalidRequest({ message: "body: not valid JSON." })
const tooDeep = new InvalidRequest({ message: `body: nested deeper than ${MAX_JSON_DEPTH} levels.` })
const internal = new Internal({ message: "Something went wrong on our side; retry with the same Idempotency-Key." })

const tooLarge = (max: number) => new PayloadTooLarge({ message: `The request body exceeds the limit of ${max} bytes.` })

const unsupportedMediaType = (kind: BodyKind) =>
  new UnsupportedMediaType({
    message: kind === "json"
      ? "Send the request body as JSON with Content-Type: application/json."
      : "Send the carrier's fields form-encoded (Content-Type: application/x-www-form-urlencoded)."
  })

/** The `Retry-After` a refusal names (a rate limit's), if any. */
const retryAfter = (error: ApiError): Record<string, string> =>
  error._tag === "RateLimited" && error.retryAfterSeconds !== undefined
    ? { "retry-after": String(error.retryAfterSeconds) }
    : {}

const errorAnswer = (error: ApiError, requestId: string, headers: Record<string, string> = {}): Answer => {
  const { body, status } = errorBody(error, requestId)
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }
}

/** The platform's request for a plain route: its headers as sent, its body as read (if any). */
const platformRequest = (request: IncomingMessage, text: string | undefined): HttpServerRequest.HttpServerRequest => {
  const url = request.url ?? "/"
  const method = request.method ?? "GET"
  const source = new Request(new URL(url, "http://parley.local"), {
    method,
    ...(text === undefined || method === "GET" || method === "HEAD" ? {} : { body: text })
  })
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === "transfer-encoding" || name === "content-length") continue
    headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  const remoteAddress = request.socket.remoteAddress
  return HttpServerRequest.fromWeb(source).modify({
    headers: Headers.fromInput(headers),
    ...(remoteAddress === undefined ? {} : { remoteAddress })
  })
}

/** A platform response as the pipeline writes it (plain routes answer JSON, text, HTML or nothing). */
const fromPlatformResponse = (response: HttpServerResponse.HttpServerResponse): Answer | null => {
  const headers: Record<string, string> = { ...response.headers }
  const cookies = Cookies.toSetCookieHeaders(response.cookies)
  switch (response.body._tag) {
    case "Empty":
      return { status: response.status, headers, body: undefined, cookies }
    case "Uint8Array":
      headers["content-type"] = response.body.contentType
      return { status: response.status, headers, body: response.body.body, cookies }
    default:
      return null
  }
}

export const makeRequestPipeline = <R>(
  options: PipelineOptions,
  runtime: Runtime.Runtime<R>,
  contract: ReadonlyArray<ContractRoute>,
  plain: ReadonlyArray<PlainRoute>
) => {
  const run = Runtime.runCallback(runtime)
  const logsRequests = LogLevel.lessThanEqual(options.logLevel, LogLevel.Info)
  const contractByMethod = new Map<string, Array<ContractRoute>>()
  const templates = new Map<ContractRoute, string>(contract.map((route) => [route, routeTemplate(route)]))
  for (const route of contract) contractByMethod.set(route.method, [...(contractByMethod.get(route.method) ?? []), route])
  const plainByMethod = new Map<string, Array<CompiledPlainRoute>>()
  for (const route of plain) {
    const parts = splitPath(route.path)
    const compiled = { method: route.method, segments: parts, params: parts.map(() => null), route }
    plainByMethod.set(route.method, [...(plainByMethod.get(route.method) ?? []), compiled])
  }

  const matchMethod = (method: string, parts: ReadonlyArray<string>): Matched | "malformed" | null => {
    const found = matchRoute(contractByMethod.get(method) ?? [], parts)
    if (found === "malformed") return found
    if (found !== null) return { _tag: "Contract", route: found.route, params: found.params }
    const other = matchRoute(plainByMethod.get(method) ?? [], parts)
    return other === null || other === "malformed" ? other : { _tag: "Plain", route: other.route.route }
  }

  /** HEAD is answered as GET without the body (Node leaves it out), as RFC 9110 asks and the platform did. */
  const match = (method: string, parts: ReadonlyArray<string>): Matched | "malformed" | null => {
    const found = matchMethod(method, parts)
    return found === null && method === "HEAD" ? matchMethod("GET", parts) : found
  }

  /** The refusal of a request to `path`: the API's JSON error, or the page the owner of the path shows for it. */
  const refusal = (path: string, error: ApiError, requestId: string, headers: Record<string, string> = {}): Answer => {
    const json = errorAnswer(error, requestId, headers)
    if (options.errorPage === undefined) return json
    const { body } = errorBody(error, requestId)
    const custom = options.errorPage(path, json.status, body.error.message)
    const answer = custom === null ? null : fromPlatformResponse(custom)
    return answer === null ? json : { ...answer, headers: { ...answer.headers, ...headers } }
  }

  const compiledPlain = [...plainByMethod.values()].flat()
  const notFoundOrWrongMethod = (method: string, path: string, parts: ReadonlyArray<string>, requestId: string) => {
    // In the contract's order, as the platform's router listed them, then the plain routes' (health, docs,
    // provider callbacks, the console): a path that exists answers 405 with what it allows, whichever it is.
    const allowed = [...new Set([
      ...contract.filter((route) => matchRoute([route], parts) !== null).map((r) => r.method),
      ...compiledPlain.filter((route) => matchRoute([route], parts) !== null).map((r) => r.method)
    ])]
    return allowed.length > 0 && !allowed.includes(method)
      ? refusal(
        path,
        new MethodNotAllowed({ message: `${method} is not allowed on ${path}; use ${allowed.join(", ")}.` }),
        requestId,
        { allow: allowed.join(", ") }
      )
      : refusal(path, new NotFound({ message: `No route ${method} ${path}.` }), requestId)
  }

  /** Unexpected: log what kind of failure it was, never its details, and answer a bare 500. */
  const unexpected = (cause: unknown, requestId: string): Effect.Effect<Answer> =>
    Effect.as(
      Effect.annotateLogs(Effect.logError("unexpected failure"), {
        requestId,
        cause: describeCause(Cause.isCause(cause) ? Cause.squash(cause) : cause)
      }),
      errorAnswer(internal, requestId)
    )

  const contractAnswer = (answer: ContractAnswer, requestId: string): Effect.Effect<Answer> => {
    switch (answer._tag) {
      case "Success":
        return Effect.succeed<Answer>({
          status: answer.status,
          headers: answer.body === undefined ? {} : { "content-type": "application/json" },
          body: answer.body
        })
      case "Failure":
        return Effect.succeed(errorAnswer(answer.error, requestId))
      case "Defect":
        return unexpected(answer.cause, requestId)
    }
  }

  const plainAnswer = (route: PlainRoute, request: IncomingMessage, text: string | undefined, requestId: string) =>
    Effect.flatMap(
      Effect.provideService(route.handler, HttpServerRequest.HttpServerRequest, platformRequest(request, text)),
      (response) => {
        const answer = fromPlatformResponse(response)
        if (response.status === 401 && route.unverified !== undefined) {
          const refused = route.unverified(request.socket.remoteAddress ?? "unknown", Date.now())
          if (refused !== null) return Effect.succeed(errorAnswer(refused, requestId, retryAfter(refused)))
        }
        return answer === null ? unexpected(new Error(`unsupported response body ${response.body._tag}`), requestId) : Effect.succeed(answer)
      }
    )

  return (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now()
    const incoming = request.headers["x-request-id"]
    const requestId = typeof incoming === "string" && SAFE_REQUEST_ID.test(incoming) ? incoming : Crypto.newId("req")
    const method = request.method ?? "GET"
    const url = request.url ?? "/"
    const q = url.indexOf("?")
    const path = q === -1 ? url : url.slice(0, q)
    const query = q === -1 ? "" : url.slice(q + 1)
    let bodyRead = false
    /** The matched route's template, for the log line; null until (unless) a route matches. */
    let route: string | null = null
    /** The same, as metrics and traces label it (`/api/v1/messages/{id}`; `unmatched`). */
    let observedRoute = UNMATCHED_ROUTE

    const write = (answer: Answer, extra?: Record<string, string>) => {
      if (response.headersSent || response.destroyed) return
      const headers: Record<string, string | number | Array<string>> = { ...answer.headers, ...extra, "x-request-id": requestId }
      if (answer.cookies !== undefined && answer.cookies.length > 0) headers["set-cookie"] = [...answer.cookies]
      // Answered before (or without) reading an announced body: close the connection if draining it would cost.
      if (!bodyRead && announcesBody(request) && unreadBodyTooLargeToDrain(request)) headers["connection"] = "close"
      // Parley upgrades to no other protocol; Node's parser stops reading the connection after an Upgrade
      // request, so requests pipelined behind it would never be answered: close it, and say so.
      if (request.headers["upgrade"] !== undefined) headers["connection"] = "close"
      if (answer.body !== undefined) headers["content-length"] = Buffer.byteLength(answer.body)
      response.writeHead(answer.status, headers)
      response.end(answer.body)
      options.observe?.(observedRoute, method, answer.status, (performance.now() - started) / 1000)
      if (logsRequests) {
        run(Effect.annotateLogs(Effect.logInfo("request"), {
          requestId,
          method,
          route,
          status: answer.status,
          durationMs: Math.round((performance.now() - started) * 10) / 10
        }))
      }
    }

    /**
     * Runs a route's program on the runtime, in a fiber of its own holding the request's id and state: given
     * to the fiber as it is made (no steps of its own, one copy of its fiber references), not scoped — the
     * fiber ends with the request.
     */
    const serve = (program: (state: RequestState) => Effect.Effect<Answer>) => {
      const state: RequestState = { headers: {}, provided: Context.empty() }
      const work = Effect.suspend(() => program(state))
      run(
        options.trace === undefined ? work : options.trace(work, { request, method, route: observedRoute, requestId, state }),
        {
          updateRefs: (refs, fiberId) =>
            FiberRefs.updateManyAs(refs, {
              entries: [[CurrentRequestId, [[fiberId, requestId]]], [CurrentRequest, [[fiberId, state]]]]
            }),
          onExit: (exit: Exit.Exit<Answer>) => {
            if (exit._tag === "Success") write(exit.value, state.headers)
            else write(errorAnswer(internal, requestId), state.headers)
          }
        }
      )
    }

    if (encodesNul(url)) return write(errorAnswer(nulInUrl, requestId))
    const parts = splitPath(path)
    const matched = match(method, parts)
    if (matched === "malformed") {
      return write(errorAnswer(new InvalidRequest({ message: "path: malformed percent-encoding." }), requestId))
    }
    if (matched === null) return write(notFoundOrWrongMethod(method, path, parts, requestId))
    route = matched.route.path
    observedRoute = matched._tag === "Contract" ? templates.get(matched.route) ?? UNMATCHED_ROUTE : matched.route.path
    if (matched._tag === "Plain" && matched.route.admit !== undefined) {
      const refused = matched.route.admit(request.socket.remoteAddress ?? "unknown", url, Date.now(), request.headers)
      if (refused !== null) return write(errorAnswer(refused, requestId, retryAfter(refused)))
    }

    const kind: BodyKind | undefined = matched._tag === "Contract"
      ? (matched.route.method === "POST" || matched.route.takesBody ? "json" : undefined)
      : matched.route.body

    /**
     * The body, read and checked (media type, size, NUL, and for JSON depth and syntax) in that order; a
     * refusal that must close the connection says so in `closing`. `done` is told once.
     */
    const readChecked = (
      bodyKind: BodyKind,
      closing: Record<string, string>,
      done: (outcome: { readonly _tag: "Refused"; readonly error: ApiError } | { readonly _tag: "Body"; readonly text: string; readonly value: unknown }) => void
    ): void => {
      const refuse = (error: ApiError) => done({ _tag: "Refused", error })
      if (announcesBody(request) && !acceptsMediaType(bodyKind, request.headers["content-type"] ?? "")) {
        return refuse(unsupportedMediaType(bodyKind))
      }
      readBody(request, response, options.maxBodyBytes, (body) => {
        bodyRead = true
        if (body._tag === "TooLarge") {
          if (body.closeConnection) closing["connection"] = "close"
          return refuse(tooLarge(options.maxBodyBytes))
        }
        if (body._tag === "Unreadable") {
          closing["connection"] = "close"
          return refuse(
            body.timedOut
              ? new RequestTimeout({ message: "The request body did not arrive in time." })
              : new InvalidRequest({ message: "body: could not be read." })
          )
        }
        if (bodyKind === "form") {
          return encodesNul(body.text) ? refuse(nulInBody) : done({ _tag: "Body", text: body.text, value: undefined })
        }
        if (body.text === "") return done({ _tag: "Body", text: body.text, value: null })
        if (nestsDeeperThan(body.text, MAX_JSON_DEPTH)) return refuse(tooDeep)
        const parsed = parseJson(body.text)
        if (parsed._tag === "NotJson") return refuse(notJson)
        if (containsNul(parsed.value)) return refuse(nulInBody)
        return done({ _tag: "Body", text: body.text, value: parsed.value })
      })
    }

    if (matched._tag === "Contract") {
      // The contract's routes are authorized first (ApiRouter); the body is read only after, through `payload`.
      const contractRoute = matched.route
      return serve((state) => {
        const payload: Effect.Effect<unknown, ApiError> = kind === undefined
          ? Effect.void
          : Effect.async<unknown, ApiError>((resume) =>
            readChecked(kind, state.headers, (outcome) =>
              resume(outcome._tag === "Body" ? Effect.succeed(outcome.value) : Effect.fail(outcome.error)))
          )
        const input = { params: matched.params, query, headers: request.headers, payload }
        return Effect.flatMap(contractRoute.run(input, state), (answer) => contractAnswer(answer, requestId))
      })
    }

    const plainRoute = matched.route
    if (kind === undefined) return serve(() => plainAnswer(plainRoute, request, undefined, requestId))
    const closing: Record<string, string> = {}
    readChecked(kind, closing, (outcome) =>
      outcome._tag === "Body"
        ? serve(() => plainAnswer(plainRoute, request, outcome.text, requestId))
        : write(refusal(path, outcome.error, requestId, closing)))
  }
}
