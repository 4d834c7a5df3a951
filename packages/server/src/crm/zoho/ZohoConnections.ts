/**
 * Where an organisation's Zoho connection lives: the connected user and Zoho
 * organisation, the accounts server and API domain it was granted on, the
 * refresh token and current access token (sealed with SecretBox, never shown),
 * the refresh lease, the module permissions read at connect time, and the
 * last error. Also the single-use OAuth `state` values (stored hashed).
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, DbJson, NullableString, storage } from "../../store/rows.js"
import * as SecretBox from "../../store/SecretBox.js"
import type { RefusingCrm } from "../Outbox.js"

/** How long a consent link works. */
export const STATE_TTL_MS = 10 * 60 * 1000

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

const Row = Schema.Struct({
  org_id: Schema.String,
  zoho_org_id: Schema.String,
  zoho_org_name: Schema.String,
  user_id: Schema.String,
  zuid: Schema.String,
  user_name: Schema.String,
  email: Schema.String,
  profile: NullableString,
  accounts_url: Schema.String,
  api_domain: Schema.String,
  refresh_token: Schema.String,
  access_token: NullableString,
  access_expires_at: DbInt,
  modules: DbJson(Schema.Array(ZohoModuleAccess)),
  connected_at: Schema.String,
  last_error: NullableString,
  last_error_at: NullableString,
  last_error_code: NullableString,
  identity_checked_at: DbInt
})

export interface ZohoConnectionsService {
  readonly get: (orgId: string) => Effect.Effect<Option.Option<ZohoConnection>, StorageError | SecretBox.SecretKeyError>
  readonly exists: (orgId: string) => Effect.Effect<boolean, StorageError>
  readonly save: (connection: NewZohoConnection) => Effect.Effect<void, StorageError>
  readonly saveAccessToken: (orgId: string, token: string, expiresAt: number) => Effect.Effect<void, StorageError>
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

const hashState = (state: string) => createHash("sha256").update(state).digest("hex")

export const layer: Layer.Layer<ZohoConnections, never, SqlClient.SqlClient | SecretBox.SecretBox> = Layer.effect(
  ZohoConnections,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const find = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (orgId) => sql`SELECT org_id, zoho_org_id, zoho_org_name, user_id, zuid, user_name, email, profile,
        accounts_url, api_domain, refresh_token, access_token, access_expires_at, modules, connected_at, last_error,
        last_error_at, last_error_code, identity_checked_at FROM zoho_connections WHERE org_id = ${orgId}`
    })
    const open = (row: typeof Row.Type) =>
      Effect.gen(function*() {
        const connection: ZohoConnection = {
          orgId: row.org_id,
          zohoOrgId: row.zoho_org_id,
          zohoOrgName: row.zoho_org_name,
          userId: row.user_id,
          zuid: row.zuid,
          userName: row.user_name,
          email: row.email,
          profile: row.profile,
          accountsUrl: row.accounts_url,
          apiDomain: row.api_domain,
          refreshToken: yield* box.open(row.refresh_token),
          accessToken: row.access_token === null ? null : yield* box.open(row.access_token),
          accessExpiresAt: row.access_expires_at,
          modules: row.modules,
          connectedAt: row.connected_at,
          lastError: row.last_error,
          lastErrorAt: row.last_error_at,
          lastErrorCode: row.last_error_code,
          identityCheckedAt: row.identity_checked_at
        }
        return connection
      })

    return ZohoConnections.of({
      get: (orgId) =>
        Effect.flatMap(storage("zoho.connection")(find(orgId)), (found) =>
          Option.isNone(found) ? Effect.succeed(Option.none()) : Effect.map(open(found.value), Option.some)),
      exists: (orgId) =>
        storage("zoho.exists")(
          Effect.map(sql<{ readonly n: unknown }>`SELECT 1 AS n FROM zoho_connections WHERE org_id = ${orgId}`, (rows) => rows.length > 0)
        ),
      save: (c) =>
        storage("zoho.save")(sql`INSERT INTO zoho_connections ${
          sql.insert({
            org_id: c.orgId,
            zoho_org_id: c.zohoOrgId,
            zoho_org_name: c.zohoOrgName,
            user_id: c.userId,
            zuid: c.zuid,
            user_name: c.userName,
            email: c.email,
            profile: c.profile,
            accounts_url: c.accountsUrl,
            api_domain: c.apiDomain,
            refresh_token: box.seal(c.refreshToken),
            access_token: c.accessToken === null ? null : box.seal(c.accessToken),
            access_expires_at: c.accessExpiresAt,
            refresh_lease_until: 0,
            modules: JSON.stringify(c.modules),
            connected_at: c.connectedAt,
            last_error: null,
            last_error_at: null,
            last_error_code: null,
            identity_checked_at: Date.parse(c.connectedAt)
          })
        } ON CONFLICT (org_id) DO UPDATE SET zoho_org_id = excluded.zoho_org_id, zoho_org_name = excluded.zoho_org_name,
          user_id = excluded.user_id, zuid = excluded.zuid, user_name = excluded.user_name, email = excluded.email,
          profile = excluded.profile, accounts_url = excluded.accounts_url, api_domain = excluded.api_domain,
          refresh_token = excluded.refresh_token, access_token = excluded.access_token,
          access_expires_at = excluded.access_expires_at, refresh_lease_until = 0, modules = excluded.modules,
          connected_at = excluded.connected_at, last_error = NULL, last_error_at = NULL, last_error_code = NULL,
          identity_checked_at = excluded.identity_checked_at`),
      saveAccessToken: (orgId, token, expiresAt) =>
        storage("zoho.saveAccessToken")(sql`UPDATE zoho_connections SET access_token = ${box.seal(token)},
          access_expires_at = ${expiresAt}, last_error = NULL, last_error_at = NULL, last_error_code = NULL
          WHERE org_id = ${orgId}`),
      recordError: (orgId, message, at, code) =>
        storage("zoho.recordError")(sql`UPDATE zoho_connections SET last_error = ${message},
          last_error_at = ${message === null ? null : at}, last_error_code = ${message === null ? null : code ?? null}
          WHERE org_id = ${orgId}`),
      markIdentityChecked: (orgId, at) =>
        storage("zoho.markIdentityChecked")(sql`UPDATE zoho_connections SET identity_checked_at = ${at} WHERE org_id = ${orgId}`),
      remove: (orgId) => storage("zoho.remove")(sql`DELETE FROM zoho_connections WHERE org_id = ${orgId}`),
      takeRefreshLease: (orgId, now, until) =>
        storage("zoho.takeRefreshLease")(
          Effect.map(
            sql<{ readonly org_id: string }>`UPDATE zoho_connections SET refresh_lease_until = ${until}
              WHERE org_id = ${orgId} AND refresh_lease_until < ${now} RETURNING org_id`,
            (rows) => rows.length === 1
          )
        ),
      releaseRefreshLease: (orgId) =>
        storage("zoho.releaseRefreshLease")(sql`UPDATE zoho_connections SET refresh_lease_until = 0 WHERE org_id = ${orgId}`),
      newState: (orgId, switchOrg, now) =>
        Effect.gen(function*() {
          const state = randomBytes(24).toString("base64url")
          yield* storage("zoho.newState")(sql`INSERT INTO zoho_oauth_states ${
            sql.insert({ state_hash: hashState(state), org_id: orgId, switch_org: switchOrg ? 1 : 0, expires_at: now + STATE_TTL_MS, used_at: null })
          }`)
          // Old states are of no use to anyone; dropped as new ones are made.
          yield* storage("zoho.pruneStates")(sql`DELETE FROM zoho_oauth_states WHERE expires_at < ${now - STATE_TTL_MS}`)
          return state
        }),
      consumeState: (state, now) =>
        storage("zoho.consumeState")(
          Effect.map(
            sql<{ readonly org_id: string; readonly switch_org: number | string }>`UPDATE zoho_oauth_states
              SET used_at = ${now} WHERE state_hash = ${hashState(state)} AND used_at IS NULL AND expires_at > ${now}
              RETURNING org_id, switch_org`,
            (rows) =>
              Option.map(Option.fromNullable(rows[0]), (row) => ({ orgId: row.org_id, switchOrg: Number(row.switch_org) === 1 }))
          )
        )
    })
  })
)

/** Zoho as the shared outboxes name it when it refuses a record for good (crm/Outbox.recordRefusal). */
export const refusing = (connections: ZohoConnectionsService): RefusingCrm => ({
  name: "zoho",
  vendor: "Zoho",
  recordError: (orgId, message, at) => connections.recordError(orgId, message, at)
})
