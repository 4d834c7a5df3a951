/**
 * What every handler does before its own work: read the caller the
 * Authorization middleware provided, enforce the scope the contract names for
 * this endpoint, and turn infrastructure failures into contract errors.
 */
import { Caller, type CallerInfo, endpointScopes, ScopeMissing } from "@parley/core/internal"
import { Effect } from "effect"
import { infrastructureErrors } from "../ErrorResponses.js"
import { provided } from "../RequestState.js"

export const guarded = <A, E, R>(
  endpoint: string,
  work: (caller: CallerInfo) => Effect.Effect<A, E, R>
) => {
  const scope = endpointScopes.get(endpoint)
  // Every request runs this: chained steps rather than a generator (cheaper per step).
  return infrastructureErrors(
    Effect.flatMap(provided(Caller), (caller): Effect.Effect<A, E | ScopeMissing, R> => {
      if (scope === undefined) return Effect.dieMessage(`no scope in the contract for ${endpoint}`)
      return caller.scopes.has(scope)
        ? work(caller)
        : Effect.fail(new ScopeMissing({ message: `This API key lacks the ${scope} scope this endpoint requires.` }))
    })
  )
}
