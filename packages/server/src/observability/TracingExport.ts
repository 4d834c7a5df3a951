/**
 * The OpenTelemetry SDK and its OTLP/protobuf exporter, loaded only when traces are exported
 * (Tracing.ts imports this module on demand): unset, the process never parses them, which keeps
 * their code out of an idle server's memory (docs/benchmarks.md, "Idle memory").
 */
import { NodeSdk } from "@effect/opentelemetry"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Layer } from "effect"

export const exportLayer = (url: string, serviceName: string): Layer.Layer<never> =>
  Layer.discard(NodeSdk.layer(() => ({
    resource: { serviceName },
    spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 1000 })
  })))
