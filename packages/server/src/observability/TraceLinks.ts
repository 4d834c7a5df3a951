/**
 * Ties an action's later work to the request that created it, in traces: the
 * creating span's W3C traceparent is stored with the action (and with each
 * event about it), and the dispatch and the webhook deliveries, which run
 * later in a loop (maybe in another replica), open their spans as its
 * children. Everything here is a no-op unless traces are exported
 * (TracesExported): no statement, no allocation beyond a fiber-ref read.
 */
import { SqlClient } from "@effect/sql"
import type { EventOutbox } from "@parley/core/internal"
import { Effect, FiberRef, Option, Tracer } from "effect"

/**
 * Whether spans leave the process (Tracing.ts sets it with the exporter). Not Effect's own "tracer
 * enabled": a CLI command or a test runtime keeps Effect's in-memory tracer on with nothing exported, and
 * storing traceparents there would cost a statement per creation for nothing.
 */
export const TracesExported: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

const tracing = FiberRef.get(TracesExported)

/** `00-<trace id>-<span id>-01`, as the W3C Trace Context header writes a sampled parent. */
const traceParentOf = (span: Tracer.AnySpan): string => `00-${span.traceId}-${span.spanId}-01`

const TRACE_PARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/

/** The stored traceparent as a parent span for Effect.withSpan; none when absent or malformed. */
export const parentSpan = (traceParent: string | null | undefined): Option.Option<Tracer.ExternalSpan> => {
  const match = traceParent === null || traceParent === undefined ? null : TRACE_PARENT.exec(traceParent)
  return match === null || match[1] === undefined || match[2] === undefined
    ? Option.none()
    : Option.some(Tracer.externalSpan({ traceId: match[1], spanId: match[2], sampled: true }))
}

/**
 * Runs `effect` in a span that is a child of the stored traceparent (a new root when there is none). With
 * the tracer off, `effect` itself.
 */
export const withStoredParent = (
  name: string,
  traceParent: string | null | undefined,
  attributes: Record<string, unknown>
) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(tracing, (on) => {
    if (!on) return effect
    const parent = parentSpan(traceParent)
    return Effect.withSpan(effect, name, {
      kind: "consumer",
      attributes,
      ...(Option.isSome(parent) ? { parent: parent.value } : { root: true })
    })
  })

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** Stores the current span as the action's creator (in the creation's own transaction). */
  const recordAction = (actionId: string): Effect.Effect<void> =>
    Effect.flatMap(tracing, (on) =>
      !on ? Effect.void : Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
        Option.isNone(span)
          ? Effect.void
          : Effect.ignore(sql`UPDATE actions SET trace_parent = ${traceParentOf(span.value)} WHERE id = ${Number(actionId)}`)))

  /** Gives each event its action's traceparent (in the transaction that appends them). */
  const linkEvents = (events: ReadonlyArray<EventOutbox.OutboxEvent>): Effect.Effect<void> =>
    Effect.flatMap(tracing, (on) =>
      !on ? Effect.void : Effect.forEach(events, ({ id, subject }) =>
        subject === undefined ? Effect.void : Effect.ignore(
          sql`UPDATE events SET trace_parent = (SELECT trace_parent FROM actions WHERE id = ${Number(subject.actionId)})
              WHERE id = ${id}`
        ), { discard: true }))

  /** The stored traceparents of these actions (empty with the tracer off). */
  const actionParents = (ids: ReadonlyArray<number | string>): Effect.Effect<ReadonlyMap<string, string>> =>
    Effect.flatMap(tracing, (on) =>
      !on || ids.length === 0 ? Effect.succeed(new Map<string, string>()) : sql<{ id: unknown; trace_parent: string | null }>`
        SELECT id, trace_parent FROM actions WHERE id IN ${sql.in(ids.map(Number))} AND trace_parent IS NOT NULL`.pipe(
        Effect.map((rows) => new Map(rows.flatMap((r) => r.trace_parent === null ? [] : [[String(r.id), r.trace_parent]]))),
        Effect.orElseSucceed(() => new Map<string, string>())
      ))

  return { recordAction, linkEvents, actionParents }
})

export type TraceLinks = Effect.Effect.Success<typeof make>
