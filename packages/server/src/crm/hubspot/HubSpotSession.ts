/**
 * Calls to one organisation's HubSpot portal with a working access token.
 *
 * HubSpot's access tokens live 30 minutes; Parley refreshes one a minute before it expires, or when HubSpot
 * answers 401. Refreshing is single-flight per organisation: within a process one fiber refreshes while the
 * others wait for it, and across processes and replicas a lease in the connection's row (one conditional
 * update) decides who refreshes while the others re-read the row until the new token is there — so 50
 * requests arriving as a token lapses cost one refresh, not 50.
 *
 * After every refresh the token's metadata (the introspection endpoint) names its user and portal: another
 * user than the one connected marks the connection IDENTITY_CHANGED, another portal too; a refused refresh
 * token (BAD_REFRESH_TOKEN: the app was uninstalled or the token deleted) marks it OAUTH_REQUIRED. Both need
 * a reconnect — unless the connection was reinstalled while the refresh was on its way: the new one is then
 * used, and left as it is. A refused client (BAD_CLIENT_ID, BAD_CLIENT_SECRET) is the server's configuration,
 * not the connection's fault: it is recorded and the connection kept. A 403 is recorded with HubSpot's category.
 */
import { Crm } from "@parley/core/domain"
import { Clock, Context, Effect, Option } from "effect"
import { type CrmAnswer, crmRequest, tokenRequest } from "./HubSpotApi.js"
import { client, HubSpotConfig } from "./HubSpotConfig.js"
import * as Connections from "../Connections.js"
import { makeTokenRefresh } from "../TokenRefresh.js"
import { type HubSpotConnection, HubSpotConnections } from "./HubSpotConnections.js"

/** Refresh this long before HubSpot's expiry, so no call carries a token about to lapse. */
const EARLY_REFRESH_MS = 60_000
/** How long a refresh lease lasts (a process that dies holding it delays the next refresh this long). */
const LEASE_MS = 15_000
const WAIT_STEP_MS = 100

export interface HubSpotSessionService {
  /** One CRM call (a path under the API origin, `/crm/v3/…`) as the organisation's connection. */
  readonly call: (orgId: string, method: "GET" | "POST" | "PATCH", path: string, body?: unknown) => Effect.Effect<CrmAnswer, Crm.CrmError>
}

export class HubSpotSession extends Context.Tag("@parley/server/crm/hubspot/HubSpotSession")<HubSpotSession, HubSpotSessionService>() {}

const storageFailure = (operation: string) => (cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

/** The session over `builtIn`, the default CRM that keeps every organisation's connection state. */
export const make = (builtIn: Crm.CrmService) =>
  Effect.gen(function*() {
    const config = yield* HubSpotConfig
    const connections = yield* HubSpotConnections
    const load = (orgId: string) =>
      Effect.flatMap(Effect.mapError(connections.get(orgId), storageFailure("hubspot.connection")), (found) =>
        Option.isNone(found)
          ? Effect.fail(new Crm.CrmError({ operation: "hubspot.connection", cause: "not connected", reason: "oauth_required" }))
          : Effect.succeed(found.value))

    const recordError = (orgId: string, code: string, message: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.ignore(connections.recordError(orgId, message, new Date(now).toISOString(), code)))

    const lapse = Connections.lapse("hubspot", builtIn, connections.recordError)

    const refresh = (connection: HubSpotConnection) =>
      Effect.gen(function*() {
        const app = client(config)
        if (Option.isNone(app)) {
          return yield* new Crm.CrmError({ operation: "hubspot.refresh", cause: "PARLEY_HUBSPOT_CLIENT_ID/SECRET unset", reason: "unavailable" })
        }
        const answer = yield* tokenRequest(config.apiUrl, {
          grant_type: "refresh_token",
          client_id: app.value.id,
          client_secret: app.value.secret,
          refresh_token: connection.refreshToken
        }).pipe(
          Effect.catchTag("HubSpotTokenRefused", (refused) =>
            refused.category === "BAD_CLIENT_ID" || refused.category === "BAD_CLIENT_SECRET"
              ? Effect.zipRight(
                recordError(
                  connection.orgId,
                  "INVALID_CLIENT",
                  `HubSpot refused Parley's app (${refused.category}): set PARLEY_HUBSPOT_CLIENT_ID and ` +
                    "PARLEY_HUBSPOT_CLIENT_SECRET to the app's current values and restart; the connection is kept."
                ),
                Effect.fail(new Crm.CrmError({ operation: "hubspot.refresh", cause: refused.category, reason: "unavailable" }))
              )
              : Effect.flatMap(connections.superseded(connection.orgId, connection.connectedAt), (replaced) =>
                replaced
                  ? Effect.succeed(undefined)
                  : lapse(connection.orgId, "disconnected", `HubSpot refused the refresh token (${refused.category}); reconnect.`)))
        )
        // Reinstalled while this refresh was on its way: undefined, and crm/TokenRefresh reads the new connection.
        if (answer === undefined) return undefined
        // Who the new token belongs to: the portal and user are in the answer; a user or portal other than the
        // connected one means the app was reinstalled by someone else.
        if (answer.userId !== connection.userId || answer.hubId !== connection.hubId) {
          if (yield* connections.superseded(connection.orgId, connection.connectedAt)) return undefined
          return yield* lapse(
            connection.orgId,
            "identity_changed",
            answer.hubId !== connection.hubId
              ? `The HubSpot token now belongs to portal ${answer.hubId}, not ${connection.hubId}; reconnect.`
              : "The HubSpot token now belongs to another user; reconnect."
          )
        }
        const now = yield* Clock.currentTimeMillis
        const stored = yield* Effect.mapError(
          connections.saveAccessToken(connection.orgId, connection.connectedAt, answer.accessToken, now + answer.expiresInSeconds * 1000),
          storageFailure("hubspot.saveAccessToken")
        )
        // Not stored: a connection made since keeps its own token, read on the next turn.
        return stored ? answer.accessToken : undefined
      })

    // Single-flight across fibers and replicas (crm/TokenRefresh), as for every CRM.
    const tokenOf = makeTokenRefresh<HubSpotConnection, Crm.CrmError>({
      load,
      takeLease: (orgId, now, until) => Effect.mapError(connections.takeRefreshLease(orgId, now, until), storageFailure("hubspot.lease")),
      releaseLease: connections.releaseRefreshLease,
      refresh,
      leaseMs: LEASE_MS,
      waitMs: WAIT_STEP_MS
    })
    /** A working token: the stored one unless it is expiring or `stale` (HubSpot refused it), else a refreshed one. */
    const token = (orgId: string, stale: string | null): Effect.Effect<string, Crm.CrmError> =>
      Effect.map(
        tokenOf(orgId, (c, now) =>
          c.accessToken !== null && c.accessToken !== stale && c.accessExpiresAt - EARLY_REFRESH_MS > now ? c.accessToken : undefined),
        ({ token }) => token
      )

    const call: HubSpotSessionService["call"] = (orgId, method, path, body) =>
      Effect.gen(function*() {
        const first = yield* token(orgId, null)
        return yield* crmRequest(config.apiUrl, first, method, path, body).pipe(
          // Expired or revoked early: refresh once (single-flight) and try again.
          Effect.catchTag("HubSpotInvalidToken", () =>
            Effect.flatMap(token(orgId, first), (second) =>
              Effect.catchTag(
                crmRequest(config.apiUrl, second, method, path, body),
                "HubSpotInvalidToken",
                () => Effect.fail(new Crm.CrmError({ operation: "hubspot.call", cause: "401", reason: "oauth_required" }))
              ))),
          Effect.tapErrorTag("CrmError", (error) =>
            error.reason === "permission_denied"
              ? recordError(
                orgId,
                error.code ?? "PERMISSION_DENIED",
                `HubSpot refused ${method} ${path.split("?")[0] ?? path} (${error.code ?? "403"}): the app's grant lacks a ` +
                  "scope Parley needs; reconnect and accept every scope."
              )
              : Effect.void)
        )
      })

    return HubSpotSession.of({ call })
  })

