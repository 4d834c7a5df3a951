/**
 * Where an organisation's HubSpot connection lives: the connected user and portal (hub id) as the token's
 * metadata names them, the refresh token and current access token (sealed with SecretBox, never shown), the
 * refresh lease that keeps one refresh per organisation across replicas, and the last error. Also the
 * single-use install `state` values (stored hashed). Tables from migration 0040.
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "../../store/rows.js"
import * as SecretBox from "../../store/SecretBox.js"
import type { RefusingCrm } from "../Outbox.js"

/** How long an install link works. */
export const STATE_TTL_MS = 10 * 60 * 1000

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

const Row = Schema.Struct({
  org_id: Schema.String,
  hub_id: Schema.String,
  hub_domain: Schema.String,
  user_id: Schema.String,
  email: Schema.String,
  refresh_token: Schema.String,
  access_token: NullableString,
  access_expires_at: DbInt,
  scopes: Schema.String,
  connected_at: Schema.String,
  last_error: NullableString,
  last_error_at: NullableString,
  last_error_code: NullableString
})

export interface HubSpotConnectionsService {
  readonly get: (orgId: string) => Effect.Effect<Option.Option<HubSpotConnection>, StorageError | SecretBox.SecretKeyError>
  readonly exists: (orgId: string) => Effect.Effect<boolean, StorageError>
  readonly save: (connection: NewHubSpotConnection) => Effect.Effect<void, StorageError>
  readonly saveAccessToken: (orgId: string, token: string, expiresAt: number) => Effect.Effect<void, StorageError>
  readonly recordError: (orgId: string, message: string | null, at: string, code?: string) => Effect.Effect<void, StorageError>
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

const hashState = (state: string) => createHash("sha256").update(state).digest("hex")

export const layer: Layer.Layer<HubSpotConnections, never, SqlClient.SqlClient | SecretBox.SecretBox> = Layer.effect(
  HubSpotConnections,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const find = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (orgId) => sql`SELECT org_id, hub_id, hub_domain, user_id, email, refresh_token, access_token,
        access_expires_at, scopes, connected_at, last_error, last_error_at, last_error_code
        FROM hubspot_connections WHERE org_id = ${orgId}`
    })
    const open = (row: typeof Row.Type) =>
      Effect.gen(function*() {
        const connection: HubSpotConnection = {
          orgId: row.org_id,
          hubId: row.hub_id,
          hubDomain: row.hub_domain,
          userId: row.user_id,
          email: row.email,
          refreshToken: yield* box.open(row.refresh_token),
          accessToken: row.access_token === null ? null : yield* box.open(row.access_token),
          accessExpiresAt: row.access_expires_at,
          scopes: row.scopes,
          connectedAt: row.connected_at,
          lastError: row.last_error,
          lastErrorAt: row.last_error_at,
          lastErrorCode: row.last_error_code
        }
        return connection
      })

    return HubSpotConnections.of({
      get: (orgId) =>
        Effect.flatMap(storage("hubspot.connection")(find(orgId)), (found) =>
          Option.isNone(found) ? Effect.succeed(Option.none()) : Effect.map(open(found.value), Option.some)),
      exists: (orgId) =>
        storage("hubspot.exists")(
          Effect.map(sql<{ readonly n: unknown }>`SELECT 1 AS n FROM hubspot_connections WHERE org_id = ${orgId}`, (rows) => rows.length > 0)
        ),
      save: (c) =>
        storage("hubspot.save")(sql`INSERT INTO hubspot_connections ${
          sql.insert({
            org_id: c.orgId,
            hub_id: c.hubId,
            hub_domain: c.hubDomain,
            user_id: c.userId,
            email: c.email,
            refresh_token: box.seal(c.refreshToken),
            access_token: c.accessToken === null ? null : box.seal(c.accessToken),
            access_expires_at: c.accessExpiresAt,
            refresh_lease_until: 0,
            scopes: c.scopes,
            connected_at: c.connectedAt,
            last_error: null,
            last_error_at: null,
            last_error_code: null
          })
        } ON CONFLICT (org_id) DO UPDATE SET hub_id = excluded.hub_id, hub_domain = excluded.hub_domain,
          user_id = excluded.user_id, email = excluded.email, refresh_token = excluded.refresh_token,
          access_token = excluded.access_token, access_expires_at = excluded.access_expires_at, refresh_lease_until = 0,
          scopes = excluded.scopes, connected_at = excluded.connected_at, last_error = NULL, last_error_at = NULL,
          last_error_code = NULL`),
      saveAccessToken: (orgId, token, expiresAt) =>
        storage("hubspot.saveAccessToken")(sql`UPDATE hubspot_connections SET access_token = ${box.seal(token)},
          access_expires_at = ${expiresAt}, last_error = NULL, last_error_at = NULL, last_error_code = NULL
          WHERE org_id = ${orgId}`),
      recordError: (orgId, message, at, code) =>
        storage("hubspot.recordError")(sql`UPDATE hubspot_connections SET last_error = ${message},
          last_error_at = ${message === null ? null : at}, last_error_code = ${message === null ? null : code ?? null}
          WHERE org_id = ${orgId}`),
      remove: (orgId) => storage("hubspot.remove")(sql`DELETE FROM hubspot_connections WHERE org_id = ${orgId}`),
      takeRefreshLease: (orgId, now, until) =>
        storage("hubspot.takeRefreshLease")(
          Effect.map(
            sql<{ readonly org_id: string }>`UPDATE hubspot_connections SET refresh_lease_until = ${until}
              WHERE org_id = ${orgId} AND refresh_lease_until < ${now} RETURNING org_id`,
            (rows) => rows.length === 1
          )
        ),
      releaseRefreshLease: (orgId) =>
        storage("hubspot.releaseRefreshLease")(sql`UPDATE hubspot_connections SET refresh_lease_until = 0 WHERE org_id = ${orgId}`),
      newState: (orgId, switchOrg, now) =>
        Effect.gen(function*() {
          const state = randomBytes(24).toString("base64url")
          yield* storage("hubspot.newState")(sql`INSERT INTO hubspot_oauth_states ${
            sql.insert({ state_hash: hashState(state), org_id: orgId, switch_org: switchOrg ? 1 : 0, expires_at: now + STATE_TTL_MS, used_at: null })
          }`)
          yield* storage("hubspot.pruneStates")(sql`DELETE FROM hubspot_oauth_states WHERE expires_at < ${now - STATE_TTL_MS}`)
          return state
        }),
      consumeState: (state, now) =>
        storage("hubspot.consumeState")(
          Effect.map(
            sql<{ readonly org_id: string; readonly switch_org: number | string }>`UPDATE hubspot_oauth_states
              SET used_at = ${now} WHERE state_hash = ${hashState(state)} AND used_at IS NULL AND expires_at > ${now}
              RETURNING org_id, switch_org`,
            (rows) => Option.map(Option.fromNullable(rows[0]), (row) => ({ orgId: row.org_id, switchOrg: Number(row.switch_org) === 1 }))
          )
        )
    })
  })
)

/** HubSpot as the shared outboxes' refusals name it (crm/Outbox.recordRefusal): the connection's last error. */
export const refusing = (connections: HubSpotConnectionsService): RefusingCrm => ({
  name: "hubspot",
  vendor: "HubSpot",
  recordError: (orgId, message, at) => connections.recordError(orgId, message, at, "RECORD_REFUSED")
})
