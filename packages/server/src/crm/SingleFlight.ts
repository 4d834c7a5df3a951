/**
 * One at a time per key, within a process: a cache miss read by many concurrent requests at once (50 sends
 * arriving together) is read from the CRM once, by the first, while the others wait and then find it cached —
 * not 50 identical calls spending the CRM's credits and its concurrency slots.
 */
import { Effect } from "effect"

export const makeSingleFlight = () => {
  const locks = new Map<string, Effect.Semaphore>()
  return <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    let lock = locks.get(key)
    if (lock === undefined) {
      lock = Effect.unsafeMakeSemaphore(1)
      locks.set(key, lock)
    }
    return lock.withPermits(1)(effect)
  }
}
