/**
 * Lets Node's event loop run (I/O, timers, signals) before going on.
 *
 * The store is synchronous (better-sqlite3), and Effect's scheduler yields to
 * microtasks, not to the event loop: a worker with a long backlog would keep
 * HTTP requests and even SIGTERM waiting. Background loops call this between
 * units of work; `setImmediate` costs microseconds, unlike a 1 ms timer.
 */
import { Effect } from "effect"

export const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})
