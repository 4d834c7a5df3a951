/**
 * Port: sliding-window request counters. Time is cut into buckets (a twentieth
 * of the window each); a request is let through when the requests counted in
 * the buckets that overlap the last window — the current bucket and the
 * BUCKETS before it — leave room for it under the limit, and only requests let
 * through are counted (a client that waits for its Retry-After is not held
 * back by the requests it was refused).
 *
 * Counting the oldest bucket whole is what makes it exact: no stretch of one
 * window ever holds more than the limit, wherever it starts. (A fixed window
 * let a client send its whole limit at the end of one window and again at the
 * start of the next; the usual weighted two-window estimate still let ~1.5x
 * through in a rolling minute.) The price is small: a client sending steadily
 * at the full rate gets BUCKETS/(BUCKETS+1) of it, and a refused one waits at
 * most one bucket longer than the window.
 *
 * Two implementations: the SQL one (server) is one atomic statement, so the
 * limit is exact across processes sharing a database (Postgres, several
 * replicas); the in-process one here is exact for a single process (the
 * embedded SQLite server, tests) and costs no database write per request.
 */
import { Context, Effect, Layer } from "effect"
import type { StorageError } from "./StorageError.js"

/** Buckets in a window: each is windowMs / BUCKETS long, and BUCKETS + 1 of them are counted. */
export const BUCKETS = 20

export interface RateLimitHit {
  readonly key: string
  /** The current bucket: floor(now / bucket length). */
  readonly bucket: number
  readonly limit: number
}

export type RateLimitCount =
  /** Let through; `used` counts it and every request in the buckets counted with it. */
  | { readonly accepted: true; readonly used: number }
  /** Refused; the counts of the buckets still counted, oldest first, to tell when one will fit. */
  | { readonly accepted: false; readonly buckets: ReadonlyArray<{ readonly bucket: number; readonly count: number }> }

export interface RateLimitStoreService {
  readonly hit: (hit: RateLimitHit) => Effect.Effect<RateLimitCount, StorageError>
}

export class RateLimitStore extends Context.Tag("@parley/core/ports/RateLimitStore")<
  RateLimitStore,
  RateLimitStoreService
>() {}

/** The oldest bucket counted with `bucket`. */
export const oldestCounted = (bucket: number): number => bucket - BUCKETS

/**
 * Counters in this process's memory. Each `hit` is one synchronous step, so
 * concurrent requests cannot interleave inside it. A key's buckets that no
 * longer count are dropped when it is next hit, and keys idle for a whole
 * window are swept once a window, so memory stays a few entries per recent key.
 * A restart starts every count again.
 */
export const layerMemory: Layer.Layer<RateLimitStore> = Layer.sync(RateLimitStore, () => {
  const keys = new Map<string, Array<{ bucket: number; count: number }>>()
  let lastSweep = Number.NEGATIVE_INFINITY
  return RateLimitStore.of({
    hit: ({ bucket, key, limit }) =>
      Effect.sync((): RateLimitCount => {
        const oldest = oldestCounted(bucket)
        if (bucket - lastSweep > BUCKETS) {
          lastSweep = bucket
          for (const [k, buckets] of keys) if ((buckets.at(-1)?.bucket ?? oldest - 1) < oldest) keys.delete(k)
        }
        const buckets = (keys.get(key) ?? []).filter((b) => b.bucket >= oldest)
        keys.set(key, buckets)
        const used = buckets.reduce((sum, b) => sum + b.count, 0)
        if (used + 1 > limit) return { accepted: false, buckets: buckets.map((b) => ({ ...b })) }
        const current = buckets.at(-1)
        if (current !== undefined && current.bucket === bucket) current.count++
        else buckets.push({ bucket, count: 1 })
        return { accepted: true, used: used + 1 }
      })
  })
})
