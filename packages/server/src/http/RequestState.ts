/**
 * What the request pipeline keeps for the request being served, in its
 * fiber: the headers a handler or the authorization step adds to the answer
 * (rate-limit headers, `Retry-After`, `Idempotent-Replayed`), written onto
 * whatever response the request ends with, errors included; and the services
 * the contract's security middleware provides (the `Caller`).
 *
 * A fiber reference rather than services in the context: the security
 * middleware may not require services of its own, and adding a service to
 * the application's context copies the whole context, on every request.
 */
import { Context, Effect, FiberRef } from "effect"

export interface RequestState {
  readonly headers: Record<string, string>
  provided: Context.Context<never>
}

export const CurrentRequest: FiberRef.FiberRef<RequestState | null> = FiberRef.unsafeMake<RequestState | null>(null)

/** Sets headers on the current request's answer (nothing outside a request). */
export const setResponseHeaders = (headers: Readonly<Record<string, string>>): Effect.Effect<void> =>
  Effect.map(FiberRef.get(CurrentRequest), (current) => {
    if (current !== null) Object.assign(current.headers, headers)
  })

/** A service the security middleware provided to the current request; a defect outside one. */
export const provided = <I, S>(tag: Context.Tag<I, S>): Effect.Effect<S> =>
  Effect.flatMap(FiberRef.get(CurrentRequest), (current) =>
    current === null
      ? Effect.dieMessage(`${tag.key} is provided only while a request is served`)
      : Effect.succeed(Context.unsafeGet(current.provided, tag)))
