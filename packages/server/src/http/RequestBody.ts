/**
 * Reading a request body under the size limit, with an answer in every case.
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

const DISCARD_LIMIT_BYTES = 1024 * 1024

export type BodyOutcome =
  | { readonly _tag: "TooLarge"; readonly closeConnection: boolean }
  | { readonly _tag: "Unreadable" }
  | { readonly _tag: "Read"; readonly text: string; readonly request: HttpServerRequest.HttpServerRequest }

const readChunked = (source: IncomingMessage, max: number) =>
  Effect.async<Option.Option<string>>((resume) => {
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
    source.once("error", () => resume(Effect.succeed(Option.none())))
  })

export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  max: number
): Effect.Effect<BodyOutcome> => {
  const declared = request.headers["content-length"]
  if (declared !== undefined) {
    const length = Number(declared)
    if (length > max) return Effect.succeed({ _tag: "TooLarge", closeConnection: length > DISCARD_LIMIT_BYTES })
    return HttpIncomingMessage.withMaxBodySize(request.text, Option.some(max)).pipe(
      Effect.map((text): BodyOutcome => ({ _tag: "Read", text, request })),
      Effect.orElseSucceed((): BodyOutcome => ({ _tag: "Unreadable" }))
    )
  }
  if (request.headers["transfer-encoding"] === undefined) return Effect.succeed({ _tag: "Read", text: "", request })
  return Effect.map(readChunked(NodeHttpServerRequest.toIncomingMessage(request), max), (text): BodyOutcome => {
    if (Option.isNone(text)) return { _tag: "TooLarge", closeConnection: true }
    const headers = new Headers()
    for (const [name, value] of Object.entries(request.headers)) {
      if (name !== "transfer-encoding") headers.set(name, value)
    }
    const rebuilt = HttpServerRequest.fromWeb(
      new Request(new URL(request.url, "http://parley.local"), { method: request.method, headers, body: text.value })
    )
    return { _tag: "Read", text: text.value, request: rebuilt }
  })
}
