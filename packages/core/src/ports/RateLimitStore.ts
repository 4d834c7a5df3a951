/**
 * Port: fixed-window request counters. `hit` counts one request in the window
 * that starts at `windowStart` and answers the count so far; a new window
 * starts the count again. One atomic statement in the SQL layers, so the limit
 * is exact across processes.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { StorageError } from "./StorageError.js"

export interface RateLimitStoreService {
  readonly hit: (key: string, windowStart: number) => Effect.Effect<number, StorageError>
}

export class RateLimitStore extends Context.Tag("@parley/core/ports/RateLimitStore")<
  RateLimitStore,
  RateLimitStoreService
>() {}

export const layerMemory: Layer.Layer<RateLimitStore> = Layer.effect(
  RateLimitStore,
  Effect.gen(function*() {
    const windows = yield* Ref.make(new Map<string, { readonly windowStart: number; readonly count: number }>())
    return RateLimitStore.of({
      hit: (key, windowStart) =>
        Ref.modify(windows, (m) => {
          const current = m.get(key)
          const count = current !== undefined && current.windowStart === windowStart ? current.count + 1 : 1
          return [count, new Map(m).set(key, { windowStart, count })]
        })
    })
  })
)
