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
) =>
  Effect.gen(function*() {
    const scope = endpointScopes.get(endpoint)
    if (scope === undefined) return yield* Effect.dieMessage(`no scope in the contract for ${endpoint}`)
    const caller = yield* provided(Caller)
    if (!caller.scopes.has(scope)) {
      return yield* new ScopeMissing({ message: `This API key lacks the ${scope} scope this endpoint requires.` })
    }
    return yield* work(caller)
  }).pipe(infrastructureErrors)
