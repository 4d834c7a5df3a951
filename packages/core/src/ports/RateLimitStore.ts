/**
 * Port: sliding-window request counters. Time is cut into buckets (a twentieth
 * of the window each), and each bucket keeps its count and the time of its
 * latest request. A request is let through when the requests counted in the
 * buckets that overlap the last window leave room for it under the limit, and
 * only requests let through are counted (a client that waits for its
 * Retry-After is not held back by the requests it was refused).
 *
 * The buckets counted with a request are the current one and the BUCKETS - 1
 * before it, whole, and the one before those (the oldest, which straddles the
 * window's start) whole while its latest request is still inside the window,
 * not at all afterwards. That is exact in the direction that matters: no
 * stretch of one window ever holds more than the limit, wherever it starts
 * (a fixed window let a client send its whole limit at the end of one window
 * and again at the start of the next; the usual weighted two-window estimate
 * still let ~1.5x through in a rolling minute). And a bucket stops counting
 * one window after its latest request, so a refused request is told to wait
 * at most the window (counting the oldest bucket whole until it ended made
 * that up to one bucket longer: `Retry-After: 61` on a 60-second window).
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
  /** Now, epoch ms: the time of this request, kept as its bucket's latest. */
  readonly at: number
  /** The window's start, epoch ms (`at` - window): requests at or before it no longer count. */
  readonly since: number
  readonly limit: number
}

/** A bucket as counted: its requests and the time of its latest one (epoch ms). */
export interface CountedBucket {
  readonly bucket: number
  readonly count: number
  readonly last: number
}

export type RateLimitCount =
  /** Let through; `used` counts it and every request in the buckets counted with it. */
  | { readonly accepted: true; readonly used: number }
  /** Refused; the buckets still counted, oldest first, to tell when one will fit. */
  | { readonly accepted: false; readonly buckets: ReadonlyArray<CountedBucket> }

export interface RateLimitStoreService {
  readonly hit: (hit: RateLimitHit) => Effect.Effect<RateLimitCount, StorageError>
}

export class RateLimitStore extends Context.Tag("@parley/core/ports/RateLimitStore")<
  RateLimitStore,
  RateLimitStoreService
>() {}

/** The oldest bucket counted with `bucket` (counted only while its latest request is inside the window). */
export const oldestCounted = (bucket: number): number => bucket - BUCKETS

/** Whether a bucket counts for a request in `current` whose window starts after `since` (epoch ms). */
export const counts = (counted: CountedBucket, current: number, since: number): boolean =>
  counted.bucket > oldestCounted(current) || (counted.bucket === oldestCounted(current) && counted.last > since)

/**
 * Counters in this process's memory. Each `hit` is one synchronous step, so
 * concurrent requests cannot interleave inside it. A key's buckets that no
 * longer count are dropped when it is next hit, and keys idle for a whole
 * window are swept once a window, so memory stays a few entries per recent key.
 * A restart starts every count again.
 */
export const layerMemory: Layer.Layer<RateLimitStore> = Layer.sync(RateLimitStore, () => {
  const keys = new Map<string, Array<{ bucket: number; count: number; last: number }>>()
  let lastSweep = Number.NEGATIVE_INFINITY
  return RateLimitStore.of({
    hit: ({ at, bucket, key, limit, since }) =>
      Effect.sync((): RateLimitCount => {
        const oldest = oldestCounted(bucket)
        if (bucket - lastSweep > BUCKETS) {
          lastSweep = bucket
          for (const [k, buckets] of keys) if ((buckets.at(-1)?.bucket ?? oldest - 1) < oldest) keys.delete(k)
        }
        const buckets = (keys.get(key) ?? []).filter((b) => counts(b, bucket, since))
        keys.set(key, buckets)
        const used = buckets.reduce((sum, b) => sum + b.count, 0)
        if (used + 1 > limit) return { accepted: false, buckets: buckets.map((b) => ({ ...b })) }
        const current = buckets.at(-1)
        if (current !== undefined && current.bucket === bucket) {
          current.count++
          current.last = Math.max(current.last, at)
        } else {
          buckets.push({ bucket, count: 1, last: at })
        }
        return { accepted: true, used: used + 1 }
      })
  })
})
