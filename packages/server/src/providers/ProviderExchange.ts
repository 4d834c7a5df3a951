/**
 * One HTTP exchange with a provider's API, told apart by what it
 * means for a send that must never happen twice:
 * - `Answered`: the provider answered, with any status.
 * - `NotSent`: the connection failed before a byte of the request could reach
 *   the provider (refused, no such host, no route), so a retry cannot duplicate.
 * - `OutcomeUnknown`: the request may have left (a timeout, a connection reset
 *   or dropped before the answer was read), so the provider may have acted and
 *   the caller must reconcile before trying again.
 * Redirects are not followed: a provider API that redirects a POST is not one
 * we should replay credentials against. Beside it, the few reading helpers
 * both provider clients share (JSON, Retry-After, constant-time comparison).
 */
import { timingSafeEqual } from "node:crypto"
import { Effect, FiberRef, Option } from "effect"
import { CurrentProvider, Metrics, type ProviderOutcome } from "../observability/Metrics.js"

export type ProviderExchange =
  | {
    readonly _tag: "Answered"
    readonly status: number
    readonly retryAfter: string | null
    readonly body: string
  }
  | { readonly _tag: "NotSent"; readonly reason: string }
  | { readonly _tag: "OutcomeUnknown"; readonly reason: string }

export interface ProviderRequest {
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  readonly timeoutMs: number
}

/** Failures that happen while connecting, before the request is written. */
const BEFORE_SENDING = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT"
])

// fetch wraps the socket error (`TypeError: fetch failed`, cause …), and when a
// host name has several addresses the cause is an AggregateError of one per address.
const errorCodes = (error: unknown, depth = 0): ReadonlyArray<string> => {
  if (depth > 4 || typeof error !== "object" || error === null) return []
  const own = "code" in error && typeof error.code === "string" ? [error.code] : []
  const cause = "cause" in error ? errorCodes(error.cause, depth + 1) : []
  const nested = "errors" in error && Array.isArray(error.errors)
    ? error.errors.flatMap((inner: unknown) => errorCodes(inner, depth + 1))
    : []
  return [...own, ...cause, ...nested]
}

const isTimeout = (error: unknown) =>
  typeof error === "object" && error !== null && "name" in error && error.name === "TimeoutError"

const failure = (error: unknown, timeoutMs: number): ProviderExchange => {
  if (isTimeout(error)) return { _tag: "OutcomeUnknown", reason: `no answer within ${timeoutMs / 1000} s` }
  const codes = errorCodes(error)
  if (codes.length > 0 && codes.every((code) => BEFORE_SENDING.has(code))) {
    return { _tag: "NotSent", reason: `could not connect (${codes[0]})` }
  }
  return {
    _tag: "OutcomeUnknown",
    reason: codes.length > 0 ? `the connection failed (${codes[0]})` : "the connection failed"
  }
}

const send = (request: ProviderRequest): Effect.Effect<ProviderExchange> =>
  Effect.tryPromise({
    try: async (signal): Promise<ProviderExchange> => {
      const response = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(request.timeoutMs)]),
        ...(request.body === undefined ? {} : { body: request.body })
      })
      // Reading the body is part of the exchange: a connection dropped after the
      // status line but before the body leaves the outcome unknown, not answered.
      const body = await response.text()
      return { _tag: "Answered", status: response.status, retryAfter: response.headers.get("retry-after"), body }
    },
    catch: (error) => error
  }).pipe(Effect.catchAll((error) => Effect.succeed(failure(error, request.timeoutMs))))

const outcomeOf = (answer: ProviderExchange): ProviderOutcome =>
  answer._tag === "NotSent"
    ? "not_sent"
    : answer._tag === "OutcomeUnknown"
    ? "outcome_unknown"
    : answer.status < 300
    ? "answered_2xx"
    : answer.status < 500
    ? "answered_4xx"
    : "answered_5xx"

/**
 * One exchange, counted and timed (parley_provider_requests_total, _duration_seconds) and traced as a
 * client span: the provider, the method, the host and the answer's status; never the path (it names the
 * provider account), the headers or the body.
 */
export const exchange = (request: ProviderRequest): Effect.Effect<ProviderExchange> =>
  Effect.gen(function*() {
    const provider = yield* FiberRef.get(CurrentProvider)
    const metrics = yield* Effect.serviceOption(Metrics)
    const started = performance.now()
    yield* Effect.annotateCurrentSpan("parley.provider", provider)
    const answer = yield* send(request)
    if (Option.isSome(metrics)) {
      metrics.value.providerRequest(provider, outcomeOf(answer), (performance.now() - started) / 1000)
    }
    yield* Effect.annotateCurrentSpan("parley.provider.outcome", outcomeOf(answer))
    if (answer._tag === "Answered") yield* Effect.annotateCurrentSpan("http.response.status_code", answer.status)
    return answer
  }).pipe(
    Effect.withSpan("provider.request", {
      kind: "client",
      attributes: { "http.request.method": request.method, "server.address": hostOf(request.url) }
    })
  )

const hostOf = (url: string): string => {
  try {
    return new URL(url).host
  } catch {
    return ""
  }
}

/**
 * Retry-After in ms from now: delay-seconds or an HTTP date; null when absent
 * or unreadable. (Same rule as the core's webhook delivery, kept here so the
 * provider clients depend on nothing but Effect.)
 */
export const retryAfterMs = (value: string | null, now: number): number | null => {
  if (value === null || value.trim() === "") return null
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}

/** Constant-time equality of two strings (false at once only when the lengths differ). */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** JSON.parse without throwing: undefined when the text is not JSON. */
export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
