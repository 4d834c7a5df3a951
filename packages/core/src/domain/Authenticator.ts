/**
 * Everything that happens before an endpoint's handler: the key (401), the
 * rate limit (429) and the organisation's access state (403/503). The server's
 * Authorization middleware is a thin adapter over this service.
 */
import { Context, Effect, Layer } from "effect"
import type { RateLimited, Unauthorized } from "../contract/Errors.js"
import type { CrmError } from "../ports/Crm.js"
import type { StorageError } from "../ports/StorageError.js"
import { Access, type AccessError } from "./Access.js"
import { ApiKeys } from "./ApiKeys.js"
import type { CallerInfo } from "./Caller.js"
import { type RateLimitDecision, RateLimiter } from "./RateLimiter.js"

export interface Authenticated {
  readonly caller: CallerInfo
  readonly rateLimit: RateLimitDecision
}

export interface AuthenticatorService {
  /**
   * `counted` is told the rate-limit decision as soon as the request is counted, before the organisation's
   * access is checked: a request refused for its organisation's state still counted, and its answer says so.
   */
  readonly authenticate: (
    token: string,
    counted?: (decision: RateLimitDecision) => Effect.Effect<void>
  ) => Effect.Effect<Authenticated, Unauthorized | RateLimited | AccessError | CrmError | StorageError>
}

export class Authenticator extends Context.Tag("@parley/core/Authenticator")<Authenticator, AuthenticatorService>() {}

export const layer: Layer.Layer<Authenticator, never, ApiKeys | RateLimiter | Access> = Layer.effect(
  Authenticator,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const limiter = yield* RateLimiter
    const access = yield* Access
    return Authenticator.of({
      // Every request runs this: chained steps rather than a generator (cheaper per step).
      authenticate: (token, counted) =>
        Effect.flatMap(keys.authenticate(token), (key) =>
          Effect.flatMap(limiter.consume(key.id), (rateLimit) => {
            const resolved = Effect.map(access.resolve(key), (caller): Authenticated => ({ caller, rateLimit }))
            return counted === undefined ? resolved : Effect.zipRight(counted(rateLimit), resolved)
          }))
    })
  })
)
