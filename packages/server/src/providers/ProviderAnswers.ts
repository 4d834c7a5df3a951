/**
 * What every provider client (providers/<name>/) does alike around one exchange (ProviderExchange.ts):
 * the fields of their errors, and what no answer or an answer that is not a success becomes. Each client
 * keeps its own error class, whose tag the provider adapters tell failures apart by, and its own reading
 * of the provider's error bodies; only the decisions that must be the same for every provider live here.
 */
import { Clock, Effect, Option } from "effect"
import { type ProviderExchange, retryAfterMs } from "./ProviderExchange.js"

/** What a failure means for the caller (providers/Provider.ts, ProviderFailure); a client may add its own. */
export type ProviderFailureReason = "rejected" | "rate_limited" | "auth_failed" | "unavailable" | "unknown_outcome"

/** The fields every provider client's error carries. */
export interface ProviderFailureFields<R extends string = ProviderFailureReason> {
  readonly reason: R
  /** The HTTP status, when there was an answer. */
  readonly status: number | null
  /** The provider's message (or ours when it gave none); never a key or token. */
  readonly message: string
  /** From Retry-After on 429/503, when present. */
  readonly retryAfterMs: number | null
}

export type Answered = Extract<ProviderExchange, { _tag: "Answered" }>

/** How a client builds its error for no answer (`detail` says why) and for an answer that is not a success. */
export interface ClientFailures<E> {
  readonly connection: (reason: "unavailable" | "unknown_outcome", detail: string) => E
  readonly answered: (answer: Answered, now: number) => E
}

/** Retry-After is advice only on 429 and 503; elsewhere it says nothing about this request. */
export const retryAdvice = (answer: Answered, now: number): number | null =>
  answer.status === 429 || answer.status === 503 ? retryAfterMs(answer.retryAfter, now) : null

/** A path under an account's API base (a base may end in slashes). */
export const apiUrl = (apiBase: string, path: string): string => `${apiBase.replace(/\/+$/, "")}${path}`

/**
 * The 2xx answer to a create. Not sent is `unavailable` (a retry cannot duplicate); a lost answer is
 * `unknown_outcome` (the provider may have acted: the caller reconciles before trying again).
 */
export const createdAnswer = <E>(answer: ProviderExchange, failures: ClientFailures<E>): Effect.Effect<Answered, E> => {
  switch (answer._tag) {
    case "NotSent":
      return Effect.fail(failures.connection("unavailable", answer.reason))
    case "OutcomeUnknown":
      return Effect.fail(failures.connection("unknown_outcome", answer.reason))
    case "Answered":
      return answer.status >= 200 && answer.status < 300
        ? Effect.succeed(answer)
        : Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(failures.answered(answer, now)))
  }
}

/** The 200 answer to a read. A read changes nothing, so no answer at all is only `unavailable`. */
export const readAnswer = <E>(answer: ProviderExchange, failures: ClientFailures<E>): Effect.Effect<Answered, E> => {
  if (answer._tag !== "Answered") return Effect.fail(failures.connection("unavailable", answer.reason))
  if (answer.status !== 200) return Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(failures.answered(answer, now)))
  return Effect.succeed(answer)
}

/** The 200 answer to a read of one resource, or None when the status says there is no such resource (`absent`). */
export const foundAnswer = <E>(
  answer: ProviderExchange,
  failures: ClientFailures<E>,
  absent: ReadonlyArray<number>
): Effect.Effect<Option.Option<Answered>, E> =>
  answer._tag === "Answered" && absent.includes(answer.status)
    ? Effect.succeed(Option.none())
    : Effect.map(readAnswer(answer, failures), Option.some)
