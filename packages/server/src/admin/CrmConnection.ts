/**
 * Connecting the organisation's CRM account, in one place for `parley crm connect | disconnect` and the
 * console's CRM page. Reconnecting keeps the permissions set for the organisation; a first connection gets
 * full permissions. Connecting a CRM of the registry (crm/Registry.ts) starts its OAuth flow; its callback
 * makes its user the account. Also what the organisation's connection is, as `crm status` and the console show it.
 */
import { Crm } from "@parley/core/internal"
import { Effect, Option } from "effect"
import type { CrmStatus, RunningCrm } from "../crm/Crm.js"
import { Crms } from "../crm/CrmLive.js"
import { BUILT_IN } from "../crm/Registry.js"

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

/** Disconnects; a connected CRM's grant is revoked at the CRM and forgotten first. */
export const disconnectAccount = (orgId: string) =>
  Effect.gen(function*() {
    const crms = yield* Crms
    yield* Effect.forEach(crms.all, (crm) => crm.disconnect(orgId), { discard: true })
    yield* (yield* Crm.Crm).setConnection(orgId, { state: "disconnected" })
    const connection: Crm.CrmConnection = { state: "disconnected" }
    return connection
  })

/** The organisation's connection: its state, and the CRM it connected with what that CRM says of it. */
export interface ConnectionStatus {
  readonly orgId: string
  readonly state: Crm.CrmConnection["state"]
  readonly connected: Option.Option<{ readonly crm: RunningCrm; readonly status: CrmStatus }>
}

export const connectionStatus = (orgId: string) =>
  Effect.gen(function*() {
    const crms = yield* Crms
    const connection = yield* (yield* Crm.Crm).connection(orgId)
    for (const crm of crms.all) {
      const status = yield* crm.status(orgId)
      if (Option.isSome(status)) {
        const view: ConnectionStatus = { orgId, state: connection.state, connected: Option.some({ crm, status: status.value }) }
        return view
      }
    }
    const view: ConnectionStatus = { orgId, state: connection.state, connected: Option.none() }
    return view
  })

/**
 * What `crm status --json` prints: the provider (the connected CRM's name, else the default CRM's), the state, the user, the
 * CRM account under the CRM's own key, since when, the last error — the same keys whichever CRM is connected.
 */
export const statusJson = (view: ConnectionStatus, crms: ReadonlyArray<RunningCrm>) =>
  Option.match(view.connected, {
    onNone: () => ({
      orgId: view.orgId,
      provider: BUILT_IN.name,
      state: view.state,
      user: null,
      ...Object.fromEntries(crms.map((crm) => [crm.accountKey, null])),
      since: null,
      lastError: null
    }),
    onSome: ({ crm, status }) => ({
      orgId: view.orgId,
      provider: crm.name,
      state: view.state,
      user: status.user,
      [crm.accountKey]: status.account,
      since: status.since,
      lastError: status.lastError
    })
  })
