/**
 * The time rules of creation and cancellation, read through Effect's Clock:
 * - `scheduledFor` must be at least 30 seconds ahead when the request arrives,
 *   and at most 365 days ahead (further is almost always a mistaken year, and
 *   a record kept that long outlives the CRM's own scheduling horizon);
 * - an action can be cancelled only while Queued and scheduled more than 30
 *   seconds ahead (the dispatcher never claims an action that close to its
 *   time while a cancellation could still win, see the server's dispatcher).
 */
import { Clock, Effect } from "effect"
import { InvalidRequest } from "../contract/Errors.js"

export const MIN_LEAD_MS = 30_000
export const MAX_HORIZON_DAYS = 365
const MAX_HORIZON_MS = MAX_HORIZON_DAYS * 86_400_000

/** The instant an action becomes due (epoch ms): its scheduledFor, or now. */
export const validateScheduledFor = (
  scheduledFor: string | undefined
): Effect.Effect<{ readonly dueAt: number; readonly scheduledFor: string | null }, InvalidRequest> =>
  // Every creation runs this: one step after the clock, no generator.
  Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<{ readonly dueAt: number; readonly scheduledFor: string | null }, InvalidRequest> => {
    if (scheduledFor === undefined) return Effect.succeed({ dueAt: now, scheduledFor: null })
    const at = Date.parse(scheduledFor)
    if (at - now < MIN_LEAD_MS) {
      return Effect.fail(
        new InvalidRequest({ message: "scheduledFor: must be at least 30 seconds in the future (omit it to send now)." })
      )
    }
    if (at - now > MAX_HORIZON_MS) {
      return Effect.fail(new InvalidRequest({ message: `scheduledFor: must be at most ${MAX_HORIZON_DAYS} days in the future.` }))
    }
    return Effect.succeed({ dueAt: at, scheduledFor: new Date(at).toISOString() })
  })

/** The instant after which a scheduledFor still allows cancellation. */
export const cancellationHorizon = (now: number): string => new Date(now + MIN_LEAD_MS).toISOString()
