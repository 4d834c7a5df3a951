/**
 * The only module that talks HTTP to HubSpot: the OAuth token API (the date-versioned `/oauth/2026-03/…`
 * endpoints, every parameter in a form-encoded body; the v1 endpoints are retired on 2027-02-16) and the CRM
 * API v3. Every failure becomes a CrmError whose reason says how Parley's API answers it (Crm.CrmFailure):
 * 429 → `busy` after a bounded retry of the ten-secondly limit, 5xx or no answer → `unavailable`, 403 →
 * `permission_denied`, a VALIDATION_ERROR → `rejected` naming the property. HubSpot's error body
 * (`{status, message, correlationId, category}`) goes to the log, never a token, and never into an answer.
 */
import { Crm } from "@parley/core/domain"
import { Data, Effect, Schedule } from "effect"

/** How long one call to HubSpot may take before it counts as no answer. */
export const CALL_TIMEOUT_MS = 10_000

/** The token endpoint refused the grant: `category` says which part (BAD_REFRESH_TOKEN, BAD_CLIENT_SECRET…). */
export class HubSpotTokenRefused extends Data.TaggedError("HubSpotTokenRefused")<{ readonly category: string }> {}

/** 401 from the CRM: the access token expired or was revoked; refresh and try once more. */
export class HubSpotInvalidToken extends Data.TaggedError("HubSpotInvalidToken")<{}> {}

export interface TokenAnswer {
  readonly accessToken: string
  readonly refreshToken: string
  readonly expiresInSeconds: number
  readonly hubId: string
  readonly userId: string
  readonly scopes: ReadonlyArray<string>
}

export interface TokenMetadata {
  readonly active: boolean
  readonly userId: string
  readonly user: string
  readonly hubId: string
  readonly hubDomain: string
}

export interface CrmAnswer {
  readonly status: number
  readonly json: unknown
}

export const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

export const text = (record: Readonly<Record<string, unknown>>, field: string): string | undefined => {
  const value = record[field]
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined
}

const unavailable = (operation: string, cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

interface Raw {
  readonly status: number
  readonly json: unknown
  readonly headers: Headers
}

const send = (operation: string, url: string, init: RequestInit): Effect.Effect<Raw, Crm.CrmError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]) })
      const body = await response.text()
      let json: unknown = undefined
      try {
        json = body === "" ? undefined : JSON.parse(body)
      } catch {
        json = undefined
      }
      return { status: response.status, json, headers: response.headers }
    },
    catch: (cause) => unavailable(operation, cause instanceof Error ? cause.name : "no answer")
  })

/** HubSpot's error body, as the log keeps it (no token is ever part of it). */
const logRefusal = (operation: string, status: number, json: unknown) =>
  isRecord(json)
    ? Effect.annotateLogs(Effect.logWarning("hubspot refused a call"), {
      operation,
      status,
      category: text(json, "category") ?? "",
      correlationId: text(json, "correlationId") ?? "",
      message: (text(json, "message") ?? "").slice(0, 500),
      ...(text(json, "policyName") === undefined ? {} : { policyName: text(json, "policyName") })
    })
    : Effect.annotateLogs(Effect.logWarning("hubspot refused a call"), { operation, status })

const form = (params: Readonly<Record<string, string>>): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(params).toString()
})

/** `POST /oauth/2026-03/token`: an authorization code or a refresh token for an access token. */
export const tokenRequest = (
  apiOrigin: string,
  params: Readonly<Record<string, string>>
): Effect.Effect<TokenAnswer, HubSpotTokenRefused | Crm.CrmError> =>
  Effect.flatMap(send("hubspot.token", `${apiOrigin}/oauth/2026-03/token`, form(params)), (raw): Effect.Effect<TokenAnswer, HubSpotTokenRefused | Crm.CrmError> => {
    const { json, status } = raw
    if (status === 429) return Effect.fail(new Crm.CrmError({ operation: "hubspot.token", cause: "429", reason: "busy", retryAfterSeconds: 10 }))
    if (status >= 500 || !isRecord(json)) return Effect.fail(unavailable("hubspot.token", `status ${status}`))
    if (status >= 400) {
      return Effect.zipRight(
        logRefusal("hubspot.token", status, json),
        Effect.fail(new HubSpotTokenRefused({ category: text(json, "category") ?? text(json, "status") ?? "REFUSED" }))
      )
    }
    const accessToken = text(json, "access_token")
    const refreshToken = text(json, "refresh_token")
    const hubId = text(json, "hub_id")
    const userId = text(json, "user_id")
    if (accessToken === undefined || refreshToken === undefined || hubId === undefined || userId === undefined) {
      return Effect.fail(unavailable("hubspot.token", "incomplete token answer"))
    }
    const scopes = json["scopes"]
    return Effect.succeed({
      accessToken,
      refreshToken,
      hubId,
      userId,
      expiresInSeconds: typeof json["expires_in"] === "number" ? json["expires_in"] : 1800,
      scopes: Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === "string") : []
    })
  })

/** `POST /oauth/2026-03/token/introspect`: who and which portal an access token belongs to. */
export const introspect = (
  apiOrigin: string,
  params: { readonly clientId: string; readonly clientSecret: string; readonly token: string }
): Effect.Effect<TokenMetadata, Crm.CrmError> =>
  Effect.flatMap(
    send("hubspot.introspect", `${apiOrigin}/oauth/2026-03/token/introspect`, form({
      client_id: params.clientId,
      client_secret: params.clientSecret,
      token: params.token,
      token_type_hint: "access_token"
    })),
    ({ json, status }) => {
      if (status !== 200 || !isRecord(json)) return Effect.fail(unavailable("hubspot.introspect", `status ${status}`))
      return Effect.succeed({
        active: json["active"] === true,
        userId: text(json, "user_id") ?? "",
        user: text(json, "user") ?? "",
        hubId: text(json, "hub_id") ?? "",
        hubDomain: text(json, "hub_domain") ?? ""
      })
    }
  )

/** `POST /oauth/2026-03/token/revoke`: deletes the refresh token (best effort: disconnecting does not wait on it). */
export const revokeToken = (apiOrigin: string, params: { readonly clientId: string; readonly clientSecret: string; readonly token: string }) =>
  Effect.map(
    Effect.either(send("hubspot.revoke", `${apiOrigin}/oauth/2026-03/token/revoke`, form({
      client_id: params.clientId,
      client_secret: params.clientSecret,
      token: params.token,
      token_type_hint: "refresh_token"
    }))),
    (result) => result._tag === "Right" && result.right.status < 300
  )

/** Seconds to wait after HubSpot's ten-secondly limit (the window it names). */
const TEN_SECONDLY_RETRY_AFTER = 10

/** Seconds until the next midnight UTC, when a DAILY limit is counted afresh (HubSpot resets it at the portal's midnight). */
const untilMidnightUtc = (now: number): number => {
  const next = new Date(now)
  next.setUTCHours(24, 0, 0, 0)
  return Math.max(1, Math.ceil((next.getTime() - now) / 1000))
}

/**
 * HubSpot's VALIDATION_ERROR names each refused property in its message (a JSON list after "Property values
 * were not valid: ") or in `errors[].context.propertyName`: the first one is the field a CRM_REJECTED names.
 */
const refusedProperty = (json: Readonly<Record<string, unknown>>): string | undefined => {
  const errors = json["errors"]
  if (Array.isArray(errors)) {
    for (const e of errors) {
      if (!isRecord(e) || !isRecord(e["context"])) continue
      const names = e["context"]["propertyName"]
      if (Array.isArray(names) && typeof names[0] === "string") return names[0]
    }
  }
  const match = /"name":"([^"]+)"/.exec(text(json, "message") ?? "")
  return match?.[1]
}

const statusOf = (
  operation: string,
  { headers, json, status }: Raw,
  now: number
): Effect.Effect<CrmAnswer, HubSpotInvalidToken | Crm.CrmError> => {
  if (status < 300 || status === 404) return Effect.succeed({ status, json })
  const category = isRecord(json) ? text(json, "category") : undefined
  const refused = <E>(error: E) => Effect.zipRight(logRefusal(operation, status, json), Effect.fail(error))
  if (status === 401) return refused(new HubSpotInvalidToken())
  if (status === 403) return refused(new Crm.CrmError({ operation, cause: category ?? "403", reason: "permission_denied", code: category ?? "FORBIDDEN" }))
  if (status === 429) {
    const policy = isRecord(json) ? text(json, "policyName") : undefined
    const daily = policy === "DAILY" || headers.get("x-hubspot-ratelimit-daily-remaining") === "0"
    return refused(new Crm.CrmError({
      operation,
      cause: policy ?? "RATE_LIMIT",
      reason: "busy",
      code: policy ?? "RATE_LIMIT",
      retryAfterSeconds: daily ? untilMidnightUtc(now) : TEN_SECONDLY_RETRY_AFTER
    }))
  }
  if (status >= 500) return refused(unavailable(operation, category ?? status))
  if (isRecord(json)) {
    const field = refusedProperty(json)
    return refused(new Crm.CrmError({
      operation,
      cause: category ?? status,
      reason: "rejected",
      code: category ?? String(status),
      ...(field === undefined ? {} : { field })
    }))
  }
  return refused(unavailable(operation, status))
}

/**
 * One CRM call. 404 is an answer (no such object). The ten-secondly limit is retried twice, shortly (it frees
 * up within its window); a DAILY limit is not retried (nothing frees up before midnight).
 */
export const crmRequest = (
  apiOrigin: string,
  accessToken: string,
  method: "GET" | "POST" | "PATCH",
  path: string,
  body?: unknown
): Effect.Effect<CrmAnswer, HubSpotInvalidToken | Crm.CrmError> => {
  const operation = `hubspot.${method} ${path.split("?")[0] ?? path}`
  const once = Effect.flatMap(
    send(operation, `${apiOrigin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${accessToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }),
    (raw) => Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => statusOf(operation, raw, now))
  )
  return Effect.retry(once, {
    times: 2,
    schedule: Schedule.exponential("500 millis"),
    while: (error) => error._tag === "CrmError" && error.reason === "busy" && error.code !== "DAILY"
  })
}
