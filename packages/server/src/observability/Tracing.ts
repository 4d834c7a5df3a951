/**
 * Traces over OTLP/HTTP (protobuf) with the official OpenTelemetry SDK, when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set: Effect's spans
 * (the request's, the SQL client's statements, provider requests, dispatch and
 * delivery) become OpenTelemetry spans through @effect/opentelemetry, batched
 * and exported in the background.
 *
 * Unset, Effect's tracer is switched off altogether: the spans the core and
 * the SQL client would open on every request and statement are not built
 * (each captured a stack trace and a dozen attributes), and the request
 * pipeline opens none (docs/benchmarks.md has the request path both ways).
 */
import { Effect, Layer, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { TracesExported } from "./TraceLinks.js"

export const TracingLive: Layer.Layer<never, never, ServerConfig> = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config) =>
    Option.match(config.otlpTracesUrl, {
      onNone: () => Layer.setTracerEnabled(false),
      onSome: (url) =>
        Layer.merge(
          // Loaded only here: a server that exports no traces never parses the SDK.
          Layer.unwrapEffect(Effect.promise(() =>
            import("./TracingExport.js").then(({ exportLayer }) => exportLayer(url, config.serviceName))
          )),
          Layer.scopedDiscard(Effect.locallyScoped(TracesExported, true))
        )
    }))
)

/** Whether traces are exported: the request pipeline opens its spans only then. */
export const tracingEnabled = Effect.map(ServerConfig, (config) => Option.isSome(config.otlpTracesUrl))
