/**
 * The node:http server Parley listens with. Node answers some requests
 * itself, before the app sees them — with a bare status line (no
 * `X-Request-ID`, no error body) or by dropping the connection. Here those
 * answers are Parley's, in the error shape with a fresh request id:
 * - `clientError`: what Node's HTTP parser rejects (unknown method, malformed
 *   request line or header, conflicting lengths: 400; headers over Node's
 *   16 KiB: 431) and requests that time out (408);
 * - `connect`: CONNECT (Parley is not a proxy) is a 400, not a dropped connection;
 * - `checkContinue`: `Expect: 100-continue` gets no automatic `100 Continue`;
 *   the request goes to the app, and the body reader invites the body only
 *   where one is read (RequestBody), so an unknown route answers 404 at once;
 * - `checkExpectation`: other expectations are ignored, as RFC 9110 allows,
 *   instead of a bare 417;
 * - closing: a connection is closed lingering (see lingeringClose), so an
 *   answer is not lost to a reset while the client is still sending.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Socket } from "node:net"
import type { Duplex } from "node:stream"
import { type ApiError, Crypto, HeadersTooLarge, InvalidRequest, PayloadTooLarge, RequestTimeout } from "@parley/core/internal"
import { errorBody } from "./ErrorResponses.js"
import { markBroken } from "./RequestBody.js"

/** A closing connection whose client keeps it open (or keeps sending) is cut off after this long. */
const LINGER_MS = 5_000

/**
 * Closes a connection after its answer without losing the answer. Closing a
 * socket while the client is still sending (an upload nobody reads: a body to
 * an unknown route, past the size limit, refused for its media type) makes
 * the kernel answer the next bytes with a reset, and a reset can discard the
 * answer on the client's side before it is read. So: end (FIN after the
 * answer), keep discarding what still arrives, and destroy once the client
 * closes its side or LINGER_MS have passed — what nginx calls a lingering close.
 */
const lingeringClose = (socket: Duplex): void => {
  if (socket.destroyed) return
  if (socket.writable) socket.end()
  socket.resume()
  socket.once("end", () => socket.destroy())
  setTimeout(() => socket.destroy(), LINGER_MS).unref()
}

/** The parser's reasons (llhttp error codes) in words a client can act on. */
const PARSER_REASONS: Readonly<Record<string, string>> = {
  HPE_INVALID_METHOD: "the HTTP method is not supported",
  HPE_INVALID_URL: "the request target is malformed",
  HPE_INVALID_CONSTANT: "the request line is malformed",
  HPE_INVALID_VERSION: "the HTTP version is malformed",
  HPE_INVALID_HEADER_TOKEN: "a header name or value has characters HTTP does not allow",
  HPE_INVALID_CONTENT_LENGTH: "Content-Length is invalid or given twice",
  HPE_UNEXPECTED_CONTENT_LENGTH: "Content-Length and Transfer-Encoding cannot be sent together",
  HPE_INVALID_TRANSFER_ENCODING: "Transfer-Encoding is invalid",
  HPE_INVALID_CHUNK_SIZE: "the chunked body is malformed",
  HPE_CR_EXPECTED: "a line does not end with CRLF",
  HPE_LF_EXPECTED: "a line does not end with CRLF"
}

const codeOf = (error: Error): string =>
  "code" in error && typeof error.code === "string" ? error.code : ""

const classify = (error: Error): ApiError => {
  const code = codeOf(error)
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new HeadersTooLarge({ message: "The request line and headers exceed 16 KiB." })
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new PayloadTooLarge({ message: "The chunk extensions of the body are too large." })
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new RequestTimeout({ message: "The request did not arrive in time." })
    default:
      return new InvalidRequest({
        message: `Not a valid HTTP/1.1 request: ${PARSER_REASONS[code] ?? "it could not be parsed"}.`
      })
  }
}

/** Sockets already given a raw answer: the parser reports every later byte as another error. */
const answered = new WeakSet<Duplex>()

/** Writes a complete answer on the raw socket and closes the connection. */
const answerRaw = (socket: Duplex, error: ApiError): void => {
  if (answered.has(socket)) return
  answered.add(socket)
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const requestId = Crypto.newId("req")
  const { body, status } = errorBody(error, requestId)
  const text = JSON.stringify(body)
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
      "content-type: application/json\r\n" +
      `content-length: ${Buffer.byteLength(text)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      "connection: close\r\n\r\n" +
      text
  )
  lingeringClose(socket)
}

interface Exchange {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

/**
 * Exchanges whose answer is not finished, per connection. A parser error on a
 * connection with one in flight cannot be answered on the raw socket without
 * corrupting that answer: when the request in flight is still being read (a
 * chunked body breaking off), it fails instead, its answer says why, and the
 * connection closes after it; when it was read in full, the error is a
 * pipelined request's, answered after the answers before it (answerAfter).
 */
const inFlight = new WeakMap<Duplex, Set<Exchange>>()

const track = (request: IncomingMessage, response: ServerResponse) => {
  const socket = request.socket
  const exchanges = inFlight.get(socket) ?? new Set<Exchange>()
  inFlight.set(socket, exchanges)
  const exchange = { request, response }
  exchanges.add(exchange)
  response.once("close", () => exchanges.delete(exchange))
}

const failInFlight = (exchanges: ReadonlySet<Exchange>, error: Error, socket: Duplex) => {
  for (const { request, response } of exchanges) {
    if (!response.headersSent) response.setHeader("connection", "close")
    else response.once("finish", () => socket.destroy())
    // The body reader listens for errors while it reads; a request read in full has nothing waiting on it,
    // and one whose body is not read yet (its key still being checked) is told when it is (markBroken).
    if (request.complete) continue
    if (request.listenerCount("error") > 0) request.emit("error", error)
    else markBroken(request, error)
  }
}

/**
 * A parser error behind requests read in full (pipelined after them) is the next request's: it is answered
 * on the raw socket once their answers are written, in order, rather than lost when the connection closes.
 */
const answerAfter = (exchanges: ReadonlySet<Exchange>, socket: Duplex, error: ApiError) => {
  const pending = [...exchanges].filter(({ response }) => !response.writableFinished)
  if (pending.length === 0) return answerRaw(socket, error)
  let left = pending.length
  for (const { response } of pending) {
    const settle = () => {
      if (--left === 0) answerRaw(socket, error)
    }
    response.once("finish", settle)
    // An answer that never finishes (the client went away): nothing more to write.
    response.once("close", () => !response.writableFinished && socket.destroy())
  }
}

const onClientError = (error: Error, socket: Duplex) => {
  if (codeOf(error) === "ECONNRESET") {
    socket.destroy() // the client is gone: nobody to answer
    return
  }
  const exchanges = inFlight.get(socket)
  if (exchanges === undefined || exchanges.size === 0) return answerRaw(socket, classify(error))
  // A request still being read owns the error (its chunked body broke off); otherwise it is a later one's.
  if ([...exchanges].some(({ request }) => !request.complete)) failInFlight(exchanges, error, socket)
  else answerAfter(exchanges, socket, classify(error))
}

/** The node:http server, with Parley's answers to what Node would answer (or drop) on its own. */
export const makeHttpListener = (): Server => {
  const server = createServer()
  // Registered before the app's own listener, so every exchange is tracked before it is served.
  server.on("request", track)
  server.on("clientError", onClientError)
  server.on("connect", (_request: IncomingMessage, socket: Duplex) => {
    answerRaw(socket, new InvalidRequest({ message: "CONNECT is not supported: Parley is not a proxy." }))
  })
  const proceed = (request: IncomingMessage, response: ServerResponse) => server.emit("request", request, response)
  server.on("checkContinue", proceed)
  server.on("checkExpectation", proceed)
  // Node ends a `Connection: close` answer with destroySoon(): destroy as soon as the answer is written.
  server.on("connection", (socket: Socket) => {
    socket.destroySoon = () => lingeringClose(socket)
  })
  return server
}
