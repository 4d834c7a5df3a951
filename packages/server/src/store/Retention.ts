/**
 * Retention: idempotency records past their expiry are deleted every ten
 * minutes (they are kept at least 24 hours, see the core's Idempotency).
 * Runs beside the server; a failed sweep is logged and tried again later.
 */
import { Clock, Effect, Layer, Schedule } from "effect"
import { IdempotencyStore } from "@parley/core/domain"

const sweep = Effect.gen(function*() {
  const store = yield* IdempotencyStore.IdempotencyStore
  const purged = yield* store.purgeExpired(yield* Clock.currentTimeMillis)
  if (purged > 0) yield* Effect.annotateLogs(Effect.logInfo("expired idempotency records purged"), { purged })
}).pipe(Effect.catchAll((error) => Effect.logWarning(`retention sweep failed: ${error.operation}`)))

export const RetentionLive = Layer.scopedDiscard(
  Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced("10 minutes")))
)
