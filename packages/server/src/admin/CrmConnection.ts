/**
 * Connecting the organisation's CRM account, in one place for `parley crm connect | disconnect` and the
 * console's CRM page. Reconnecting keeps the permissions set for the organisation; a first connection gets
 * full permissions. Connecting an external CRM (Zoho, issue 25) goes through the ExternalCrm seam: until a
 * server provides one, the console says it is not available here.
 */
import { Crm, type StorageError } from "@parley/core/internal"
import { Context, Effect, Option } from "effect"
import * as ZohoConnect from "../crm/zoho/ZohoConnect.js"

/** A stable account id from a display name: "Dana Demo" → "crm_user_dana_demo". */
export const accountIdFor = (name: string): string => {
  const slug = name.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "")
  return `crm_user_${slug === "" ? "account" : slug}`
}

export const connectAccount = (orgId: string, name: string, id: string) =>
  Effect.gen(function*() {
    const crm = yield* Crm.Crm
    const current = yield* crm.connection(orgId)
    const permissions = current.state === "disconnected" ? Crm.FULL_PERMISSIONS : current.account.permissions
    const connection: Crm.CrmConnection = { state: "connected", account: { id, name, permissions } }
    yield* crm.setConnection(orgId, connection)
    return connection
  })

/** Disconnects; a Zoho connection's refresh token is revoked at Zoho and forgotten (see ZohoConnect). */
export const disconnectAccount = (orgId: string) =>
  Effect.gen(function*() {
    yield* ZohoConnect.disconnect(orgId)
    const connection: Crm.CrmConnection = { state: "disconnected" }
    return connection
  })

/**
 * An external CRM's OAuth flow, as the console starts it: the address to send the administrator to (the
 * CRM's consent page), which brings them back to `returnTo`; none when the server is not configured for it.
 */
export interface ExternalCrmService {
  readonly name: string
  /** The origin the consent page is served from: the CRM page's forms may be redirected there (see ConsoleHttp). */
  readonly consentOrigin: Option.Option<string>
  readonly start: (orgId: string, returnTo: string) => Effect.Effect<Option.Option<string>, StorageError>
}

export class ExternalCrm extends Context.Tag("@parley/server/admin/ExternalCrm")<ExternalCrm, ExternalCrmService>() {}

/** What the console uses while no server module provides ExternalCrm. */
export const unavailableZoho: ExternalCrmService = {
  name: "Zoho CRM",
  consentOrigin: Option.none(),
  start: () => Effect.succeed(Option.none())
}
