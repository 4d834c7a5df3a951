/**
 * n8n's webhook server, reduced to what a webhook trigger sees: an HTTP server at the harness's webhook base URL
 * that reads each request as n8n does (the bytes kept as `rawBody`, JSON parsed into `body`), calls the trigger's
 * webhook() through n8n-core's WebhookContext, answers as n8n's executeWebhook does (the node's own answer when it
 * sent one, "Webhook call received" when it started nothing, "Workflow was started" when it did) and then runs the
 * workflow with the trigger's items. Each request is recorded, with the run it started.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import type { IRun, Workflow } from "n8n-workflow"
import type { N8nHarness, RunOptions, WorkflowJson } from "./n8n.js"

export interface Delivery {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly rawBody: Buffer
  readonly status: number
  readonly responseBody: string
  /** The workflow run the request started, if it started one. */
  readonly run: IRun | undefined
}

interface Target {
  readonly harness: N8nHarness
  readonly json: WorkflowJson
  readonly workflow: Workflow
  readonly nodeName: string
}

/** The parts of express's Response the nodes use, over Node's ServerResponse. */
function expressResponse(response: ServerResponse) {
  const adapter = {
    status(code: number) {
      response.statusCode = code
      return adapter
    },
    json(body: unknown) {
      response.setHeader("content-type", "application/json")
      response.end(JSON.stringify(body))
      return adapter
    },
    send(body: unknown) {
      response.end(typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body))
      return adapter
    },
    end() {
      response.end()
      return adapter
    },
    get headersSent() {
      return response.headersSent
    }
  }
  return adapter
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = []
  private target: Target | undefined

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer()
    const receiver = new WebhookReceiver(server)
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      void receiver.handle(request, response)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return receiver
  }

  /** n8n's webhook base URL, pointing here. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhook`
  }

  /** The workflow (and its trigger node) that requests are handed to, as n8n routes an active workflow's webhook. */
  attach(harness: N8nHarness, json: WorkflowJson, workflow: Workflow, nodeName: string): void {
    this.target = { harness, json, workflow, nodeName }
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const rawBody = await readBody(request)
    const path = request.url ?? "/"
    const answered = captureBody(response)
    let runOptions: RunOptions | undefined
    const target = this.target
    if (target === undefined) {
      response.statusCode = 404
      response.end(JSON.stringify({ message: "The requested webhook is not registered." }))
    } else {
      // What n8n's parseBody leaves on the request.
      const webhookRequest = Object.assign(request, {
        rawBody,
        readRawBody: async () => {},
        contentType: request.headers["content-type"]?.split(";")[0],
        body: request.headers["content-type"]?.startsWith("application/json") ? safeJson(rawBody) : {},
        params: {},
        query: {}
      })
      try {
        const result = await target.harness.webhook(target.workflow, target.nodeName, webhookRequest, expressResponse(response))
        if (result.noWebhookResponse === true) {
          if (!response.writableEnded) response.end()
        } else if (result.workflowData === undefined) {
          response.setHeader("content-type", "application/json")
          response.end(JSON.stringify(result.webhookResponse ?? { message: "Webhook call received" }))
        } else {
          response.setHeader("content-type", "application/json")
          response.end(JSON.stringify({ message: "Workflow was started" }))
          runOptions = { items: result.workflowData[0] ?? [], mode: "webhook" }
        }
      } catch {
        response.statusCode = 500
        response.end(JSON.stringify({ message: "Workflow Webhook Error: Workflow could not be started!" }))
      }
    }
    // n8n answers first and runs the workflow afterwards (response mode "On Received").
    const run = runOptions !== undefined && target !== undefined ? await target.harness.run(target.json, runOptions) : undefined
    this.deliveries.push({ path, headers: request.headers, rawBody, status: response.statusCode, responseBody: answered(), run })
  }

  /** Waits until a recorded request satisfies the predicate. */
  async waitFor(predicate: (delivery: Delivery) => boolean, timeoutMs = 20_000): Promise<Delivery> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const found = this.deliveries.find(predicate)
      if (found !== undefined) return found
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`No matching webhook request within ${timeoutMs} ms; got ${this.deliveries.length}`)
  }

  /** Posts a request of one's own to the receiver, over HTTP as any sender would, and returns its record. */
  async post(path: string, headers: Record<string, string>, body: string | Buffer): Promise<Delivery> {
    const before = this.deliveries.length
    await fetch(`${this.baseUrl.replace(/\/webhook$/, "")}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body
    })
    return await this.waitFor((delivery) => this.deliveries.indexOf(delivery) >= before, 10_000)
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

function safeJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"))
  } catch {
    return {}
  }
}

/** Records what is written to the response; returns a reader of it. */
function captureBody(response: ServerResponse): () => string {
  let text = ""
  const end = response.end.bind(response)
  response.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk === "string" || Buffer.isBuffer(chunk)) text += chunk.toString()
    return (end as (...args: unknown[]) => ServerResponse)(chunk, ...rest)
  }) as ServerResponse["end"]
  return () => text
}
