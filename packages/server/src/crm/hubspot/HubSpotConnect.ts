/**
 * Connecting an organisation to HubSpot: `start` (the install URL), `complete` (the OAuth callback), `status`
 * and `disconnect`, shared by the CLI and the console through the CRM seam.
 *
 * Starting does not touch the current connection; only a completed callback replaces it. The callback
 * exchanges the code at HubSpot's current token API, reads the token's metadata (user, portal), refuses a
 * grant without a scope Parley needs and another portal than the connected one unless the install was
 * started with `--switch-org` (revoking the unused grant either way), and makes the HubSpot user the CRM
 * account every key of the organisation runs as.
 */
import type { Crm } from "@parley/core/domain"
import { Clock, Data, Effect, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { publicBase } from "../../providers/CallbackUrls.js"
import { introspect, revokeToken, tokenRequest } from "./HubSpotApi.js"
import { client, HubSpotConfig } from "./HubSpotConfig.js"
import { HubSpotConnections } from "./HubSpotConnections.js"

export const CALLBACK_PATH = "/oauth/hubspot/callback"

/**
 * The scopes Parley asks for (docs/crm.md lists them with their reasons): contacts (and, with them, calls and
 * communications), deals and leads read for merging and linking, owners for the owner of each record, and the
 * contacts schema to create `parley_key` and `parley_sms_opt_out` in `crm setup`.
 */
export const SCOPES: ReadonlyArray<string> = [
  "oauth",
  "crm.objects.contacts.read",
  "crm.objects.contacts.write",
  "crm.objects.deals.read",
  "crm.objects.leads.read",
  "crm.objects.owners.read",
  "crm.schemas.contacts.read",
  "crm.schemas.contacts.write",
  "crm.schemas.deals.read"
]

/** Connecting failed in a way the person connecting can act on; `message` says how, in words. */
export class HubSpotConnectFailed extends Data.TaggedError("HubSpotConnectFailed")<{
  readonly status: number
  readonly message: string
}> {}

const notConfigured = () =>
  new HubSpotConnectFailed({
    status: 503,
    message: "HubSpot is not configured on this server: set PARLEY_HUBSPOT_CLIENT_ID and PARLEY_HUBSPOT_CLIENT_SECRET."
  })

/** What the connected account may do: HubSpot grants per app, not per user, so the scopes decide. */
export const permissionsOf = (scopes: ReadonlyArray<string>): Crm.CrmPermissions => ({
  modules: [
    ...(scopes.includes("crm.objects.leads.read") ? ["Leads" as const] : []),
    ...(scopes.includes("crm.objects.contacts.read") ? ["Contacts" as const] : []),
    ...(scopes.includes("crm.objects.deals.read") ? ["Deals" as const] : []),
    // Not a permission but a module HubSpot lacks: let through, the records answer 400 naming it and the CRM
    // (a 403 would say the user may not read it, which no grant could change).
    "Vendors" as const
  ],
  actionsView: "all",
  actionsWrite: scopes.includes("crm.objects.contacts.write"),
  templates: true
})

/** The install URL for an organisation (its `state` valid 10 minutes, usable once). */
export const start = (orgId: string, options: { readonly switchOrg: boolean }) =>
  Effect.gen(function*() {
    const server = yield* ServerConfig
    const config = yield* HubSpotConfig
    const app = client(config)
    if (Option.isNone(app)) return yield* notConfigured()
    const connections = yield* HubSpotConnections
    const state = yield* connections.newState(orgId, options.switchOrg, yield* Clock.currentTimeMillis)
    const redirectUri = `${publicBase(server)}${CALLBACK_PATH}`
    const query = new URLSearchParams({ client_id: app.value.id, redirect_uri: redirectUri, scope: SCOPES.join(" "), state })
    return { url: `${config.authUrl}/oauth/authorize?${query.toString()}`, redirectUri, scopes: SCOPES }
  })

/** The OAuth callback: exchanges the code, checks the grant, stores the connection. */
export const complete = (builtIn: Crm.CrmService, params: { readonly code?: string | undefined; readonly state?: string | undefined; readonly error?: string | undefined }) =>
  Effect.gen(function*() {
    const server = yield* ServerConfig
    const config = yield* HubSpotConfig
    const connections = yield* HubSpotConnections
    const now = yield* Clock.currentTimeMillis
    if (params.state === undefined) return yield* new HubSpotConnectFailed({ status: 400, message: "The install link is incomplete (no state); start again." })
    const consumed = yield* connections.consumeState(params.state, now)
    if (Option.isNone(consumed)) {
      return yield* new HubSpotConnectFailed({ status: 400, message: "This install link is unknown, used or older than 10 minutes; start again." })
    }
    const { orgId, switchOrg } = consumed.value
    if (params.error !== undefined || params.code === undefined) {
      return yield* new HubSpotConnectFailed({ status: 400, message: `HubSpot did not grant access (${params.error ?? "no code"}); nothing changed.` })
    }
    const app = client(config)
    if (Option.isNone(app)) return yield* notConfigured()
    const unavailable = () => new HubSpotConnectFailed({ status: 502, message: "HubSpot did not answer; nothing changed. Try again shortly." })
    const token = yield* tokenRequest(config.apiUrl, {
      grant_type: "authorization_code",
      client_id: app.value.id,
      client_secret: app.value.secret,
      redirect_uri: `${publicBase(server)}${CALLBACK_PATH}`,
      code: params.code
    }).pipe(
      Effect.catchTag("HubSpotTokenRefused", (refused) =>
        Effect.fail(new HubSpotConnectFailed({ status: 400, message: `HubSpot refused the install (${refused.category}); start again.` }))),
      Effect.catchTag("CrmError", () => Effect.fail(unavailable()))
    )
    const revoke = revokeToken(config.apiUrl, { clientId: app.value.id, clientSecret: app.value.secret, token: token.refreshToken })
    const lacking = SCOPES.filter((s) => !token.scopes.includes(s))
    if (lacking.length > 0) {
      yield* revoke
      return yield* new HubSpotConnectFailed({
        status: 403,
        message: `HubSpot granted Parley too little: missing scope ${lacking.join(", ")}. The grant was revoked and ` +
          "nothing changed; install again and accept every scope Parley asks for."
      })
    }
    const metadata = yield* Effect.mapError(
      introspect(config.apiUrl, { clientId: app.value.id, clientSecret: app.value.secret, token: token.accessToken }),
      unavailable
    )
    const previous = yield* connections.get(orgId)
    if (Option.isSome(previous) && previous.value.hubId !== token.hubId && !switchOrg) {
      yield* revoke
      return yield* new HubSpotConnectFailed({
        status: 409,
        message: `This Parley organisation is connected to HubSpot portal ${previous.value.hubId} (${previous.value.hubDomain}), not ` +
          `${token.hubId}: its actions' ids belong to the first. Nothing changed; to switch, start again with ` +
          "`parley crm connect ORG --provider hubspot --switch-org`."
      })
    }
    yield* connections.save({
      orgId,
      hubId: token.hubId,
      hubDomain: metadata.hubDomain,
      userId: token.userId,
      email: metadata.user,
      refreshToken: token.refreshToken,
      accessToken: token.accessToken,
      accessExpiresAt: now + token.expiresInSeconds * 1000,
      scopes: token.scopes.join(" "),
      connectedAt: new Date(now).toISOString()
    })
    yield* builtIn.setConnection(orgId, {
      state: "connected",
      account: { id: token.userId, name: metadata.user === "" ? `HubSpot user ${token.userId}` : metadata.user, permissions: permissionsOf(token.scopes) }
    })
    // The previous grant is replaced: deleted at HubSpot, so it cannot be used again.
    if (Option.isSome(previous) && previous.value.refreshToken !== token.refreshToken) {
      yield* revokeToken(config.apiUrl, { clientId: app.value.id, clientSecret: app.value.secret, token: previous.value.refreshToken })
    }
    return { orgId, user: metadata.user, hubId: token.hubId, hubDomain: metadata.hubDomain }
  })

/** Revokes the refresh token at HubSpot and forgets the connection; whether there was one. */
export const disconnect = (orgId: string) =>
  Effect.gen(function*() {
    const config = yield* HubSpotConfig
    const connections = yield* HubSpotConnections
    const found = yield* connections.get(orgId)
    if (Option.isNone(found)) return false
    const app = client(config)
    if (Option.isSome(app)) {
      yield* revokeToken(config.apiUrl, { clientId: app.value.id, clientSecret: app.value.secret, token: found.value.refreshToken })
    }
    yield* connections.remove(orgId)
    return true
  })
