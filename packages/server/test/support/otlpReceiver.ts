/**
 * An OTLP/HTTP trace receiver for tests, as an OpenTelemetry collector's
 * `otlphttp` receiver is: `POST /v1/traces` with an
 * `ExportTraceServiceRequest` in protobuf, decoded with the message types
 * generated from the official opentelemetry-proto definitions (as published
 * in @opentelemetry/otlp-transformer 0.208, here under the alias
 * otlp-proto-definitions), answered with an empty `ExportTraceServiceResponse`.
 */
import { createRequire } from "node:module"
import { createServer, type Server } from "node:http"

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer (the proto's SpanKind). */
  readonly kind: number
  readonly service: string
  readonly attributes: Readonly<Record<string, string | number | boolean>>
}

interface AnyValue {
  readonly stringValue?: string | null
  readonly intValue?: number | { readonly low: number; readonly high: number } | null
  readonly boolValue?: boolean | null
  readonly doubleValue?: number | null
}
interface KeyValue {
  readonly key: string
  readonly value?: AnyValue
}
interface DecodedRequest {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource?: { readonly attributes: ReadonlyArray<KeyValue> }
    readonly scopeSpans: ReadonlyArray<{
      readonly spans: ReadonlyArray<{
        readonly traceId: Uint8Array
        readonly spanId: Uint8Array
        readonly parentSpanId: Uint8Array | null
        readonly name: string
        readonly kind: number
        readonly attributes: ReadonlyArray<KeyValue>
      }>
    }>
  }>
}
interface MessageType {
  decode(bytes: Uint8Array): DecodedRequest
}

const require = createRequire(import.meta.url)
const root: {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: MessageType } } } } }
} = require("otlp-proto-definitions/build/src/generated/root.js")
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest

const hex = (bytes: Uint8Array | null | undefined) => (bytes === null || bytes === undefined ? "" : Buffer.from(bytes).toString("hex"))

// The oneof's unset fields decode as null; int64 comes as a number or a Long (low and high 32 bits).
const valueOf = (value: AnyValue | undefined): string | number | boolean => {
  if (value === undefined) return ""
  if (typeof value.stringValue === "string") return value.stringValue
  if (typeof value.boolValue === "boolean") return value.boolValue
  if (typeof value.doubleValue === "number") return value.doubleValue
  const int = value.intValue
  if (typeof int === "number") return int
  if (typeof int === "object" && int !== null) return int.high * 2 ** 32 + (int.low >>> 0)
  return ""
}

const attributesOf = (list: ReadonlyArray<KeyValue>) =>
  Object.fromEntries(list.map((kv) => [kv.key, valueOf(kv.value)]))

export class OtlpReceiver {
  readonly spans: Array<ReceivedSpan> = []
  readonly contentTypes = new Set<string>()

  private constructor(private readonly server: Server, readonly port: number) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`
  }

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        if (request.method !== "POST" || request.url !== "/v1/traces") {
          response.writeHead(404).end()
          return
        }
        receiver?.contentTypes.add(request.headers["content-type"] ?? "")
        const decoded = ExportTraceServiceRequest.decode(Buffer.concat(chunks))
        for (const resourceSpans of decoded.resourceSpans) {
          const service = String(attributesOf(resourceSpans.resource?.attributes ?? [])["service.name"] ?? "")
          for (const scope of resourceSpans.scopeSpans) {
            for (const span of scope.spans) {
              receiver?.spans.push({
                traceId: hex(span.traceId),
                spanId: hex(span.spanId),
                parentSpanId: hex(span.parentSpanId),
                name: span.name,
                kind: span.kind,
                service,
                attributes: attributesOf(span.attributes)
              })
            }
          }
        }
        // An empty ExportTraceServiceResponse: zero bytes in protobuf.
        response.writeHead(200, { "content-type": "application/x-protobuf" }).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    receiver = new OtlpReceiver(server, typeof address === "object" && address !== null ? address.port : 0)
    return receiver
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}
