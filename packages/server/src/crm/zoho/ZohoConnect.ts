/**
 * Connecting an organisation to Zoho CRM, as plain functions the CLI and the
 * admin console share through the CRM registry (ZohoModule): `start` (the
 * consent URL), `complete` (the OAuth callback), `status` and `disconnect`.
 *
 * Starting does not touch the current connection; only a completed callback
 * replaces it. The callback exchanges the code only at a trusted accounts
 * server (see AccountsServers), reads the connected user and Zoho
 * organisation, refuses another Zoho organisation than the connected one
 * unless the consent was started with `--switch-org`, and makes the Zoho user
 * the CRM account every key of the organisation runs as.
 */
import { Crm } from "@parley/core/domain"
import type { CrmModule } from "@parley/core/internal"
import { Clock, Effect, Option, Redacted } from "effect"
import { ServerConfig, type ServerSettings } from "../../config/ServerConfig.js"
import { publicBase } from "../../providers/CallbackUrls.js"
import { ZohoConfig, type ZohoSettings } from "./ZohoConfig.js"
import { CrmConnectFailed, type CrmStatus } from "../Crm.js"
import { DEFAULT_ACCOUNTS_URL, trustedAccountsServer, trustedApiDomain } from "./AccountsServers.js"
import { crmRequest, listOf, revokeToken, text, tokenRequest } from "./ZohoApi.js"
import { type NewZohoConnection, ZohoConnections } from "./ZohoConnections.js"
import { missingScopes, SCOPES } from "./ZohoScopes.js"
import { MESSAGES_MODULE, TEMPLATES_MODULE } from "./ZohoSchema.js"

export const CALLBACK_PATH = "/oauth/zoho/callback"

export const redirectUri = (config: ServerSettings) => `${publicBase(config)}${CALLBACK_PATH}`

const clientOf = (config: ZohoSettings) =>
  Option.isNone(config.zohoClientId) || Option.isNone(config.zohoClientSecret)
    ? Effect.fail(
      new CrmConnectFailed({
        status: 503,
        message: "Zoho CRM is not configured on this server: set PARLEY_ZOHO_CLIENT_ID and PARLEY_ZOHO_CLIENT_SECRET."
      })
    )
    : Effect.succeed({ id: config.zohoClientId.value, secret: Redacted.value(config.zohoClientSecret.value) })

/** The accounts server consent starts on: PARLEY_ZOHO_ACCOUNTS_URL's origin, else Zoho's US server. */
export const accountsOrigin = (config: ZohoSettings): string => {
  const configured = Option.getOrElse(config.zohoAccountsUrl, () => DEFAULT_ACCOUNTS_URL)
  try {
    return new URL(configured).origin
  } catch {
    return DEFAULT_ACCOUNTS_URL
  }
}

/** The consent URL for an organisation (valid 10 minutes, usable once). */
export const start = (orgId: string, options: { readonly switchOrg?: boolean } = {}) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const zoho = yield* ZohoConfig
    const client = yield* clientOf(zoho)
    const connections = yield* ZohoConnections
    const state = yield* connections.newState(orgId, options.switchOrg === true, yield* Clock.currentTimeMillis)
    const accounts = Option.getOrElse(zoho.zohoAccountsUrl, () => DEFAULT_ACCOUNTS_URL).replace(/\/+$/, "")
    const query = new URLSearchParams({
      client_id: client.id,
      response_type: "code",
      redirect_uri: redirectUri(config),
      scope: SCOPES.join(","),
      access_type: "offline",
      prompt: "consent",
      state
    })
    return { url: `${accounts}/oauth/v2/auth?${query.toString()}`, redirectUri: redirectUri(config), scopes: SCOPES }
  })

/** The account's permissions from /settings/modules (whose flags describe the connected user). */
const permissionsOf = (modules: ReadonlyArray<{ readonly api_name: string; readonly viewable: boolean; readonly creatable: boolean }>): Crm.CrmPermissions => {
  const of = (name: string) => modules.find((m) => m.api_name === name)
  const readable: Array<CrmModule> = []
  for (const name of ["Leads", "Contacts", "Vendors", "Deals"] as const) if (of(name)?.viewable === true) readable.push(name)
  const messages = of(MESSAGES_MODULE)
  const templates = of(TEMPLATES_MODULE)
  return {
    modules: readable,
    actionsView: messages === undefined || messages.viewable ? "all" : "none",
    // Before `crm setup` the modules are missing: the first creation then says so through Zoho's answer.
    actionsWrite: messages === undefined || messages.creatable,
    templates: templates === undefined || templates.viewable
  }
}

export interface CallbackParams {
  readonly code: string | undefined
  readonly state: string | undefined
  readonly accountsServer: string | undefined
  readonly error: string | undefined
}

/** Completes the consent: the connected user and organisation, or why not. */
export const complete = (params: CallbackParams) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const zoho = yield* ZohoConfig
    const connections = yield* ZohoConnections
    const crm = yield* Crm.Crm
    const client = yield* clientOf(zoho)
    const now = yield* Clock.currentTimeMillis
    if (params.state === undefined || params.state === "") {
      return yield* new CrmConnectFailed({ status: 400, message: "The link has no state; start again with `parley crm connect`." })
    }
    const claimed = yield* connections.consumeState(params.state, now)
    if (Option.isNone(claimed)) {
      return yield* new CrmConnectFailed({
        status: 400,
        message: "This consent link is unknown, was already used, or is older than 10 minutes; start again with `parley crm connect`."
      })
    }
    const { orgId, switchOrg } = claimed.value
    if (params.error !== undefined) {
      return yield* new CrmConnectFailed({ status: 400, message: `Zoho did not grant access (${params.error}); nothing changed.` })
    }
    if (params.code === undefined || params.code === "") {
      return yield* new CrmConnectFailed({ status: 400, message: "Zoho sent no authorization code; nothing changed." })
    }
    const accountsOrigin = trustedAccountsServer(
      params.accountsServer ?? Option.getOrElse(zoho.zohoAccountsUrl, () => DEFAULT_ACCOUNTS_URL),
      zoho.zohoAccountsUrl
    )
    if (accountsOrigin === undefined) {
      return yield* new CrmConnectFailed({
        status: 400,
        message: "The redirect names an accounts server that is not one of Zoho's; the code was not exchanged."
      })
    }
    const unavailable = () => new CrmConnectFailed({ status: 502, message: "Zoho did not answer; try again shortly." })
    const token = yield* tokenRequest(accountsOrigin, {
      grant_type: "authorization_code",
      client_id: client.id,
      client_secret: client.secret,
      redirect_uri: redirectUri(config),
      code: params.code
    }).pipe(
      Effect.catchTags({
        ZohoTokenRefused: (refused) =>
          Effect.fail(new CrmConnectFailed({ status: 400, message: `Zoho refused the authorization code (${refused.error}); start again.` })),
        CrmError: () => Effect.fail(unavailable())
      })
    )
    if (token.refreshToken === undefined) {
      return yield* new CrmConnectFailed({ status: 400, message: "Zoho granted no refresh token (offline access); start again." })
    }
    const apiDomain = trustedApiDomain(token.apiDomain ?? "", zoho.zohoAccountsUrl)
    if (apiDomain === undefined) {
      // The grant is live at Zoho even though Parley will never use it: revoked, not left behind.
      yield* revokeToken(accountsOrigin, token.refreshToken)
      return yield* new CrmConnectFailed({
        status: 400,
        message: "Zoho's answer names an API domain that is not one of Zoho's; the grant was revoked and nothing was connected."
      })
    }
    // A grant without a scope Parley needs would connect, then fail its calls: refused and revoked here.
    // (Zoho names the granted scopes in the token answer; when it names none, the reads below still check.)
    const lacking = token.scope === undefined ? [] : missingScopes(token.scope)
    if (lacking.length > 0) {
      yield* revokeToken(accountsOrigin, token.refreshToken)
      return yield* new CrmConnectFailed({
        status: 403,
        message: `OAUTH_SCOPE_MISMATCH: Zoho granted Parley too little: missing scope ${lacking.join(", ")}. ` +
          "The grant was revoked and nothing changed; connect again and accept every scope Parley asks for."
      })
    }
    const refreshToken = token.refreshToken
    const read = (path: string, name: string) =>
      Effect.map(
        Effect.catchAll(crmRequest(apiDomain, token.accessToken, "GET", path), (error) =>
          error._tag === "CrmError" && error.cause === "OAUTH_SCOPE_MISMATCH"
            ? Effect.zipRight(
              revokeToken(accountsOrigin, refreshToken),
              Effect.fail(
                new CrmConnectFailed({
                  status: 403,
                  message: `OAUTH_SCOPE_MISMATCH: Zoho refused ${path.split("?")[0] ?? path} for lack of a scope; ` +
                    `Parley needs ${SCOPES.join(", ")}. The grant was revoked and nothing changed.`
                })
              )
            )
            : Effect.fail(unavailable())),
        (answer) => listOf(answer, name)
      )
    const user = (yield* read("/users?type=CurrentUser", "users"))[0]
    const org = (yield* read("/org", "org"))[0]
    const modules = (yield* read("/settings/modules", "modules")).map((m) => ({
      api_name: text(m, "api_name") ?? "",
      viewable: m["viewable"] === true,
      creatable: m["creatable"] === true
    }))
    const zuid = user === undefined ? undefined : text(user, "zuid")
    const userId = user === undefined ? undefined : text(user, "id")
    const zohoOrgId = org === undefined ? undefined : text(org, "id")
    if (user === undefined || org === undefined || zuid === undefined || userId === undefined || zohoOrgId === undefined) {
      return yield* Effect.fail(unavailable())
    }
    const previous = yield* connections.get(orgId)
    if (Option.isSome(previous) && previous.value.zohoOrgId !== zohoOrgId && !switchOrg) {
      yield* revokeToken(accountsOrigin, token.refreshToken)
      return yield* new CrmConnectFailed({
        status: 409,
        message: `This Parley organisation is connected to Zoho organisation ${previous.value.zohoOrgName} (${previous.value.zohoOrgId}), ` +
          `not ${text(org, "company_name") ?? zohoOrgId}: its actions' ids belong to the first. Nothing changed; to switch, ` +
          "start again with `parley crm connect ORG --provider zoho --switch-org`."
      })
    }
    const connection: NewZohoConnection = {
      orgId,
      zohoOrgId,
      zohoOrgName: text(org, "company_name") ?? zohoOrgId,
      userId,
      zuid,
      userName: text(user, "full_name") ?? text(user, "email") ?? zuid,
      email: text(user, "email") ?? "",
      profile: typeof user["profile"] === "object" && user["profile"] !== null && "name" in user["profile"] &&
          typeof user["profile"].name === "string"
        ? user["profile"].name
        : null,
      accountsUrl: accountsOrigin,
      apiDomain,
      refreshToken: token.refreshToken,
      accessToken: token.accessToken,
      accessExpiresAt: now + token.expiresInSeconds * 1000,
      modules,
      connectedAt: new Date(now).toISOString()
    }
    yield* connections.save(connection)
    yield* crm.setConnection(orgId, {
      state: "connected",
      account: { id: userId, name: connection.userName, permissions: permissionsOf(modules) }
    })
    // The previous refresh token is replaced: revoked, so it cannot be used again.
    if (Option.isSome(previous) && previous.value.refreshToken !== token.refreshToken) {
      yield* revokeToken(previous.value.accountsUrl, previous.value.refreshToken)
    }
    return { orgId, user: connection.userName, email: connection.email, zohoOrg: connection.zohoOrgName }
  })

/** The organisation's Zoho connection as `crm status` and the console show it (never a token); none when not connected. */
export const status = (orgId: string) =>
  Effect.gen(function*() {
    const connections = yield* ZohoConnections
    return Option.map(yield* connections.get(orgId), (z): CrmStatus => ({
      user: { name: z.userName, email: z.email, zuid: z.zuid, id: z.userId, profile: z.profile },
      userRef: { text: "zuid", page: "ZUID", value: z.zuid },
      account: { id: z.zohoOrgId, name: z.zohoOrgName },
      since: z.connectedAt,
      lastError: z.lastError === null ? null : { code: z.lastErrorCode, message: z.lastError, at: z.lastErrorAt }
    }))
  })

/**
 * Revokes the refresh token at Zoho and forgets it; whether there was one. The caller then marks the
 * organisation disconnected (requests answer OAUTH_REQUIRED).
 */
export const disconnect = (orgId: string) =>
  Effect.gen(function*() {
    const connections = yield* ZohoConnections
    const zoho = yield* connections.get(orgId)
    if (Option.isSome(zoho)) {
      yield* revokeToken(zoho.value.accountsUrl, zoho.value.refreshToken)
      yield* connections.remove(orgId)
    }
    return Option.isSome(zoho)
  })
