/**
 * The outermost HTTP middleware, around the contract-derived app:
 * - gives every request its id (a safe incoming `X-Request-ID` of ≤ 128
 *   characters is reused) and puts it on every response, errors included;
 * - reads a body only for the routes that take one (the contract's POST
 *   routes, the carrier webhook): anything else is answered without waiting
 *   for its body, and a large or chunked unread body closes the connection
 *   rather than being drained;
 * - refuses bodies over the limit (413, by Content-Length up front and while
 *   streaming a chunked body), bodies of the wrong media type (415) and JSON
 *   nested deeper than MAX_JSON_DEPTH (400) before any parsing;
 * - answers unknown routes (404), wrong methods (405 with `Allow`), malformed
 *   JSON (400) and unexpected failures (500, nothing internal in the body) in
 *   the spec's error shape;
 * - writes one structured log line per request, with no key, token or body.
 */
import {
  HttpApi,
  HttpApp,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import {
  Crypto,
  CurrentRequestId,
  Internal,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  ParleyApi,
  PayloadTooLarge,
  RequestTimeout,
  UnsupportedMediaType
} from "@parley/core/internal"
import { Cause, Effect, FiberRef, LogLevel, Option } from "effect"
import {
  acceptsMediaType,
  type BodyKind,
  containsNul,
  encodesNul,
  isPlainJsonType,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  parseJson
} from "./BodyRules.js"
import { TWILIO_INBOUND_PATH, TWILIO_STATUS_PATH, VAPI_EVENTS_PATH } from "../providers/CallbackUrls.js"
import { CARRIER_INBOUND_PATH } from "./CarrierInbound.js"
import { describeCause, errorResponse } from "./ErrorResponses.js"
import { DISCARD_LIMIT_BYTES, readBody } from "./RequestBody.js"

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Routes of the contract as (method, pattern), to tell a wrong method (405) from an unknown path (404). */
const contractRoutes: ReadonlyArray<{ readonly method: string; readonly pattern: RegExp }> = (() => {
  const routes: Array<{ method: string; pattern: RegExp }> = []
  HttpApi.reflect(ParleyApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:\w+/g, "[^/]+")
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`) })
    }
  })
  return routes
})()

const allowedMethods = (path: string): ReadonlyArray<string> =>
  [...new Set(contractRoutes.filter((r) => r.pattern.test(path)).map((r) => r.method))]

/** The body a route takes, if any: JSON on the contract's routes that take one, form fields on the carrier webhook. */
const bodyKindOf = (method: string, path: string): BodyKind | undefined => {
  if (method !== "POST") return undefined // every route that takes a body is a POST
  if (path === CARRIER_INBOUND_PATH || path === TWILIO_INBOUND_PATH || path === TWILIO_STATUS_PATH) return "form"
  if (path === VAPI_EVENTS_PATH) return "json"
  return contractRoutes.some((r) => r.method === method && r.pattern.test(path)) ? "json" : undefined
}

/** Whether the request announces a body (a length above zero, or chunks). */
const announcesBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? "0") > 0

/**
 * Whether an unread body is not worth draining: Node reads and discards what
 * is left of a request after its answer, to keep the connection. A 10 MB body
 * sent to an unknown route would be received in full; closing stops that.
 */
const unreadBodyTooLargeToDrain = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] !== undefined ||
  Number(request.headers["content-length"] ?? "0") > DISCARD_LIMIT_BYTES

export interface PipelineOptions {
  readonly maxBodyBytes: number
}

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

export const requestPipeline = (options: PipelineOptions) => <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const incoming = request.headers["x-request-id"]
    const requestId = incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : Crypto.newId("req")
    const started = performance.now()
    const path = pathOf(request.url)
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )

    /** Answers before (or without) reading the announced body: close the connection if draining it would cost. */
    const unread = (response: HttpServerResponse.HttpServerResponse) =>
      announcesBody(request) && unreadBodyTooLargeToDrain(request)
        ? HttpServerResponse.setHeader(response, "connection", "close")
        : response

    let bodyRead = false
    const respond = Effect.gen(function*() {
      let served = app
      if (encodesNul(request.url)) {
        return errorResponse(new InvalidRequest({ message: "path and query must not contain NUL characters (%00)." }), requestId)
      }
      const kind = bodyKindOf(request.method, path)
      if (kind !== undefined) {
        const contentType = request.headers["content-type"] ?? ""
        if (announcesBody(request) && !acceptsMediaType(kind, contentType)) {
          return errorResponse(unsupportedMediaType(kind), requestId)
        }
        const body = yield* readBody(request, options.maxBodyBytes, {
          ...(kind === "json" && !isPlainJsonType(contentType) ? { contentType: "application/json" } : {})
        })
        bodyRead = true
        if (body._tag === "TooLarge") {
          return errorResponse(tooLarge(options.maxBodyBytes), requestId, body.closeConnection ? { connection: "close" } : {})
        }
        if (body._tag === "Unreadable") {
          const error = body.timedOut
            ? new RequestTimeout({ message: "The request body did not arrive in time." })
            : new InvalidRequest({ message: "body: could not be read." })
          return errorResponse(error, requestId, { connection: "close" })
        }
        if (kind === "json" && nestsDeeperThan(body.text, MAX_JSON_DEPTH)) {
          return errorResponse(
            new InvalidRequest({ message: `body: nested deeper than ${MAX_JSON_DEPTH} levels.` }),
            requestId
          )
        }
        if (kind === "json" && body.text !== "") {
          const parsed = parseJson(body.text)
          if (parsed._tag === "NotJson") {
            return errorResponse(new InvalidRequest({ message: "body: not valid JSON." }), requestId)
          }
          if (containsNul(parsed.value)) return errorResponse(nulInBody, requestId)
        }
        if (kind === "form" && encodesNul(body.text)) return errorResponse(nulInBody, requestId)
        served = Effect.provideService(app, HttpServerRequest.HttpServerRequest, body.request)
      }
      const response = yield* served
      // The platform answers routing and body-parsing failures itself, with an empty body; give those the
      // contract's error body.
      return response.status >= 400 && response.body._tag === "Empty"
        ? yield* emptyErrorResponse(response.status, request.method, path, requestId, options.maxBodyBytes)
        : response
    }).pipe(
      Effect.catchAllCause((cause) => failureResponse(cause, request.method, path, requestId))
    )

    // Every request runs in a fiber of its own, so setting the id needs no restoring afterwards.
    yield* FiberRef.set(CurrentRequestId, requestId)
    const answered = yield* respond
    const response = bodyRead ? answered : unread(answered)
    // Below Info (LOG_LEVEL=warn) the line is not even assembled: annotating it cost ~26 Effect operations a
    // request, a tenth of a health check, for a line nobody would see.
    yield* Effect.whenLogLevel(
      Effect.annotateLogs(Effect.logInfo("request"), {
        requestId,
        method: request.method,
        path,
        status: response.status,
        durationMs: Math.round((performance.now() - started) * 10) / 10
      }),
      LogLevel.Info
    )
    return response
  })

const nulInBody = new InvalidRequest({ message: "body: text must not contain NUL characters (U+0000)." })

const tooLarge = (max: number) =>
  new PayloadTooLarge({ message: `The request body exceeds the limit of ${max} bytes.` })

const unsupportedMediaType = (kind: BodyKind) =>
  new UnsupportedMediaType({
    message: kind === "json"
      ? "Send the request body as JSON with Content-Type: application/json."
      : "Send the carrier's fields form-encoded (Content-Type: application/x-www-form-urlencoded)."
  })

const notFoundOrWrongMethod = (method: string, path: string, requestId: string) => {
  const allowed = allowedMethods(path)
  return allowed.length > 0 && !allowed.includes(method)
    ? errorResponse(
      new MethodNotAllowed({ message: `${method} is not allowed on ${path}; use ${allowed.join(", ")}.` }),
      requestId,
      { allow: allowed.join(", ") }
    )
    : errorResponse(new NotFound({ message: `No route ${method} ${path}.` }), requestId)
}

const emptyErrorResponse = (status: number, method: string, path: string, requestId: string, maxBodyBytes: number) => {
  switch (status) {
    case 404:
    case 405:
      return Effect.succeed(notFoundOrWrongMethod(method, path, requestId))
    case 413:
      return Effect.succeed(errorResponse(tooLarge(maxBodyBytes), requestId))
    default:
      return status < 500
        ? Effect.succeed(errorResponse(new InvalidRequest({ message: "body: not valid JSON." }), requestId))
        : failureResponse(Cause.empty, method, path, requestId)
  }
}

/** Failures the contract did not encode itself: routing, body parsing, and defects. */
const failureResponse = (
  cause: Cause.Cause<unknown>,
  method: string,
  path: string,
  requestId: string
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof HttpServerError.RouteNotFound) {
      return Effect.succeed(notFoundOrWrongMethod(method, path, requestId))
    }
    if (error instanceof HttpServerError.RequestError && error.reason === "Decode") {
      return Effect.succeed(errorResponse(new InvalidRequest({ message: "body: not valid JSON." }), requestId))
    }
  }
  // Unexpected: log what kind of failure it was, never its details, and answer a bare 500.
  return Effect.as(
    Effect.annotateLogs(Effect.logError("unexpected failure"), { requestId, cause: describeCause(Cause.squash(cause)) }),
    errorResponse(
      new Internal({ message: "Something went wrong on our side; retry with the same Idempotency-Key." }),
      requestId
    )
  )
}
