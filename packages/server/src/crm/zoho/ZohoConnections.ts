/**
 * Where an organisation's Zoho connection lives (`zoho_connections`, `zoho_oauth_states`; what every CRM's
 * connections share — sealed tokens, refresh lease, last error, OAuth states — is crm/Connections): the
 * connected user and Zoho organisation, the accounts server and API domain it was granted on, the module
 * permissions read at connect time, and when the user behind the token was last read.
 */
import { SqlClient } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, DbJson, NullableString, storage } from "../../store/rows.js"
import * as SecretBox from "../../store/SecretBox.js"
import * as Connections from "../Connections.js"
import type { RefusingCrm } from "../Outbox.js"

/** How long a consent link works. */
export const STATE_TTL_MS = Connections.STATE_TTL_MS

export const ZohoModuleAccess = Schema.Struct({
  api_name: Schema.String,
  viewable: Schema.Boolean,
  creatable: Schema.Boolean
})

export interface ZohoConnection {
  readonly orgId: string
  readonly zohoOrgId: string
  readonly zohoOrgName: string
  readonly userId: string
  readonly zuid: string
  readonly userName: string
  readonly email: string
  readonly profile: string | null
  readonly accountsUrl: string
  readonly apiDomain: string
  readonly refreshToken: string
  readonly accessToken: string | null
  readonly accessExpiresAt: number
  readonly modules: ReadonlyArray<typeof ZohoModuleAccess.Type>
  readonly connectedAt: string
  readonly lastError: string | null
  readonly lastErrorAt: string | null
  /** Zoho's or Parley's code for the last error (OAUTH_SCOPE_MISMATCH, INVALID_CLIENT…), when it has one. */
  readonly lastErrorCode: string | null
  /** When the current user behind the token was last read (epoch ms). */
  readonly identityCheckedAt: number
}

/** What a new connection is saved from: the rest starts empty (no error, identity read at connection). */
export type NewZohoConnection = Omit<ZohoConnection, "lastError" | "lastErrorAt" | "lastErrorCode" | "identityCheckedAt">

/** Zoho's own columns of `zoho_connections` (the common ones: crm/Connections). */
const OWN = Schema.Struct({
  zoho_org_id: Schema.String,
  zoho_org_name: Schema.String,
  user_id: Schema.String,
  zuid: Schema.String,
  user_name: Schema.String,
  email: Schema.String,
  profile: NullableString,
  accounts_url: Schema.String,
  api_domain: Schema.String,
  modules: DbJson(Schema.Array(ZohoModuleAccess)),
  identity_checked_at: DbInt
})

export interface ZohoConnectionsService {
  readonly get: (orgId: string) => Effect.Effect<Option.Option<ZohoConnection>, StorageError | SecretBox.SecretKeyError>
  readonly exists: (orgId: string) => Effect.Effect<boolean, StorageError>
  readonly save: (connection: NewZohoConnection) => Effect.Effect<void, StorageError>
  /**
   * Stores a refreshed access token on the connection made at `connectedAt`; a connection made since (a reconnect
   * while the refresh was on its way) keeps its own token. False when it was not stored.
   */
  readonly saveAccessToken: (orgId: string, connectedAt: string, token: string, expiresAt: number) => Effect.Effect<boolean, StorageError>
  /** The last error, in words an administrator acts on, with its code when it has one (null message: none). */
  readonly recordError: (orgId: string, message: string | null, at: string, code?: string) => Effect.Effect<void, StorageError>
  /** The current user behind the token was read at `at` and is still the connected one. */
  readonly markIdentityChecked: (orgId: string, at: number) => Effect.Effect<void, StorageError>
  readonly remove: (orgId: string) => Effect.Effect<void, StorageError>
  /**
   * Takes the organisation's refresh lease until `until` if nobody holds it (one conditional update, so one
   * process of all replicas wins); true when taken.
   */
  readonly takeRefreshLease: (orgId: string, now: number, until: number) => Effect.Effect<boolean, StorageError>
  readonly releaseRefreshLease: (orgId: string) => Effect.Effect<void, StorageError>
  /** A new consent `state` for the organisation, valid STATE_TTL_MS, usable once. */
  readonly newState: (orgId: string, switchOrg: boolean, now: number) => Effect.Effect<string, StorageError>
  /** Consumes a state: its organisation, or None when unknown, used, or expired. */
  readonly consumeState: (
    state: string,
    now: number
  ) => Effect.Effect<Option.Option<{ readonly orgId: string; readonly switchOrg: boolean }>, StorageError>
}

export class ZohoConnections extends Context.Tag("@parley/server/crm/zoho/ZohoConnections")<
  ZohoConnections,
  ZohoConnectionsService
>() {}

export const layer: Layer.Layer<ZohoConnections, never, SqlClient.SqlClient | SecretBox.SecretBox> = Layer.effect(
  ZohoConnections,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* Connections.make({ crm: "zoho", table: "zoho_connections", states: "zoho_oauth_states", own: OWN })
    return ZohoConnections.of({
      get: (orgId) =>
        Effect.map(store.get(orgId), Option.map(({ common, row }): ZohoConnection => ({
          ...common,
          zohoOrgId: row.zoho_org_id,
          zohoOrgName: row.zoho_org_name,
          userId: row.user_id,
          zuid: row.zuid,
          userName: row.user_name,
          email: row.email,
          profile: row.profile,
          accountsUrl: row.accounts_url,
          apiDomain: row.api_domain,
          modules: row.modules,
          identityCheckedAt: row.identity_checked_at
        }))),
      exists: store.exists,
      save: (c) =>
        store.replace(c, {
          zoho_org_id: c.zohoOrgId,
          zoho_org_name: c.zohoOrgName,
          user_id: c.userId,
          zuid: c.zuid,
          user_name: c.userName,
          email: c.email,
          profile: c.profile,
          accounts_url: c.accountsUrl,
          api_domain: c.apiDomain,
          modules: JSON.stringify(c.modules),
          // The identity was read as the connection was made.
          identity_checked_at: Date.parse(c.connectedAt)
        }),
      saveAccessToken: store.saveAccessToken,
      recordError: store.recordError,
      markIdentityChecked: (orgId, at) =>
        storage("zoho.markIdentityChecked")(sql`UPDATE zoho_connections SET identity_checked_at = ${at} WHERE org_id = ${orgId}`),
      remove: store.remove,
      takeRefreshLease: store.takeRefreshLease,
      releaseRefreshLease: store.releaseRefreshLease,
      newState: store.newState,
      consumeState: store.consumeState
    })
  })
)

/** Zoho as the shared outboxes name it when it refuses a record for good (crm/Outbox.recordRefusal). */
export const refusing = (connections: ZohoConnectionsService): RefusingCrm => ({
  name: "zoho",
  vendor: "Zoho",
  recordError: (orgId, message, at) => connections.recordError(orgId, message, at)
})
