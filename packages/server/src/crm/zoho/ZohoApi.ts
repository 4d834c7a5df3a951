/**
 * The only module that talks HTTP to Zoho: the accounts server's token
 * endpoints and the CRM REST API v8. Every failure becomes a CrmError whose
 * reason says how the API answers it (see Crm.CrmFailure); nothing of Zoho's
 * answer body, and never a token, reaches a message.
 *
 * Zoho's token endpoint answers errors with HTTP 200 and `{"error": …}`; a
 * revoked or refused refresh token is `invalid_code`.
 */
import { Crm } from "@parley/core/domain"
import { Data, Effect, Schedule } from "effect"

/** How long one call to Zoho may take before it counts as no answer. */
export const CALL_TIMEOUT_MS = 10_000

/** The token endpoint refused: `invalid_code` (revoked or refused refresh token, used code), `invalid_client`… */
export class ZohoTokenRefused extends Data.TaggedError("ZohoTokenRefused")<{ readonly error: string }> {}

/** The CRM answered 401 INVALID_TOKEN: the access token expired or was revoked; refresh and try once more. */
export class ZohoInvalidToken extends Data.TaggedError("ZohoInvalidToken")<{}> {}

export interface TokenAnswer {
  readonly accessToken: string
  readonly refreshToken: string | undefined
  readonly apiDomain: string | undefined
  readonly expiresInSeconds: number
  /** The scopes granted, as Zoho lists them (space- or comma-separated); absent when Zoho names none. */
  readonly scope: string | undefined
}

const unavailable = (operation: string, cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const send = (operation: string, url: string, init: RequestInit) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]) })
      const text = await response.text()
      let json: unknown = undefined
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: response.status, json, retryAfter: response.headers.get("retry-after") }
    },
    catch: (cause) => unavailable(operation, cause)
  })

/** POST to the accounts server's token endpoint (form body). */
export const tokenRequest = (
  accountsOrigin: string,
  params: Readonly<Record<string, string>>
): Effect.Effect<TokenAnswer, ZohoTokenRefused | Crm.CrmError> =>
  Effect.flatMap(
    send("zoho.token", `${accountsOrigin}/oauth/v2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(params).toString()
    }),
    ({ json, status }): Effect.Effect<TokenAnswer, ZohoTokenRefused | Crm.CrmError> => {
      if (status >= 500 || !isRecord(json)) return Effect.fail(unavailable("zoho.token", `status ${status}`))
      if (typeof json["error"] === "string") {
        // Zoho's refresh throttle ("Access Denied", too many requests) is not a refusal of the token.
        return json["error"] === "Access Denied"
          ? Effect.fail(new Crm.CrmError({ operation: "zoho.token", cause: "throttled", reason: "busy", retryAfterSeconds: 60 }))
          : Effect.fail(new ZohoTokenRefused({ error: json["error"] }))
      }
      const accessToken = json["access_token"]
      if (typeof accessToken !== "string") return Effect.fail(unavailable("zoho.token", "no access_token"))
      const expires = typeof json["expires_in"] === "number" ? json["expires_in"] : 3600
      return Effect.succeed({
        accessToken,
        refreshToken: typeof json["refresh_token"] === "string" ? json["refresh_token"] : undefined,
        apiDomain: typeof json["api_domain"] === "string" ? json["api_domain"] : undefined,
        scope: typeof json["scope"] === "string" ? json["scope"] : undefined,
        // Legacy answers give seconds in expires_in_sec and milliseconds in expires_in.
        expiresInSeconds: typeof json["expires_in_sec"] === "number" ? json["expires_in_sec"] : expires > 86_400 ? expires / 1000 : expires
      })
    }
  )

/** Revokes a refresh token at the accounts server (best effort: disconnecting does not wait on Zoho). */
export const revokeToken = (accountsOrigin: string, token: string) =>
  Effect.ignore(send("zoho.revoke", `${accountsOrigin}/oauth/v2/token/revoke?${new URLSearchParams({ token })}`, { method: "POST" }))

export interface CrmAnswer {
  readonly status: number
  readonly json: unknown
}

/** Zoho's codes for a module or field that does not exist (yet): `crm setup` has not run, or was undone. */
const SETUP_CODES: ReadonlySet<string> = new Set(["INVALID_MODULE"])

/**
 * Zoho's refusal of a request or of one record, as a CrmError: a missing module is `setup_required`, a missing
 * permission `permission_denied` (the permission as the field), any other code (INVALID_DATA,
 * MANDATORY_NOT_FOUND, DUPLICATE_DATA, PATTERN_NOT_MATCHED…) is `rejected` — the same request cannot
 * succeed — naming Zoho's code and the field from `details.api_name`.
 */
export const refusalOf = (operation: string, item: Readonly<Record<string, unknown>>): Crm.CrmError => {
  const code = typeof item["code"] === "string" ? item["code"] : "REFUSED"
  const details = item["details"]
  // NO_PERMISSION on one record names the permission the connected user lacks (Crm_Implied_Edit_<module>…):
  // an administrator can grant it, so it is `permission_denied` (retried, shown), never a refusal for good.
  const permission = isRecord(details) && Array.isArray(details["permissions"]) && typeof details["permissions"][0] === "string"
    ? details["permissions"][0]
    : undefined
  const field = isRecord(details) && typeof details["api_name"] === "string" ? details["api_name"] : permission
  return new Crm.CrmError({
    operation,
    cause: code,
    reason: SETUP_CODES.has(code) ? "setup_required" : code === "NO_PERMISSION" ? "permission_denied" : "rejected",
    code,
    ...(field === undefined ? {} : { field })
  })
}

/** Seconds to wait after Zoho's 429 when it names none. */
const DEFAULT_RETRY_AFTER_SECONDS = 5

/**
 * One CRM call. 204 (no such record, empty page) is an answer, not a failure. 429 is retried twice, shortly
 * (Zoho's concurrency cap frees up within moments), then fails as `busy`.
 */
export const crmRequest = (
  apiOrigin: string,
  accessToken: string,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown
): Effect.Effect<CrmAnswer, ZohoInvalidToken | Crm.CrmError> => {
  const operation = `zoho.${method} ${path.split("?")[0] ?? path}`
  const once = Effect.flatMap(
    send(operation, `${apiOrigin}/crm/v8${path}`, {
      method,
      headers: {
        authorization: `Zoho-oauthtoken ${accessToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }),
    ({ json, retryAfter, status }): Effect.Effect<CrmAnswer, ZohoInvalidToken | Crm.CrmError> => {
      const code = isRecord(json) && typeof json["code"] === "string" ? json["code"] : undefined
      if (status === 401 && code === "INVALID_TOKEN") return Effect.fail(new ZohoInvalidToken())
      if (status === 401 || code === "OAUTH_SCOPE_MISMATCH" || code === "AUTHENTICATION_FAILURE") {
        return Effect.fail(new Crm.CrmError({ operation, cause: code ?? status, reason: "oauth_required" }))
      }
      if (code === "NO_PERMISSION") return Effect.fail(new Crm.CrmError({ operation, cause: code, reason: "permission_denied" }))
      if (status === 429) {
        const seconds = Number(retryAfter)
        return Effect.fail(
          new Crm.CrmError({
            operation,
            cause: "TOO_MANY_REQUESTS",
            reason: "busy",
            retryAfterSeconds: Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : DEFAULT_RETRY_AFTER_SECONDS
          })
        )
      }
      if (status >= 500) return Effect.fail(unavailable(operation, code ?? status))
      // A refusal of the whole request (not a batch's per-record answers, which come as `data`).
      if (status >= 400 && code !== undefined && isRecord(json)) return Effect.fail(refusalOf(operation, json))
      return Effect.succeed({ status, json })
    }
  )
  return Effect.retry(once, {
    times: 2,
    schedule: Schedule.exponential("150 millis"),
    while: (error) => error._tag === "CrmError" && error.reason === "busy"
  })
}

/** The `data` array of a records answer (empty for 204). */
export const dataOf = (answer: CrmAnswer): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  isRecord(answer.json) && Array.isArray(answer.json["data"]) ? answer.json["data"].filter(isRecord) : []

/** A named array of an answer (`users`, `org`, `modules`, `fields`). */
export const listOf = (answer: CrmAnswer, name: string): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  isRecord(answer.json) && Array.isArray(answer.json[name]) ? answer.json[name].filter(isRecord) : []

export const text = (record: Readonly<Record<string, unknown>>, field: string): string | undefined => {
  const value = record[field]
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined
}

export { isRecord }
