/**
 * Headers a handler or the authorization step adds to the answer of the
 * request being served (rate-limit headers, `Retry-After`,
 * `Idempotent-Replayed`). One mutable record per request, which the request
 * pipeline installs for the request's fiber and writes onto whatever
 * response the request ends with — the answer of an error included.
 *
 * A fiber reference rather than a service: the contract's security
 * middleware may not require services of its own.
 */
import { Effect, FiberRef } from "effect"

export const CurrentResponseHeaders: FiberRef.FiberRef<Record<string, string> | null> = FiberRef.unsafeMake<
  Record<string, string> | null
>(null)

/** Sets headers on the current request's answer (nothing outside a request). */
export const setResponseHeaders = (headers: Readonly<Record<string, string>>): Effect.Effect<void> =>
  Effect.map(FiberRef.get(CurrentResponseHeaders), (current) => {
    if (current !== null) Object.assign(current, headers)
  })
