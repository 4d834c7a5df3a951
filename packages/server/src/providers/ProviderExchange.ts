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
import { type IncomingMessage, request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { WebhookAddresses } from "@parley/core/internal"
import { Effect, FiberRef, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { AddressRefused, guardedLookup } from "../events/WebhookPost.js"
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
  "ERR_INVALID_URL",
  "ERR_INVALID_PROTOCOL"
])

/** The most of an answer's body read: a provider's largest pages are far smaller. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024
/** The most of one string kept from an error answer (a provider's error message is a sentence). */
const MAX_ERROR_TEXT = 300

/**
 * What an error answer may pass on to the clients, who copy its message into a record's `errorMessage`:
 * JSON only (every provider answers errors in JSON), each string cut to MAX_ERROR_TEXT characters; any
 * other body is dropped, and the client says "answered HTTP <status>" instead. So what a record shows of
 * an error answer is provider-shaped and bounded, whatever answered.
 */
const boundedErrorBody = (body: string): string => {
  const json = parseJson(body)
  if (typeof json !== "object" || json === null) return ""
  const bound = (value: unknown, depth: number): unknown =>
    typeof value === "string"
      ? value.slice(0, MAX_ERROR_TEXT)
      : depth > 3 || typeof value !== "object" || value === null
      ? (typeof value === "number" || typeof value === "boolean" ? value : null)
      : Array.isArray(value)
      ? value.slice(0, 10).map((item) => bound(item, depth + 1))
      : Object.fromEntries(Object.entries(value).slice(0, 20).map(([key, item]) => [key, bound(item, depth + 1)]))
  return JSON.stringify(bound(json, 0))
}

/** Said where an organisation reads it (a record's errorMessage): which host, not what it resolved to. */
const refusedReason = (host: string) =>
  `refused to connect to ${host}: not an address Parley may reach for providers (PARLEY_PROVIDER_ALLOWED_NETWORKS)`

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined

/**
 * The exchange on the wire, through node:http(s) with the webhook deliveries' address policy
 * (events/WebhookPost's guardedLookup): the decision is taken on the address each connection reaches, an
 * IP literal before connecting, a name inside the connection's own DNS lookup; link-local and metadata
 * addresses never, loopback and private networks only as PARLEY_PROVIDER_ALLOWED_NETWORKS says. A refused
 * address is NotSent: nothing left.
 */
const send = (request: ProviderRequest, allowed: WebhookAddresses.AllowedNetworks): Effect.Effect<ProviderExchange> =>
  Effect.async<ProviderExchange>((resume, signal) => {
    let target: URL
    try {
      target = new URL(request.url)
    } catch {
      return resume(Effect.succeed({ _tag: "NotSent", reason: "the API base is not a valid URL" }))
    }
    if (target.protocol !== "https:" && target.protocol !== "http:") {
      return resume(Effect.succeed({ _tag: "NotSent", reason: "the API base is not an http(s) URL" }))
    }
    const refused = WebhookAddresses.isMetadataName(target.hostname)
      ? `${target.hostname} is a cloud metadata service`
      : WebhookAddresses.isIpLiteral(target.hostname)
      ? WebhookAddresses.refusal(allowed, target.hostname)
      : null
    if (refused !== null) return resume(Effect.succeed({ _tag: "NotSent", reason: refusedReason(target.hostname) }))
    const timeout = AbortSignal.timeout(request.timeoutMs)
    let written = false
    let settled = false
    const finish = (answer: ProviderExchange) => {
      if (settled) return
      settled = true
      resume(Effect.succeed(answer))
    }
    const outgoing = (target.protocol === "https:" ? httpsRequest : httpRequest)(target, {
      method: request.method,
      headers: {
        ...request.headers,
        ...(request.body === undefined ? {} : { "content-length": String(Buffer.byteLength(request.body)) })
      },
      lookup: guardedLookup(allowed),
      signal: AbortSignal.any([signal, timeout])
    }, (response: IncomingMessage) => {
      const chunks: Array<Buffer> = []
      let size = 0
      response.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_ANSWER_BYTES) {
          response.destroy()
          return finish({ _tag: "OutcomeUnknown", reason: "the answer was too large" })
        }
        chunks.push(chunk)
      })
      // Reading the body is part of the exchange: a connection dropped after the
      // status line but before the body leaves the outcome unknown, not answered.
      response.on("end", () => {
        const status = response.statusCode ?? 0
        const body = Buffer.concat(chunks).toString("utf8")
        const retryAfter = response.headers["retry-after"] ?? null
        finish({ _tag: "Answered", status, retryAfter, body: status < 300 ? body : boundedErrorBody(body) })
      })
      response.on("error", (error) => outgoing.emit("error", error))
    })
    outgoing.on("socket", (socket) => {
      socket.once(socket.connecting ? "connect" : "ready", () => {
        written = true
      })
      if (!socket.connecting) written = true
    })
    outgoing.on("error", (error) => {
      if (error instanceof AddressRefused) return finish({ _tag: "NotSent", reason: refusedReason(target.hostname) })
      if (timeout.aborted) return finish({ _tag: "OutcomeUnknown", reason: `no answer within ${request.timeoutMs / 1000} s` })
      const code = errorCode(error)
      if (!written || (code !== undefined && BEFORE_SENDING.has(code))) {
        return finish({ _tag: "NotSent", reason: `could not connect (${code ?? "no connection"})` })
      }
      finish({ _tag: "OutcomeUnknown", reason: code !== undefined ? `the connection failed (${code})` : "the connection failed" })
    })
    outgoing.end(request.body)
  })

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
    // Without the server's settings (a client used on its own), only public addresses are reached.
    const config = yield* Effect.serviceOption(ServerConfig)
    const allowed = Option.match(config, {
      onNone: () => WebhookAddresses.NO_NETWORKS,
      onSome: (settings) => settings.providerAllowedNetworks
    })
    const answer = yield* send(request, allowed)
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
