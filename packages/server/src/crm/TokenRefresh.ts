/**
 * Refreshing an organisation's access token once, across processes and replicas: CRMs limit refreshes
 * (so many per refresh token per window) and 50 requests arriving at a token's expiry must not each
 * refresh it. Within a process one fiber per organisation refreshes while the others wait (SingleFlight);
 * across processes a lease in the connection's row (one conditional update) decides who refreshes, while
 * the others re-read the row until the new token is there.
 */
import { Clock, Effect } from "effect"
import { makeSingleFlight } from "./SingleFlight.js"

export interface TokenRefreshSteps<C, E> {
  /** The organisation's stored connection, its token as stored. */
  readonly load: (orgId: string) => Effect.Effect<C, E>
  /** Takes the connection's refresh lease until `until` (epoch ms) if nobody holds it; whether it did. */
  readonly takeLease: (orgId: string, now: number, until: number) => Effect.Effect<boolean, E>
  readonly releaseLease: (orgId: string) => Effect.Effect<void, unknown>
  /**
   * Refreshes (this process holds the lease) and stores the new token; answers it, or undefined when the
   * connection was replaced (a reconnect) while the refresh was on its way: the new one is read on the next turn.
   */
  readonly refresh: (connection: C) => Effect.Effect<string | undefined, E>
  /** How long a lease lasts (a process that dies holding it delays the next refresh this long). */
  readonly leaseMs: number
  /** How often a process that did not get the lease re-reads the row. */
  readonly waitMs: number
}

/**
 * `token(orgId, usable)`: the connection's token if `usable` accepts it (it answers the token, or undefined
 * when it is expiring or known stale), else one refreshed once for everyone asking.
 */
export const makeTokenRefresh = <C, E>(steps: TokenRefreshSteps<C, E>) => {
  const flight = makeSingleFlight()
  return (orgId: string, usable: (connection: C, now: number) => string | undefined) =>
    Effect.gen(function*() {
      const first = yield* steps.load(orgId)
      const stored = usable(first, yield* Clock.currentTimeMillis)
      if (stored !== undefined) return { token: stored, connection: first }
      return yield* flight(orgId, Effect.gen(function*() {
        for (;;) {
          const connection = yield* steps.load(orgId)
          const now = yield* Clock.currentTimeMillis
          const fresh = usable(connection, now)
          if (fresh !== undefined) return { token: fresh, connection }
          if (yield* steps.takeLease(orgId, now, now + steps.leaseMs)) {
            const refreshed = yield* Effect.ensuring(steps.refresh(connection), Effect.ignore(steps.releaseLease(orgId)))
            if (refreshed === undefined) continue
            return { token: refreshed, connection }
          }
          // Another process is refreshing: its token appears in the row shortly.
          yield* Effect.sleep(steps.waitMs)
        }
      }))
    })
}
