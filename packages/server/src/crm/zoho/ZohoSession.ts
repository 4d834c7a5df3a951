/**
 * Calls to one organisation's Zoho CRM with a working access token.
 *
 * Access tokens live an hour; Parley refreshes one a minute before it expires,
 * or when Zoho answers INVALID_TOKEN. Zoho allows ten refreshes per refresh
 * token per ten minutes, so refreshing is single-flight per organisation:
 * within a process one fiber refreshes while the others wait for it, and
 * across processes and replicas a lease in the connection's row (one
 * conditional update) decides who refreshes while the others re-read the row
 * until the new token is there.
 *
 * The current user is read again after every refresh and at least every
 * IDENTITY_CHECK_MS between refreshes (the time of the last read is in the
 * connection's row, so replicas share it): a token that now belongs to
 * another Zoho user than the one connected marks the connection
 * IDENTITY_CHANGED; a refused refresh token (`invalid_code`) marks it
 * OAUTH_REQUIRED. Both need a reconnect. A refused client
 * (`invalid_client`, `invalid_client_secret`) is not the connection's fault:
 * the server's PARLEY_ZOHO_CLIENT_ID or _SECRET no longer match Zoho's, and
 * the connection is kept for when they do. Each is recorded, with its code,
 * as the connection's last error (`crm status`, the console's CRM page), as
 * is a call Zoho refuses for lack of a scope (OAUTH_SCOPE_MISMATCH).
 */
import { Crm } from "@parley/core/domain"
import { Clock, Context, Effect, Option, Redacted } from "effect"
import { makeSingleFlight } from "../SingleFlight.js"
import { ZohoConfig } from "./ZohoConfig.js"
import { type CrmAnswer, crmRequest, listOf, text, tokenRequest } from "./ZohoApi.js"
import { type ZohoConnection, ZohoConnections } from "./ZohoConnections.js"
import { SCOPES } from "./ZohoScopes.js"

/** Refresh this long before Zoho's expiry, so no call carries a token about to lapse. */
const EARLY_REFRESH_MS = 60_000
/** How long a refresh lease lasts (a process that dies holding it delays the next refresh this long). */
const LEASE_MS = 15_000
const WAIT_STEP_MS = 100
/** The current user is read at least this often, so a changed identity is caught within minutes. */
export const IDENTITY_CHECK_MS = 10 * 60_000

export interface ZohoSessionService {
  /** One CRM call (path under /crm/v8) as the organisation's connected user. */
  readonly call: (
    orgId: string,
    method: "GET" | "POST" | "PUT",
    path: string,
    body?: unknown
  ) => Effect.Effect<CrmAnswer, Crm.CrmError>
}

export class ZohoSession extends Context.Tag("@parley/server/crm/zoho/ZohoSession")<ZohoSession, ZohoSessionService>() {}

const storageFailure = (operation: string) => (cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

/**
 * The session over `embedded`, the embedded CRM that keeps every organisation's connection state (which the
 * API's authentication reads): a lapsed token is recorded there.
 */
export const make = (crm: Crm.CrmService) =>
  Effect.gen(function*() {
    const config = yield* ZohoConfig
    const connections = yield* ZohoConnections
    // Within a process, one fiber per organisation refreshes while the others wait (SingleFlight).
    const refreshFlight = makeSingleFlight()

    const load = (orgId: string) =>
      Effect.flatMap(
        Effect.mapError(connections.get(orgId), storageFailure("zoho.connection")),
        (found) =>
          Option.isNone(found)
            ? Effect.fail(new Crm.CrmError({ operation: "zoho.connection", cause: "not connected", reason: "oauth_required" }))
            : Effect.succeed(found.value)
      )

    const recordError = (orgId: string, code: string, message: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.ignore(connections.recordError(orgId, message, new Date(now).toISOString(), code)))

    const lapse = (orgId: string, state: "disconnected" | "identity_changed", message: string) =>
      Effect.gen(function*() {
        yield* recordError(orgId, state === "disconnected" ? "OAUTH_REQUIRED" : "IDENTITY_CHANGED", message)
        const current = yield* Effect.orElseSucceed(crm.connection(orgId), () => ({ state: "disconnected" as const }))
        if (current.state !== "disconnected") {
          yield* Effect.ignore(
            crm.setConnection(orgId, state === "disconnected" ? { state } : { state, account: current.account })
          )
        }
        return yield* new Crm.CrmError({
          operation: "zoho.refresh",
          cause: message,
          reason: state === "disconnected" ? "oauth_required" : "identity_changed"
        })
      })

    /** Who the token belongs to now: the connected user, or someone else (IDENTITY_CHANGED). */
    const checkIdentity = (connection: ZohoConnection, accessToken: string) =>
      Effect.gen(function*() {
        const me = yield* crmRequest(connection.apiDomain, accessToken, "GET", "/users?type=CurrentUser")
        const zuid = text(listOf(me, "users")[0] ?? {}, "zuid")
        if (zuid !== undefined && zuid !== connection.zuid) {
          return yield* lapse(connection.orgId, "identity_changed", "The Zoho token now belongs to another user; reconnect.")
        }
        yield* Effect.ignore(connections.markIdentityChecked(connection.orgId, yield* Clock.currentTimeMillis))
      })

    /** Refreshes the access token (this process holds the lease), then checks who it belongs to. */
    const refresh = (connection: ZohoConnection) =>
      Effect.gen(function*() {
        const secret = Option.getOrUndefined(config.zohoClientSecret)
        const clientId = Option.getOrUndefined(config.zohoClientId)
        if (secret === undefined || clientId === undefined) {
          return yield* new Crm.CrmError({ operation: "zoho.refresh", cause: "PARLEY_ZOHO_CLIENT_ID/SECRET unset", reason: "unavailable" })
        }
        const answer = yield* tokenRequest(connection.accountsUrl, {
          grant_type: "refresh_token",
          client_id: clientId,
          client_secret: Redacted.value(secret),
          refresh_token: connection.refreshToken
        }).pipe(
          Effect.catchTag("ZohoTokenRefused", (refused) =>
            refused.error === "invalid_client" || refused.error === "invalid_client_secret"
              ? Effect.zipRight(
                recordError(
                  connection.orgId,
                  "INVALID_CLIENT",
                  `Zoho refused Parley's client (${refused.error}): the client id or secret changed. Set ` +
                    "PARLEY_ZOHO_CLIENT_ID and PARLEY_ZOHO_CLIENT_SECRET to the client's current values in Zoho's API " +
                    "console and restart; the connection itself is kept (no reconnect needed)."
                ),
                Effect.fail(new Crm.CrmError({ operation: "zoho.refresh", cause: refused.error, reason: "unavailable" }))
              )
              : lapse(connection.orgId, "disconnected", `Zoho refused the refresh token (${refused.error}); reconnect.`))
        )
        const now = yield* Clock.currentTimeMillis
        const expiresAt = now + answer.expiresInSeconds * 1000
        yield* Effect.mapError(connections.saveAccessToken(connection.orgId, answer.accessToken, expiresAt), storageFailure("zoho.saveAccessToken"))
        yield* Effect.catchTag(
          checkIdentity(connection, answer.accessToken),
          "ZohoInvalidToken",
          () => Effect.fail(new Crm.CrmError({ operation: "zoho.currentUser", cause: "INVALID_TOKEN", reason: "oauth_required" }))
        )
        return answer.accessToken
      })

    /** A token valid for at least EARLY_REFRESH_MS: the stored one, or one refreshed by whoever holds the lease. */
    const token = (orgId: string, stale: string | null): Effect.Effect<{ readonly token: string; readonly connection: ZohoConnection }, Crm.CrmError> =>
      Effect.gen(function*() {
        const fresh = (c: ZohoConnection, now: number) =>
          c.accessToken !== null && c.accessToken !== stale && c.accessExpiresAt - EARLY_REFRESH_MS > now
        const first = yield* load(orgId)
        if (fresh(first, yield* Clock.currentTimeMillis) && first.accessToken !== null) {
          return { token: first.accessToken, connection: first }
        }
        return yield* refreshFlight(orgId, Effect.gen(function*() {
          for (;;) {
            const connection = yield* load(orgId)
            const now = yield* Clock.currentTimeMillis
            if (fresh(connection, now) && connection.accessToken !== null) return { token: connection.accessToken, connection }
            const leased = yield* Effect.mapError(connections.takeRefreshLease(orgId, now, now + LEASE_MS), storageFailure("zoho.lease"))
            if (leased) {
              const refreshed = yield* Effect.ensuring(refresh(connection), Effect.ignore(connections.releaseRefreshLease(orgId)))
              return { token: refreshed, connection }
            }
            // Another process is refreshing: its token appears in the row shortly.
            yield* Effect.sleep(WAIT_STEP_MS)
          }
        }))
      })

    const call: ZohoSessionService["call"] = (orgId, method, path, body) =>
      Effect.gen(function*() {
        const first = yield* token(orgId, null)
        if ((yield* Clock.currentTimeMillis) - first.connection.identityCheckedAt >= IDENTITY_CHECK_MS) {
          // Between refreshes too: a token re-issued to another user is caught within minutes, not an hour.
          yield* Effect.catchTag(checkIdentity(first.connection, first.token), "ZohoInvalidToken", () => Effect.void)
        }
        return yield* crmRequest(first.connection.apiDomain, first.token, method, path, body).pipe(
          // Expired or revoked early: refresh once (single-flight) and try again.
          Effect.catchTag("ZohoInvalidToken", () =>
            Effect.flatMap(token(orgId, first.token), (second) =>
              Effect.catchTag(
                crmRequest(second.connection.apiDomain, second.token, method, path, body),
                "ZohoInvalidToken",
                () => Effect.fail(new Crm.CrmError({ operation: "zoho.call", cause: "INVALID_TOKEN", reason: "oauth_required" }))
              ))),
          Effect.tapErrorTag("CrmError", (error) =>
            error.cause === "OAUTH_SCOPE_MISMATCH"
              ? recordError(
                orgId,
                "OAUTH_SCOPE_MISMATCH",
                `Zoho refused ${method} ${path.split("?")[0] ?? path} for lack of a scope: the grant does not cover what ` +
                  `Parley needs (${SCOPES.join(", ")}); reconnect and accept every scope.`
              )
              : Effect.void)
        )
      })

    return ZohoSession.of({ call })
  })

