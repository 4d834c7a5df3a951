/**
 * Reading a request body under the size limit, with an answer in every case.
 *
 * Only the request pipeline reads bodies, and only for routes that take one;
 * that is also the only place that sends `100 Continue` (see HttpListener):
 * a client that asked is invited to send its body exactly when it is read.
 *
 * A body announced (Content-Length) as too large is not read: Node discards
 * it after the 413 and keeps the connection, unless it is larger than
 * DISCARD_LIMIT_BYTES, not worth receiving, and the connection is closed.
 * (Closing at once breaks the client's upload with EPIPE, often before it has
 * read the answer.) A chunked body has no length up front: past the limit the
 * rest is drained and discarded so the client still receives its 413.
 */
import type { IncomingMessage, ServerResponse } from "node:http"

/** Unread bodies up to this size are drained to keep the connection; larger ones (or chunked) close it. */
export const DISCARD_LIMIT_BYTES = 1024 * 1024

export type BodyOutcome =
  | { readonly _tag: "TooLarge"; readonly closeConnection: boolean }
  | { readonly _tag: "Unreadable"; readonly timedOut: boolean }
  | { readonly _tag: "Read"; readonly text: string }

/** Node's code for a request whose headers or body took longer than its request timeout. */
const isTimeout = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ERR_HTTP_REQUEST_TIMEOUT"

const EMPTY: BodyOutcome = { _tag: "Read", text: "" }

/**
 * Requests whose body broke off (a parser error on their connection) before anything listened for it: the
 * contract's routes read the body only after the key is checked, so the error can come first. readBody
 * answers these at once instead of waiting for a body that will never end.
 */
const broken = new WeakMap<IncomingMessage, unknown>()

/** Told by the listener when a request's body broke off and nobody was reading it yet. */
export const markBroken = (request: IncomingMessage, error: unknown): void => {
  broken.set(request, error)
}

export const readBody = (
  request: IncomingMessage,
  response: ServerResponse,
  max: number,
  done: (outcome: BodyOutcome) => void
): void => {
  if (broken.has(request)) return done({ _tag: "Unreadable", timedOut: isTimeout(broken.get(request)) })
  const declared = request.headers["content-length"]
  const chunked = request.headers["transfer-encoding"] !== undefined
  if (declared !== undefined && !chunked) {
    const length = Number(declared)
    if (length > max) return done({ _tag: "TooLarge", closeConnection: length > DISCARD_LIMIT_BYTES })
    if (length === 0) return done(EMPTY)
  } else if (!chunked) {
    return done(EMPTY)
  }
  if (/100-continue/i.test(request.headers["expect"] ?? "")) {
    // Pipelined behind an answer still being written, the response has no socket yet and Node buffers the
    // `100 Continue`; a head written later is put in front of that buffer (when the body is not a string),
    // so the interim line landed inside this answer and every later answer on the connection was shifted.
    // Invite the body once this response owns the connection, unless its answer is written by then (a client
    // that sent its body unasked has been answered: an interim line would come after the final one).
    if (response.socket !== null) response.writeContinue()
    else response.once("socket", () => !response.headersSent && response.writeContinue())
  }
  const chunks: Array<Buffer> = []
  let size = 0
  let settled = false
  const settle = (outcome: BodyOutcome) => {
    if (settled) return
    settled = true
    request.off("data", onData)
    done(outcome)
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size > max) {
      request.resume() // drain and discard the rest
      settle({ _tag: "TooLarge", closeConnection: true })
    } else {
      chunks.push(chunk)
    }
  }
  request.on("data", onData)
  request.once("end", () => settle({ _tag: "Read", text: Buffer.concat(chunks, size).toString("utf8") }))
  request.on("error", (error) => settle({ _tag: "Unreadable", timedOut: isTimeout(error) }))
}
