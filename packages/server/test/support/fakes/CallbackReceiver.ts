/**
 * Stands where Parley's provider callback routes will be, for the provider
 * client tests: records every POST a fake makes (path, headers, raw body) and
 * answers 200, so a test can check what the provider sends, in what order,
 * and how it is signed.
 */
import type { IncomingHttpHeaders } from "node:http"
import { FakeServer } from "./FakeServer.js"

export interface ReceivedCallback {
  /** The full URL as the sender addressed it (what signatures cover). */
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export class CallbackReceiver {
  readonly received: Array<ReceivedCallback> = []

  private constructor(private readonly server: FakeServer) {}

  static async start(): Promise<CallbackReceiver> {
    let receiver: CallbackReceiver | undefined
    const server = await FakeServer.start((request, body, response) => {
      receiver?.received.push({ url: `${server.url}${request.url ?? "/"}`, headers: request.headers, body })
      response.writeHead(200, { "content-type": "text/plain" })
      response.end("ok")
    })
    receiver = new CallbackReceiver(server)
    return receiver
  }

  /** An absolute URL on this receiver. */
  at(path: string): string {
    return `${this.server.url}${path}`
  }

  /** Form fields of a received form post, in the order sent. */
  static form(callback: ReceivedCallback): ReadonlyArray<readonly [string, string]> {
    return [...new URLSearchParams(callback.body).entries()]
  }

  stop(): Promise<void> {
    return this.server.stop()
  }
}
