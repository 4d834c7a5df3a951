/** Scope enforcement: every endpoint names its scope in the contract; handlers check it here. */
import { Effect } from "effect"
import { ScopeMissing } from "../contract/Errors.js"
import type { Scope } from "../contract/Primitives.js"
import { Caller } from "./Caller.js"

export const requireScope = (scope: Scope): Effect.Effect<void, ScopeMissing, Caller> =>
  Effect.flatMap(Caller, (caller) =>
    caller.scopes.has(scope)
      ? Effect.void
      : Effect.fail(new ScopeMissing({ message: `This API key lacks the ${scope} scope this endpoint requires.` })))
