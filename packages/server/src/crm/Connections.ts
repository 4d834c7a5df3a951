/**
 * What every CRM's connections table shares, in one place: each CRM keeps its organisations' connections in
 * its own table (named in its folder: `<crm>_connections`, `<crm>_oauth_states`), with its own columns for the
 * account and user it was granted by, and these common ones — the refresh token and current access token
 * (sealed with SecretBox, never shown), the refresh lease that keeps one refresh per organisation across
 * replicas, when it was connected, and the last error. Also the single-use OAuth `state` values (stored
 * hashed, valid STATE_TTL_MS). A CRM's connections module maps its own columns to its connection's fields.
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql"
import { Crm, type StorageError } from "@parley/core/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"
import * as SecretBox from "../store/SecretBox.js"

/** How long a consent (install) link works. */
export const STATE_TTL_MS = 10 * 60 * 1000

/** The columns every CRM's connections table has. */
const Common = Schema.Struct({
  org_id: Schema.String,
  refresh_token: Schema.String,
  access_token: NullableString,
  access_expires_at: DbInt,
  connected_at: Schema.String,
  last_error: NullableString,
  last_error_at: NullableString,
  last_error_code: NullableString
})

/** The common part of a connection, its tokens opened. */
export interface CommonConnection {
  readonly orgId: string
  readonly refreshToken: string
  readonly accessToken: string | null
  readonly accessExpiresAt: number
  readonly connectedAt: string
  readonly lastError: string | null
  readonly lastErrorAt: string | null
  readonly lastErrorCode: string | null
}

/** What a new connection is saved from: the common part (no error yet) and the CRM's own columns, encoded. */
export type NewCommonConnection = Omit<CommonConnection, "lastError" | "lastErrorAt" | "lastErrorCode">
export type OwnColumns = Readonly<Record<string, string | number | null>>

const hashState = (state: string) => createHash("sha256").update(state).digest("hex")

/**
 * The connections of the CRM `crm` (its operations' prefix in errors) in `table`, whose own columns are
 * decoded with `own`; OAuth states in `states`.
 */
export const make = <Own, OwnEncoded>(spec: {
  readonly crm: string
  readonly table: string
  readonly states: string
  /** The CRM's own columns (a struct of them; the common columns are left to this module). */
  readonly own: Schema.Schema<Own, OwnEncoded>
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const table = sql(spec.table)
    const states = sql(spec.states)
    const decodeCommon = Schema.decodeUnknown(Common)
    const decodeOwn = Schema.decodeUnknown(spec.own)
    const op = (what: string) => `${spec.crm}.${what}`

    /** The stored row, its own columns decoded, and its common part with the tokens opened. */
    const get = (orgId: string): Effect.Effect<
      Option.Option<{ readonly common: CommonConnection; readonly row: Own }>,
      StorageError | SecretBox.SecretKeyError
    > =>
      Effect.gen(function*() {
        const rows = yield* storage(op("connection"))(sql<Readonly<Record<string, unknown>>>`SELECT * FROM ${table} WHERE org_id = ${orgId}`)
        const found = rows[0]
        if (found === undefined) return Option.none()
        const row = yield* storage(op("connection"))(decodeCommon(found))
        const own = yield* storage(op("connection"))(decodeOwn(found))
        const common: CommonConnection = {
          orgId: row.org_id,
          refreshToken: yield* box.open(row.refresh_token),
          accessToken: row.access_token === null ? null : yield* box.open(row.access_token),
          accessExpiresAt: row.access_expires_at,
          connectedAt: row.connected_at,
          lastError: row.last_error,
          lastErrorAt: row.last_error_at,
          lastErrorCode: row.last_error_code
        }
        return Option.some({ common, row: own })
      })

    const exists = (orgId: string) =>
      storage(op("exists"))(
        Effect.map(sql<{ readonly n: unknown }>`SELECT 1 AS n FROM ${table} WHERE org_id = ${orgId}`, (rows) => rows.length > 0)
      )

    /** Saves a new connection, replacing the organisation's (its lease released, its last error cleared). */
    const replace = (c: NewCommonConnection, own: OwnColumns) => {
      const row: Record<string, string | number | null> = {
        org_id: c.orgId,
        ...own,
        refresh_token: box.seal(c.refreshToken),
        access_token: c.accessToken === null ? null : box.seal(c.accessToken),
        access_expires_at: c.accessExpiresAt,
        refresh_lease_until: 0,
        connected_at: c.connectedAt,
        last_error: null,
        last_error_at: null,
        last_error_code: null
      }
      const updates = sql.literal(
        Object.keys(row).filter((column) => column !== "org_id").map((column) => `${column} = excluded.${column}`).join(", ")
      )
      return storage(op("save"))(sql`INSERT INTO ${table} ${sql.insert(row)} ON CONFLICT (org_id) DO UPDATE SET ${updates}`)
    }

    /**
     * Stores a refreshed access token on the connection made at `connectedAt`; a connection made since (a
     * reconnect while the refresh was on its way) keeps its own token. False when it was not stored.
     */
    const saveAccessToken = (orgId: string, connectedAt: string, token: string, expiresAt: number) =>
      storage(op("saveAccessToken"))(Effect.map(
        sql<{ readonly org_id: string }>`UPDATE ${table} SET access_token = ${box.seal(token)},
          access_expires_at = ${expiresAt}, last_error = NULL, last_error_at = NULL, last_error_code = NULL
          WHERE org_id = ${orgId} AND connected_at = ${connectedAt} RETURNING org_id`,
        (rows) => rows.length === 1
      ))

    /** The last error, in words an administrator acts on, with its code when it has one (null message: none). */
    const recordError = (orgId: string, message: string | null, at: string, code?: string) =>
      storage(op("recordError"))(sql`UPDATE ${table} SET last_error = ${message},
        last_error_at = ${message === null ? null : at}, last_error_code = ${message === null ? null : code ?? null}
        WHERE org_id = ${orgId}`)

    /**
     * Whether the connection made at `connectedAt` was replaced since (a reconnect while its old tokens were in
     * use): what they meet is no longer the organisation's state. False when none is stored, or unreadable.
     */
    const superseded = (orgId: string, connectedAt: string): Effect.Effect<boolean> =>
      Effect.orElseSucceed(
        Effect.map(
          sql<{ readonly connected_at: string }>`SELECT connected_at FROM ${table} WHERE org_id = ${orgId}`,
          (rows) => rows[0] !== undefined && rows[0].connected_at !== connectedAt
        ),
        () => false
      )

    const remove = (orgId: string) => storage(op("remove"))(sql`DELETE FROM ${table} WHERE org_id = ${orgId}`)

    /** Takes the refresh lease until `until` if nobody holds it (one conditional update: one replica wins). */
    const takeRefreshLease = (orgId: string, now: number, until: number) =>
      storage(op("takeRefreshLease"))(
        Effect.map(
          sql<{ readonly org_id: string }>`UPDATE ${table} SET refresh_lease_until = ${until}
            WHERE org_id = ${orgId} AND refresh_lease_until < ${now} RETURNING org_id`,
          (rows) => rows.length === 1
        )
      )

    const releaseRefreshLease = (orgId: string) =>
      storage(op("releaseRefreshLease"))(sql`UPDATE ${table} SET refresh_lease_until = 0 WHERE org_id = ${orgId}`)

    /** A new consent `state` for the organisation, valid STATE_TTL_MS, usable once. */
    const newState = (orgId: string, switchOrg: boolean, now: number) =>
      Effect.gen(function*() {
        const state = randomBytes(24).toString("base64url")
        yield* storage(op("newState"))(sql`INSERT INTO ${states} ${
          sql.insert({ state_hash: hashState(state), org_id: orgId, switch_org: switchOrg ? 1 : 0, expires_at: now + STATE_TTL_MS, used_at: null })
        }`)
        // Old states are of no use to anyone; dropped as new ones are made.
        yield* storage(op("pruneStates"))(sql`DELETE FROM ${states} WHERE expires_at < ${now - STATE_TTL_MS}`)
        return state
      })

    /** Consumes a state: its organisation, or None when unknown, used, or expired. */
    const consumeState = (state: string, now: number) =>
      storage(op("consumeState"))(
        Effect.map(
          sql<{ readonly org_id: string; readonly switch_org: number | string }>`UPDATE ${states}
            SET used_at = ${now} WHERE state_hash = ${hashState(state)} AND used_at IS NULL AND expires_at > ${now}
            RETURNING org_id, switch_org`,
          (rows) => Option.map(Option.fromNullable(rows[0]), (row) => ({ orgId: row.org_id, switchOrg: Number(row.switch_org) === 1 }))
        )
      )

    return { get, exists, replace, saveAccessToken, recordError, superseded, remove, takeRefreshLease, releaseRefreshLease, newState, consumeState }
  })

/**
 * Marks an organisation's connection lapsed — the CRM refused its refresh token (`disconnected`: reconnect),
 * or the token now belongs to someone else (`identity_changed`) — and fails with the matching CrmError: the
 * connection's last error (with OAUTH_REQUIRED or IDENTITY_CHANGED), and the state of the default CRM's
 * connection, which the API's authentication reads (`builtIn`). A caller whose connection was replaced since
 * (`superseded`) must not call it: the new connection is not lapsed.
 */
export const lapse = (
  crm: string,
  builtIn: Crm.CrmService,
  recordError: (orgId: string, message: string, at: string, code: string) => Effect.Effect<void, StorageError>
) =>
(orgId: string, state: "disconnected" | "identity_changed", message: string): Effect.Effect<never, Crm.CrmError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* Effect.ignore(recordError(orgId, message, new Date(now).toISOString(), state === "disconnected" ? "OAUTH_REQUIRED" : "IDENTITY_CHANGED"))
    const current = yield* Effect.orElseSucceed(builtIn.connection(orgId), () => ({ state: "disconnected" as const }))
    if (current.state !== "disconnected") {
      yield* Effect.ignore(builtIn.setConnection(orgId, state === "disconnected" ? { state } : { state, account: current.account }))
    }
    return yield* new Crm.CrmError({
      operation: `${crm}.refresh`,
      cause: message,
      reason: state === "disconnected" ? "oauth_required" : "identity_changed"
    })
  })

/**
 * The CRM's connections' tokens, resealed under the current key (`serve`, at start); a stale access token is
 * simply refreshed, so it is dropped rather than resealed.
 */
export const resealSecrets = (table: string): Effect.Effect<void, SecretBox.SecretKeyError | SqlError.SqlError, SqlClient.SqlClient | SecretBox.SecretBox> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const rows = yield* sql<{ readonly org_id: string; readonly refresh_token: string }>`
      SELECT org_id, refresh_token FROM ${sql(table)}`
    for (const row of rows) {
      if (box.isCurrent(row.refresh_token)) continue
      const sealed = box.seal(yield* box.open(row.refresh_token))
      yield* sql`UPDATE ${sql(table)} SET refresh_token = ${sealed}, access_token = NULL, access_expires_at = 0
        WHERE org_id = ${row.org_id} AND refresh_token = ${row.refresh_token}`
    }
  })
