/**
 * Port: fixed-window request counters. `hit` counts one request in the window
 * that starts at `windowStart` and answers the count so far; a new window
 * starts the count again.
 *
 * Two implementations: the SQL one (server) is one atomic statement, so the
 * limit is exact across processes sharing a database (Postgres, several
 * replicas); the in-process one here is exact for a single process (the
 * embedded SQLite server, tests) and costs no database write per request.
 */
import { Context, Effect, Layer } from "effect"
import type { StorageError } from "./StorageError.js"

export interface RateLimitStoreService {
  readonly hit: (key: string, windowStart: number) => Effect.Effect<number, StorageError>
}

export class RateLimitStore extends Context.Tag("@parley/core/ports/RateLimitStore")<
  RateLimitStore,
  RateLimitStoreService
>() {}

/**
 * Counters in this process's memory. Each `hit` is one synchronous step, so
 * concurrent requests cannot interleave inside it. Counters of windows that
 * have ended are dropped when a later window starts, so memory stays one entry
 * per key seen in the current window. A restart starts every count again.
 */
export const layerMemory: Layer.Layer<RateLimitStore> = Layer.sync(RateLimitStore, () => {
  const windows = new Map<string, { windowStart: number; count: number }>()
  let latestWindow = Number.NEGATIVE_INFINITY
  return RateLimitStore.of({
    hit: (key, windowStart) =>
      Effect.sync(() => {
        if (windowStart > latestWindow) {
          latestWindow = windowStart
          for (const [k, w] of windows) if (w.windowStart < windowStart) windows.delete(k)
        }
        const current = windows.get(key)
        if (current !== undefined && current.windowStart === windowStart) return ++current.count
        windows.set(key, { windowStart, count: 1 })
        return 1
      })
  })
})
