/**
 * The Authorization middleware of the contract, implemented over the core's
 * Authenticator: key, rate limit, organisation access. It also writes the
 * rate-limit headers (IETF draft `RateLimit-Policy` / `RateLimit`, and
 * `Retry-After` on 429) onto whatever response the request ends with.
 */
import { Authenticator, Authorization, RateLimiter } from "@parley/core/internal"
import { Effect, Layer, Redacted } from "effect"
import { infrastructureErrors } from "./ErrorResponses.js"
import { setResponseHeaders } from "./RequestState.js"

const rateLimitHeaders = (limit: number, windowSeconds: number, remaining: number, resetSeconds: number) =>
  setResponseHeaders({
    "ratelimit-policy": `${limit};w=${windowSeconds}`,
    "ratelimit": `limit=${limit}, remaining=${remaining}, reset=${resetSeconds}`
  })

export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator.Authenticator
    const policy = yield* RateLimiter.RateLimitConfig
    return Authorization.of({
      bearer: (token) =>
        authenticator.authenticate(Redacted.value(token)).pipe(
          Effect.tap(({ rateLimit }) =>
            rateLimitHeaders(rateLimit.limit, rateLimit.windowSeconds, rateLimit.remaining, rateLimit.resetSeconds)
          ),
          Effect.map(({ caller }) => caller),
          Effect.tapErrorTag("RateLimited", (error) => {
            const retryAfter = error.retryAfterSeconds ?? policy.windowSeconds
            return Effect.zipRight(
              rateLimitHeaders(policy.limit, policy.windowSeconds, 0, retryAfter),
              setResponseHeaders({ "retry-after": String(retryAfter) })
            )
          }),
          infrastructureErrors
        )
    })
  })
)
