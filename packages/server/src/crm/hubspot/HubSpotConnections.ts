/**
 * Where an organisation's HubSpot connection lives (`hubspot_connections`, `hubspot_oauth_states`, migration 0040;
 * what every CRM's connections share — sealed tokens, refresh lease, last error, install states — is
 * crm/Connections): the connected user and portal (hub id) as the token's metadata names them, and the
 * scopes granted.
 */
import type { SqlClient } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import * as SecretBox from "../../store/SecretBox.js"
import * as Connections from "../Connections.js"
import type { RefusingCrm } from "../Outbox.js"

/** How long an install link works. */
export const STATE_TTL_MS = Connections.STATE_TTL_MS

export interface HubSpotConnection {
  readonly orgId: string
  readonly hubId: string
  readonly hubDomain: string
  readonly userId: string
  readonly email: string
  readonly refreshToken: string
  readonly accessToken: string | null
  readonly accessExpiresAt: number
  readonly scopes: string
  readonly connectedAt: string
  readonly lastError: string | null
  readonly lastErrorAt: string | null
  readonly lastErrorCode: string | null
}

export type NewHubSpotConnection = Omit<HubSpotConnection, "lastError" | "lastErrorAt" | "lastErrorCode">

/** HubSpot's own columns of `hubspot_connections` (the common ones: crm/Connections). */
const OWN = Schema.Struct({
  hub_id: Schema.String,
  hub_domain: Schema.String,
  user_id: Schema.String,
  email: Schema.String,
  scopes: Schema.String
})

export interface HubSpotConnectionsService {
  readonly get: (orgId: string) => Effect.Effect<Option.Option<HubSpotConnection>, StorageError | SecretBox.SecretKeyError>
  readonly exists: (orgId: string) => Effect.Effect<boolean, StorageError>
  readonly save: (connection: NewHubSpotConnection) => Effect.Effect<void, StorageError>
  /**
   * Stores a refreshed access token on the connection made at `connectedAt`; a connection made since (a reinstall
   * while the refresh was on its way) keeps its own token. False when it was not stored.
   */
  readonly saveAccessToken: (orgId: string, connectedAt: string, token: string, expiresAt: number) => Effect.Effect<boolean, StorageError>
  readonly recordError: (orgId: string, message: string | null, at: string, code?: string) => Effect.Effect<void, StorageError>
  /** Whether the connection made at `connectedAt` was replaced since (a reinstall while its tokens were in use). */
  readonly superseded: (orgId: string, connectedAt: string) => Effect.Effect<boolean>
  readonly remove: (orgId: string) => Effect.Effect<void, StorageError>
  /** Takes the refresh lease until `until` if nobody holds it (one conditional update: one replica wins). */
  readonly takeRefreshLease: (orgId: string, now: number, until: number) => Effect.Effect<boolean, StorageError>
  readonly releaseRefreshLease: (orgId: string) => Effect.Effect<void, StorageError>
  readonly newState: (orgId: string, switchOrg: boolean, now: number) => Effect.Effect<string, StorageError>
  readonly consumeState: (
    state: string,
    now: number
  ) => Effect.Effect<Option.Option<{ readonly orgId: string; readonly switchOrg: boolean }>, StorageError>
}

export class HubSpotConnections extends Context.Tag("@parley/server/crm/hubspot/HubSpotConnections")<
  HubSpotConnections,
  HubSpotConnectionsService
>() {}

export const layer: Layer.Layer<HubSpotConnections, never, SqlClient.SqlClient | SecretBox.SecretBox> = Layer.effect(
  HubSpotConnections,
  Effect.gen(function*() {
    const store = yield* Connections.make({ crm: "hubspot", table: "hubspot_connections", states: "hubspot_oauth_states", own: OWN })
    return HubSpotConnections.of({
      get: (orgId) =>
        Effect.map(store.get(orgId), Option.map(({ common, row }): HubSpotConnection => ({
          ...common,
          hubId: row.hub_id,
          hubDomain: row.hub_domain,
          userId: row.user_id,
          email: row.email,
          scopes: row.scopes
        }))),
      exists: store.exists,
      save: (c) => store.replace(c, { hub_id: c.hubId, hub_domain: c.hubDomain, user_id: c.userId, email: c.email, scopes: c.scopes }),
      saveAccessToken: store.saveAccessToken,
      recordError: store.recordError,
      superseded: store.superseded,
      remove: store.remove,
      takeRefreshLease: store.takeRefreshLease,
      releaseRefreshLease: store.releaseRefreshLease,
      newState: store.newState,
      consumeState: store.consumeState
    })
  })
)

/** HubSpot as the shared outboxes' refusals name it (crm/Outbox.recordRefusal): the connection's last error. */
export const refusing = (connections: HubSpotConnectionsService): RefusingCrm => ({
  name: "hubspot",
  vendor: "HubSpot",
  recordError: (orgId, message, at) => connections.recordError(orgId, message, at, "RECORD_REFUSED")
})
