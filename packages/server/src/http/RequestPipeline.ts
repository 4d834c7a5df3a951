/**
 * The outermost HTTP middleware, around the contract-derived app:
 * - gives every request its id (a safe incoming `X-Request-ID` of ≤ 128
 *   characters is reused) and puts it on every response, errors included;
 * - refuses bodies over the limit (413, by Content-Length up front and while
 *   streaming a chunked body) and non-JSON bodies (415) before any parsing;
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
  UnsupportedMediaType
} from "@parley/core"
import { Cause, Effect, FiberRef, LogLevel, Option } from "effect"
import { describeCause, errorResponse } from "./ErrorResponses.js"
import { readBody } from "./RequestBody.js"

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

const hasBody = (method: string) => method === "POST" || method === "PUT" || method === "PATCH"

const JSON_CONTENT_TYPE = /^application\/([\w.+-]*\+)?json\s*(;|$)/i

/** Bodies are small (64 KiB at most), so parsing once more here costs little and gives a clean 400. */
const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

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

    const respond = Effect.gen(function*() {
      let served = app
      if (hasBody(request.method) && path.startsWith("/api/")) {
        const contentType = request.headers["content-type"] ?? ""
        const announced = request.headers["transfer-encoding"] !== undefined ||
          Number(request.headers["content-length"] ?? "0") > 0
        if (announced && !JSON_CONTENT_TYPE.test(contentType)) {
          return errorResponse(
            new UnsupportedMediaType({ message: "Send the request body as JSON with Content-Type: application/json." }),
            requestId
          )
        }
        const body = yield* readBody(request, options.maxBodyBytes)
        if (body._tag === "TooLarge") {
          return errorResponse(tooLarge(options.maxBodyBytes), requestId, body.closeConnection ? { connection: "close" } : {})
        }
        if (body._tag === "Unreadable") {
          return errorResponse(new InvalidRequest({ message: "body: could not be read." }), requestId)
        }
        if (body.text !== "" && !isJson(body.text)) {
          return errorResponse(new InvalidRequest({ message: "body: not valid JSON." }), requestId)
        }
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
    const response = yield* respond
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

const tooLarge = (max: number) =>
  new PayloadTooLarge({ message: `The request body exceeds the limit of ${max} bytes.` })

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
