/**
 * HTTP/1.1 over a bare TCP socket, for requests that fetch and node:http
 * refuse to send (unknown methods, malformed request lines, conflicting
 * lengths, header junk, bodies that never arrive) and for watching what the
 * server does with the connection afterwards. One request per connection.
 */
import { connect, type Socket } from "node:net"

export interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** Interim 1xx status lines received before the final answer (e.g. 100 Continue). */
  readonly interim: ReadonlyArray<number>
  readonly body: string
  /** Milliseconds from connecting to the end of the final answer. */
  readonly elapsedMs: number
}

export type RawOutcome =
  | { readonly _tag: "Answered"; readonly answer: RawAnswer }
  /** The server closed or reset the connection without a complete answer. */
  | { readonly _tag: "Dropped"; readonly received: string }
  /** No complete answer within the time allowed. */
  | { readonly _tag: "Unanswered"; readonly received: string }

export interface RawRequest {
  /** What to write first: usually the request line, headers and (part of) the body. */
  readonly head: string | Buffer
  /** Written after the head, piece by piece, until the answer arrives. */
  readonly body?: ReadonlyArray<Buffer>
  readonly timeoutMs: number
  /** Whether a body is expected in the answer (false for HEAD). */
  readonly expectBody?: boolean
}

const HEAD_END = Buffer.from("\r\n\r\n")

interface Parsed {
  readonly status: number
  readonly headers: Record<string, string>
  readonly interim: Array<number>
  readonly body: Buffer
}

/** Parses the answer received so far; undefined while it is incomplete. */
const parseAnswer = (received: Buffer, expectBody: boolean, closed: boolean): Parsed | undefined => {
  const interim: Array<number> = []
  let offset = 0
  for (;;) {
    const end = received.indexOf(HEAD_END, offset)
    if (end === -1) return undefined
    const lines = received.subarray(offset, end).toString("latin1").split("\r\n")
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? "0")
    const headers: Record<string, string> = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":")
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const rest = received.subarray(end + HEAD_END.length)
    if (status >= 100 && status < 200) {
      interim.push(status)
      offset = end + HEAD_END.length
      continue
    }
    if (!expectBody || status === 204 || status === 304) return { status, headers, interim, body: Buffer.alloc(0) }
    const length = headers["content-length"]
    if (length !== undefined) {
      const n = Number(length)
      return rest.length >= n ? { status, headers, interim, body: rest.subarray(0, n) } : undefined
    }
    if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const body = dechunk(rest)
      return body === undefined ? undefined : { status, headers, interim, body }
    }
    return closed ? { status, headers, interim, body: rest } : undefined
  }
}

const dechunk = (data: Buffer): Buffer | undefined => {
  const parts: Array<Buffer> = []
  let offset = 0
  for (;;) {
    const lineEnd = data.indexOf("\r\n", offset)
    if (lineEnd === -1) return undefined
    const size = parseInt(data.subarray(offset, lineEnd).toString("latin1"), 16)
    if (Number.isNaN(size)) return undefined
    if (size === 0) return Buffer.concat(parts)
    const start = lineEnd + 2
    if (data.length < start + size + 2) return undefined
    parts.push(data.subarray(start, start + size))
    offset = start + size + 2
  }
}

/** Sends one request on a fresh connection and waits for the final answer, a drop, or the timeout. */
export const rawRequest = (port: number, request: RawRequest): Promise<RawOutcome> =>
  new Promise((resolve) => {
    const started = performance.now()
    const socket: Socket = connect(port, "127.0.0.1")
    let received = Buffer.alloc(0)
    let settled = false
    const settle = (outcome: RawOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const check = (closed: boolean) => {
      const parsed = parseAnswer(received, request.expectBody ?? true, closed)
      if (parsed !== undefined) {
        settle({
          _tag: "Answered",
          answer: {
            status: parsed.status,
            headers: parsed.headers,
            interim: parsed.interim,
            body: parsed.body.toString("utf8"),
            elapsedMs: performance.now() - started
          }
        })
      } else if (closed) {
        settle({ _tag: "Dropped", received: received.toString("latin1") })
      }
    }
    const timer = setTimeout(
      () => settle({ _tag: "Unanswered", received: received.toString("latin1") }),
      request.timeoutMs
    )
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      check(false)
    })
    socket.on("close", () => check(true))
    socket.on("error", () => {
      // A reset after the server answered and closed is fine; "close" follows and decides.
    })
    socket.on("connect", () => {
      socket.write(request.head)
      const pieces = request.body ?? []
      const writeNext = (index: number) => {
        if (settled || index >= pieces.length || socket.destroyed) return
        const piece = pieces[index]
        if (piece === undefined) return
        const flushed = socket.write(piece)
        if (flushed) setImmediate(() => writeNext(index + 1))
        else socket.once("drain", () => writeNext(index + 1))
      }
      writeNext(0)
    })
  })

/** Resolves when the server closes the connection (or the time runs out), after writing `head` only. */
export const closedByServerWithin = (port: number, head: string, timeoutMs: number) =>
  new Promise<{ readonly closed: boolean; readonly received: string }>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    let received = ""
    const timer = setTimeout(() => {
      socket.destroy()
      resolve({ closed: false, received })
    }, timeoutMs)
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")))
    socket.on("error", () => undefined)
    socket.on("close", () => {
      clearTimeout(timer)
      resolve({ closed: true, received })
    })
    socket.on("connect", () => socket.write(head))
  })

/** The request line and headers of a request, CRLF-terminated, ready for rawRequest's `head`. */
export const requestHead = (
  method: string,
  path: string,
  headers: ReadonlyArray<readonly [string, string]>
): string => `${method} ${path} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n`
