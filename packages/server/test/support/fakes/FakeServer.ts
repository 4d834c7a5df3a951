/**
 * What the provider fakes (TwilioFake, VapiFake) share: an HTTP server on
 * 127.0.0.1 that can go down (stop listening, cut open connections) and come
 * back on the same port, a queue of faults to inject into the next requests
 * that create something, and the ways the next callbacks can be bent
 * (duplicated, reordered, unsigned, mis-signed).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"

export type FakeHandler = (request: IncomingMessage, body: string, response: ServerResponse) => Promise<void> | void

export class FakeServer {
  private server: Server
  private listening = false

  private constructor(private readonly handler: FakeHandler, readonly port: number, server: Server) {
    this.server = server
    this.listening = true
  }

  static async start(handler: FakeHandler, port = 0): Promise<FakeServer> {
    const server = FakeServer.create(handler)
    const bound = await FakeServer.listen(server, port)
    return new FakeServer(handler, bound, server)
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Stops listening and cuts every open connection: clients then see ECONNREFUSED. */
  async down(): Promise<void> {
    if (!this.listening) return
    this.listening = false
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    this.server.closeAllConnections()
    await closed
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    if (this.listening) return
    this.server = FakeServer.create(this.handler)
    await FakeServer.listen(this.server, this.port)
    this.listening = true
  }

  stop(): Promise<void> {
    return this.down()
  }

  private static create(handler: FakeHandler): Server {
    return createServer((request, response) => {
      // No keep-alive: a connection pooled by the client would otherwise outlive
      // down() for a moment, and the next request would fail on it, not be refused.
      response.setHeader("connection", "close")
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        Promise.resolve(handler(request, Buffer.concat(chunks).toString("utf8"), response)).catch((error: unknown) => {
          if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain" })
          response.end(`fake failed: ${error instanceof Error ? error.message : String(error)}`)
        })
      })
    })
  }

  private static listen(server: Server, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject)
        const address = server.address()
        resolve(typeof address === "object" && address !== null ? address.port : port)
      })
    })
  }
}

/**
 * A fault for the next create request:
 * - `Status`: answer this status (429, 500, 503…) in the provider's error shape, creating nothing;
 * - `DropAfterAccept`: create the resource (its lifecycle runs) but cut the
 *   connection before answering, so the client cannot know it was created;
 * - `Hang`: create nothing and never answer (the client's timeout decides);
 * - `ConcurrencyLimit`: Vapi's 400 "Over Concurrency Limit" (the Twilio fake treats it as 429).
 */
export type Fault =
  | { readonly _tag: "Status"; readonly status: number; readonly retryAfter?: string }
  | { readonly _tag: "DropAfterAccept" }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "ConcurrencyLimit" }

export class FaultQueue {
  private readonly queue: Array<Fault> = []

  push(fault: Fault, times = 1): void {
    for (let i = 0; i < times; i++) this.queue.push(fault)
  }

  take(): Fault | undefined {
    return this.queue.shift()
  }

  clear(): void {
    this.queue.length = 0
  }
}

/**
 * How the next lifecycle's callbacks are bent: all posted before the create
 * is answered, each posted twice, posted in reverse order (final status
 * first), posted without a signature, or signed with the wrong secret.
 */
export interface CallbackTweak {
  /** Post the lifecycle's callbacks before answering the create (as real providers can), not after. */
  readonly beforeAnswer?: boolean
  readonly duplicate?: boolean
  readonly reverse?: boolean
  readonly signature?: "none" | "wrong"
}

export class TweakQueue {
  private readonly queue: Array<CallbackTweak> = []

  push(tweak: CallbackTweak, lifecycles = 1): void {
    for (let i = 0; i < lifecycles; i++) this.queue.push(tweak)
  }

  take(): CallbackTweak {
    return this.queue.shift() ?? {}
  }
}

/** Runs lifecycles in the background; `settled()` waits for all of them. */
export class Lifecycles {
  private readonly running = new Set<Promise<void>>()
  private readonly stopping = new AbortController()

  get isStopped(): boolean {
    return this.stopping.signal.aborted
  }

  /** Waits `ms`, or less when the fake stops (then isStopped is true). */
  pause(ms: number): Promise<void> {
    const signal = this.stopping.signal
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const onAbort = () => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort)
        resolve()
      }, ms)
      signal.addEventListener("abort", onAbort, { once: true })
    })
  }

  /** Starts a lifecycle; the promise settles when it has posted its last callback. */
  run(lifecycle: () => Promise<void>): Promise<void> {
    const promise = lifecycle().catch(() => undefined).finally(() => this.running.delete(promise))
    this.running.add(promise)
    return promise
  }

  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }

  async stop(): Promise<void> {
    this.stopping.abort()
    await this.settled()
  }
}

/** Bent delivery order: each event once or twice, forwards or backwards. */
export const deliveryOrder = <A>(events: ReadonlyArray<A>, tweak: CallbackTweak): ReadonlyArray<A> => {
  const ordered = tweak.reverse === true ? [...events].reverse() : [...events]
  return tweak.duplicate === true ? ordered.flatMap((event) => [event, event]) : ordered
}

export const sendJson = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

/** The user and password of a Basic Authorization header, if it is one. */
export const basicCredentials = (header: string | undefined): { user: string; password: string } | undefined => {
  const match = /^Basic\s+(.+)$/i.exec(header ?? "")
  if (match?.[1] === undefined) return undefined
  const decoded = Buffer.from(match[1], "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

/**
 * The controls every provider fake offers its tests, over the server it
 * answers on: faults for the next creates, bent callbacks for the next
 * lifecycles, going down and coming back, waiting for lifecycles to finish.
 */
export abstract class ProviderFake {
  protected readonly faults = new FaultQueue()
  protected readonly tweaks = new TweakQueue()
  protected readonly lifecycles = new Lifecycles()
  protected server: FakeServer | undefined

  /** The API base, to use as the provider account's apiBase. */
  get url(): string {
    return this.listening().url
  }

  /** The next `times` creates answer `status` (429, 500, 503…) and create nothing. */
  failNext(times: number, status: number, retryAfter?: string): void {
    this.faults.push(retryAfter === undefined ? { _tag: "Status", status } : { _tag: "Status", status, retryAfter }, times)
  }

  /** The next create makes the resource (its lifecycle runs) but the connection is cut before the answer. */
  dropNextAfterAccept(times = 1): void {
    this.faults.push({ _tag: "DropAfterAccept" }, times)
  }

  /** The next create is never answered and creates nothing. */
  hangNext(times = 1): void {
    this.faults.push({ _tag: "Hang" }, times)
  }

  /** Bends the callbacks of the next `lifecycles` resources created. */
  tweakNextCallbacks(tweak: CallbackTweak, lifecycles = 1): void {
    this.tweaks.push(tweak, lifecycles)
  }

  /** Stops listening (clients get ECONNREFUSED); lifecycles already running carry on. */
  down(): Promise<void> {
    return this.listening().down()
  }

  up(): Promise<void> {
    return this.listening().up()
  }

  /** Waits until every lifecycle has posted its last callback. */
  settled(): Promise<void> {
    return this.lifecycles.settled()
  }

  async stop(): Promise<void> {
    await this.lifecycles.stop()
    await this.server?.stop()
  }

  protected listening(): FakeServer {
    if (this.server === undefined) throw new Error(`${this.constructor.name} is not started`)
    return this.server
  }
}
