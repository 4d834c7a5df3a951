/**
 * The Authorization middleware of the contract, implemented over the core's
 * Authenticator: key, rate limit, organisation access. It also writes the
 * rate-limit headers (IETF draft `RateLimit-Policy` / `RateLimit`, and
 * `Retry-After` on 429) onto whatever response the request ends with.
 */
import {
  Authenticator,
  Authorization,
  type Crm,
  type CrmRateLimited,
  type CrmRejected,
  type CrmUnavailable,
  RateLimiter,
  type SetupRequired,
  type SetupUnavailable,
  type StorageError
} from "@parley/core/internal"
import { Effect, Layer, Redacted } from "effect"
import { KeyUsage } from "../store/KeyUsage.js"
import { infrastructureErrors } from "./ErrorResponses.js"
import { setResponseHeaders } from "./RequestState.js"

const rateLimitHeaders = (limit: number, windowSeconds: number, remaining: number, resetSeconds: number) =>
  setResponseHeaders({
    "ratelimit-policy": `${limit};w=${windowSeconds}`,
    "ratelimit": `limit=${limit}, remaining=${remaining}, reset=${resetSeconds}`
  })

const counted = (decision: RateLimiter.RateLimitDecision) =>
  rateLimitHeaders(decision.limit, decision.windowSeconds, decision.remaining, decision.resetSeconds)

type Failure = Effect.Effect.Error<ReturnType<Authenticator.AuthenticatorService["authenticate"]>>

export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator.Authenticator
    const policy = yield* RateLimiter.RateLimitConfig
    const usage = yield* KeyUsage
    return Authorization.of({
      // Every request runs this: one match on the outcome rather than a tap, map and two catches around it.
      // The headers are set once the request is counted, so a refusal for the organisation's state (403, 503)
      // carries them too.
      bearer: (token) =>
        Effect.matchEffect(authenticator.authenticate(Redacted.value(token), counted), {
          onSuccess: ({ caller }) => {
            usage.touch(caller.keyId)
            return Effect.succeed(caller)
          },
          onFailure: (error: Failure): Effect.Effect<never, Exclude<Failure, StorageError | Crm.CrmError> | SetupUnavailable | CrmUnavailable | CrmRejected | SetupRequired | CrmRateLimited> => {
            if (error._tag !== "RateLimited") return infrastructureErrors(Effect.fail(error))
            const retryAfter = error.retryAfterSeconds ?? policy.windowSeconds
            return Effect.zipRight(
              Effect.zipRight(
                rateLimitHeaders(policy.limit, policy.windowSeconds, 0, retryAfter),
                setResponseHeaders({ "retry-after": String(retryAfter) })
              ),
              Effect.fail(error)
            )
          }
        })
    })
  })
)
