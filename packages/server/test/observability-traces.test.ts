/**
 * Traces: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver
 * (test/support/otlpReceiver.ts, decoding protobuf with the official proto
 * definitions), one text's request arrives as a server span named by its route
 * template with its status and organisation, with database child spans; the
 * text's dispatch and its webhook delivery, run later by the loops, are
 * children in the same trace. No span carries the key, the number or the body.
 */
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type OtlpReceiver as Receiver, OtlpReceiver, type ReceivedSpan } from "./support/otlpReceiver.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const BODY = "Traced text: your appointment is at 10"
const TO = "+14155557788"

describe("traces over OTLP/HTTP", () => {
  let receiver: Receiver
  let hooks: Server
  let hooksUrl: string
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    receiver = await OtlpReceiver.start()
    hooks = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(200).end())
    })
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve))
    const address = hooks.address()
    hooksUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/hook`
    server = await TestServer.start({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: "parley-under-test",
        PARLEY_SIM_STEP_MS: "50"
      }
    })
    demo = await server.demo()
    await server.adminJson(["webhooks", "add", "--org", demo.orgId, "--url", hooksUrl])
  })

  afterAll(async () => {
    await server.dispose()
    await receiver.close()
    await new Promise<void>((resolve) => hooks.close(() => resolve()))
  })

  /** The chain of spans from `span` up to the root of its trace, as received. */
  const ancestors = (span: ReceivedSpan): Array<ReceivedSpan> => {
    const chain: Array<ReceivedSpan> = []
    let parent = span.parentSpanId
    while (parent !== "") {
      const found = receiver.spans.find((s) => s.spanId === parent && s.traceId === span.traceId)
      if (found === undefined) break
      chain.push(found)
      parent = found.parentSpanId
    }
    return chain
  }

  it("exports the request's span, its database spans, and the dispatch and delivery under it", async () => {
    const response = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": "traced-1" },
      body: JSON.stringify({ to: TO, fromNumberSid: demo.numbers[0]!.sid, body: BODY })
    })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }

    const dispatch = await until(async () =>
      receiver.spans.find((s) => s.name === "action.dispatch" && s.attributes["parley.action_id"] === id), {
      timeoutMs: 30_000,
      what: "the dispatch span"
    })
    const request = receiver.spans.find((s) => s.name === "POST /api/v1/messages" && s.traceId === dispatch.traceId)
    expect(request, JSON.stringify(receiver.spans.map((s) => s.name))).toBeDefined()
    expect(request!.kind).toBe(2) // SERVER
    expect(request!.parentSpanId).toBe("")
    expect(request!.service).toBe("parley-under-test")
    expect(request!.attributes["http.route"]).toBe("/api/v1/messages")
    expect(request!.attributes["http.response.status_code"]).toBe(202)
    expect(request!.attributes["parley.org_id"]).toBe(demo.orgId)
    expect(request!.attributes["parley.request_id"]).toBe(response.headers.get("x-request-id"))

    // The dispatch, run later by the dispatcher loop, is a child in the request's trace.
    expect(ancestors(dispatch).map((s) => s.spanId)).toContain(request!.spanId)
    expect(dispatch.attributes["parley.provider"]).toBe("simulator")

    // Database statements of the request are spans under it.
    const underRequest = receiver.spans.filter((s) =>
      s.traceId === request!.traceId && ancestors(s).some((a) => a.spanId === request!.spanId)
    )
    expect(underRequest.some((s) => s.name.startsWith("sql.")), JSON.stringify(underRequest.map((s) => s.name))).toBe(
      true
    )

    // The webhook delivery of the text's events is in the same trace, under the request.
    const delivery = await until(async () =>
      receiver.spans.find((s) => s.name === "webhook.deliver" && s.traceId === request!.traceId), {
      timeoutMs: 30_000,
      what: "a delivery span in the request's trace"
    })
    expect(ancestors(delivery).map((s) => s.spanId)).toContain(request!.spanId)

    // Nothing secret or personal in any span.
    const everything = JSON.stringify(receiver.spans)
    for (const secret of [demo.keys.live, demo.keys.test, BODY, TO, TO.slice(1)]) {
      expect(everything).not.toContain(secret)
    }
    expect([...receiver.contentTypes]).toEqual(["application/x-protobuf"])
  })
})
