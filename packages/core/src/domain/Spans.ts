/**
 * Spans on the domain's hot paths, opened only while Effect's tracer is on. `Effect.withSpan` with the
 * tracer switched off (the server exports no traces: Tracing.ts) still makes a no-op span and provides
 * it to the effect, which copies the fiber's whole context and sets and restores a fiber reference
 * around it: about 25 run-loop steps per span on every creation, for a span nothing reads.
 */
import { Effect, FiberRef, type Tracer } from "effect"

export const spanned = (name: string, options?: Tracer.SpanOptions) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>> =>
  Effect.flatMap(FiberRef.get(FiberRef.currentTracerEnabled), (on) =>
    on ? Effect.withSpan(effect, name, options) : (effect as Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>>))
