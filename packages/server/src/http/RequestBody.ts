/**
 * Reading a request body under the size limit, with an answer in every case.
 *
 * Only the request pipeline reads bodies, and only for routes that take one;
 * that is also the only place that sends `100 Continue` (see HttpListener):
 * a client that asked is invited to send its body exactly when it is read.
 *
 * With a Content-Length the limit is checked before reading and the
 * platform's own reader is used (its cached text is what the contract's
 * decoder parses). A body announced as too large is not read: Node discards
 * it after the 413 and keeps the connection, unless it is larger than
 * DISCARD_LIMIT_BYTES, not worth receiving, and the connection is closed.
 * (Closing at once breaks the client's upload with EPIPE, often before it has
 * read the answer.) A chunked body has no length up front: it is read here,
 * chunk by chunk; past the limit the rest is drained and discarded so the
 * client still receives its 413 (the platform's reader would destroy the
 * socket instead), and a body within the limit is handed on as a new request.
 */
import type { IncomingMessage } from "node:http"
import { HttpIncomingMessage, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Option } from "effect"

/** Unread bodies up to this size are drained to keep the connection; larger ones (or chunked) close it. */
export const DISCARD_LIMIT_BYTES = 1024 * 1024

export type BodyOutcome =
  | { readonly _tag: "TooLarge"; readonly closeConnection: boolean }
  | { readonly _tag: "Unreadable"; readonly timedOut: boolean }
  | { readonly _tag: "Read"; readonly text: string; readonly request: HttpServerRequest.HttpServerRequest }

/** Node's code for a request whose headers or body took longer than its request timeout. */
const isTimeout = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ERR_HTTP_REQUEST_TIMEOUT"

const readChunked = (source: IncomingMessage, max: number) =>
  Effect.async<Option.Option<string>, { readonly timedOut: boolean }>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        source.off("data", onData)
        source.resume() // drain and discard the rest
        resume(Effect.succeed(Option.none()))
      } else {
        chunks.push(chunk)
      }
    }
    source.on("data", onData)
    source.once("end", () => {
      if (size <= max) resume(Effect.succeed(Option.some(Buffer.concat(chunks).toString("utf8"))))
    })
    source.once("error", (error) => resume(Effect.fail({ timedOut: isTimeout(error) })))
  })

/**
 * A request carrying the body already read, for the contract's decoder. The
 * content type is set to `application/json` when asked: the platform decodes
 * only that type as JSON and would read any other (`application/ld+json`) from
 * the stream again, which is consumed — the request then never got an answer.
 */
const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  text: string,
  contentType: string | undefined
): HttpServerRequest.HttpServerRequest => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(request.headers)) {
    if (name !== "transfer-encoding" && name !== "content-length") headers.set(name, value)
  }
  if (contentType !== undefined) headers.set("content-type", contentType)
  // The platform's Node request reads an empty body as JSON null (a 400 from the schema); its web request would
  // fail to parse "" and die (a 500). An empty body is handed on as the null it means.
  const body = text === "" && /json/i.test(headers.get("content-type") ?? "") ? "null" : text
  return HttpServerRequest.fromWeb(
    new Request(new URL(request.url, "http://parley.local"), { method: request.method, headers, body })
  )
}

/** Sends `100 Continue` when the client asked for it (and waits for it before sending its body). */
const inviteBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.sync(() => {
    if (/100-continue/i.test(request.headers["expect"] ?? "")) {
      NodeHttpServerRequest.toServerResponse(request).writeContinue()
    }
  })

export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  max: number,
  options: { readonly contentType?: string } = {}
): Effect.Effect<BodyOutcome> => {
  const declared = request.headers["content-length"]
  if (declared !== undefined) {
    const length = Number(declared)
    if (length > max) return Effect.succeed({ _tag: "TooLarge", closeConnection: length > DISCARD_LIMIT_BYTES })
    return inviteBody(request).pipe(
      Effect.zipRight(HttpIncomingMessage.withMaxBodySize(request.text, Option.some(max))),
      Effect.map((text): BodyOutcome => ({
        _tag: "Read",
        text,
        request: options.contentType === undefined ? request : withBody(request, text, options.contentType)
      })),
      Effect.catchAll((error) => Effect.succeed<BodyOutcome>({ _tag: "Unreadable", timedOut: isTimeout(error.cause) }))
    )
  }
  if (request.headers["transfer-encoding"] === undefined) {
    // No body. A media type the platform does not read as JSON (multipart with no parts) would have it wait
    // for a body that never comes: hand on the empty body as JSON.
    return Effect.succeed({
      _tag: "Read",
      text: "",
      request: options.contentType === undefined ? request : withBody(request, "", options.contentType)
    })
  }
  return inviteBody(request).pipe(
    Effect.zipRight(readChunked(NodeHttpServerRequest.toIncomingMessage(request), max)),
    Effect.map((text): BodyOutcome =>
      Option.isNone(text)
        ? { _tag: "TooLarge", closeConnection: true }
        : { _tag: "Read", text: text.value, request: withBody(request, text.value, options.contentType) }
    ),
    Effect.catchAll((failure) => Effect.succeed<BodyOutcome>({ _tag: "Unreadable", timedOut: failure.timedOut }))
  )
}
