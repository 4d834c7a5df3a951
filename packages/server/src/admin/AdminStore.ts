/**
 * Administrators of the console, their sessions and their one-time sign-in links, in SQL (both stores).
 * Every administrator belongs to one organisation, and every session carries that organisation: the console
 * scopes each read and write to it. Tokens (session cookies, sign-in links) are stored as SHA-256 hashes
 * only; the CSRF token of a session is not a credential on its own and is stored as is.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Crypto, type StorageError } from "@parley/core/internal"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"
import { isRole, type Role } from "./Roles.js"

/** How long a session lasts from sign-in, whatever is done with it (no sliding renewal: a stolen cookie expires). */
export const SESSION_HOURS = 12
/** How long a sign-in link printed by `parley admins create` can be used to set the password. */
export const LINK_HOURS = 24

export interface Admin {
  readonly id: string
  readonly orgId: string
  readonly email: string
  readonly passwordHash: string | null
  readonly role: Role
  readonly createdAt: string
}

export interface Session {
  readonly adminId: string
  readonly orgId: string
  readonly email: string
  readonly role: Role
  readonly csrfToken: string
  /** The organisation's IANA time zone: every time a console page shows is read in it (Times.ts). */
  readonly timezone: string
}

export interface AdminStoreService {
  readonly insert: (admin: Admin) => Effect.Effect<boolean, StorageError>
  readonly findByEmail: (email: string) => Effect.Effect<Option.Option<Admin>, StorageError>
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<Admin>, StorageError>
  /** Removes the administrator and every session of theirs; false when the organisation has no such one. */
  readonly remove: (orgId: string, email: string) => Effect.Effect<boolean, StorageError>
  readonly setPassword: (adminId: string, hash: string) => Effect.Effect<void, StorageError>
  /**
   * Gives the organisation's administrator another role. "last-owner" (and nothing changed) when that would
   * leave the organisation without an owner; "missing" when it has no such administrator.
   */
  readonly setRole: (orgId: string, email: string, role: Role) => Effect.Effect<"changed" | "last-owner" | "missing", StorageError>
  /** As `remove`, for the console: refused ("last-owner") when it would leave the organisation without an owner. */
  readonly removeKeepingAnOwner: (
    orgId: string,
    email: string
  ) => Effect.Effect<"removed" | "last-owner" | "missing", StorageError>
  /** A new one-time link token for the administrator (any earlier one stops working); returned once. */
  readonly issueLink: (adminId: string) => Effect.Effect<string, StorageError>
  /** The administrator an unexpired link token belongs to. */
  readonly findByLink: (token: string) => Effect.Effect<Option.Option<Admin>, StorageError>
  /** Uses up the link: sets the password and forgets the token, in one statement. False when it was used or expired. */
  readonly redeemLink: (token: string, hash: string) => Effect.Effect<boolean, StorageError>
  /** A new session; its cookie token is returned once. */
  readonly openSession: (admin: Admin) => Effect.Effect<string, StorageError>
  readonly findSession: (token: string) => Effect.Effect<Option.Option<Session>, StorageError>
  readonly closeSession: (token: string) => Effect.Effect<void, StorageError>
}

export class AdminStore extends Context.Tag("@parley/server/admin/AdminStore")<AdminStore, AdminStoreService>() {}

const AdminRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  email: Schema.String,
  password_hash: NullableString,
  role: Schema.String,
  created_at: Schema.String
})

const SessionRow = Schema.Struct({
  admin_id: Schema.String,
  org_id: Schema.String,
  email: Schema.String,
  role: Schema.String,
  csrf_token: Schema.String,
  expires_at: DbInt,
  timezone: Schema.String
})

/** A value the database holds but no release wrote reads as the least power, never the most. */
const roleOf = (value: string): Role => (isRole(value) ? value : "viewer")

const toAdmin = (r: typeof AdminRow.Type): Admin => ({
  id: r.id,
  orgId: r.org_id,
  email: r.email,
  passwordHash: r.password_hash,
  role: roleOf(r.role),
  createdAt: r.created_at
})

/** Emails compare without case or surrounding spaces: `Ada@Example.com` and `ada@example.com` are one account. */
export const normalEmail = (email: string): string => email.trim().toLowerCase()

/** A plausible email: something@something.tld, no spaces; the console only compares it, never mails it. */
export const isPlausibleEmail = (normal: string): boolean => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(normal) && normal.length <= 254

const newToken = () => Crypto.randomBase62(32, 43)

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal("id, org_id, email, password_hash, role, created_at")
  const byEmail = SqlSchema.findOne({
    Request: Schema.String,
    Result: AdminRow,
    execute: (email) => sql`SELECT ${columns} FROM admins WHERE email = ${email}`
  })
  const byOrg = SqlSchema.findAll({
    Request: Schema.String,
    Result: AdminRow,
    execute: (orgId) => sql`SELECT ${columns} FROM admins WHERE org_id = ${orgId} ORDER BY email`
  })
  const byLink = SqlSchema.findOne({
    Request: Schema.Struct({ hash: Schema.String, now: Schema.Number }),
    Result: AdminRow,
    execute: ({ hash, now }) => sql`SELECT ${columns} FROM admins WHERE link_hash = ${hash} AND link_expires_at > ${now}`
  })
  /**
   * The organisation's owners, counted inside the transaction that would remove one. On Postgres the rows are
   * locked, so two owners demoting each other at once cannot both succeed (the second, once the first commits,
   * no longer counts it); SQLite has one writer at a time.
   */
  const ownersLocked = (orgId: string) =>
    Effect.map(
      sql.onDialectOrElse({
        pg: () => sql<{ id: string }>`SELECT id FROM admins WHERE org_id = ${orgId} AND role = 'owner' FOR UPDATE`,
        orElse: () => sql<{ id: string }>`SELECT id FROM admins WHERE org_id = ${orgId} AND role = 'owner'`
      }),
      (rows) => rows.length
    )
  const sessionOf = SqlSchema.findOne({
    Request: Schema.String,
    Result: SessionRow,
    execute: (hash) =>
      sql`SELECT s.admin_id, s.org_id, a.email, a.role, s.csrf_token, s.expires_at, o.timezone
          FROM admin_sessions s JOIN admins a ON a.id = s.admin_id AND a.org_id = s.org_id
          JOIN organisations o ON o.id = s.org_id
          WHERE s.token_hash = ${hash}`
  })
  return AdminStore.of({
    insert: (admin) =>
      storage("admins.insert")(Effect.map(
        sql`INSERT INTO admins ${
          sql.insert({
            id: admin.id,
            org_id: admin.orgId,
            email: admin.email,
            password_hash: admin.passwordHash,
            role: admin.role,
            created_at: admin.createdAt
          })
        } ON CONFLICT (email) DO NOTHING RETURNING id`,
        (rows) => rows.length > 0
      )),
    findByEmail: (email) => storage("admins.findByEmail")(Effect.map(byEmail(normalEmail(email)), Option.map(toAdmin))),
    list: (orgId) => storage("admins.list")(Effect.map(byOrg(orgId), (rows) => rows.map(toAdmin))),
    remove: (orgId, email) =>
      storage("admins.remove")(sql.withTransaction(Effect.gen(function*() {
        const removed = yield* sql<{ id: string }>`DELETE FROM admins WHERE org_id = ${orgId} AND email = ${
          normalEmail(email)
        } RETURNING id`
        for (const { id } of removed) yield* sql`DELETE FROM admin_sessions WHERE admin_id = ${id}`
        return removed.length > 0
      }))),
    setPassword: (adminId, hash) =>
      storage("admins.setPassword")(Effect.asVoid(sql.withTransaction(Effect.zipRight(
        sql`UPDATE admins SET password_hash = ${hash}, link_hash = NULL, link_expires_at = NULL WHERE id = ${adminId}`,
        // A new password ends every session opened with the old one.
        sql`DELETE FROM admin_sessions WHERE admin_id = ${adminId}`
      )))),
    setRole: (orgId, email, role) =>
      storage("admins.setRole")(sql.withTransaction(Effect.gen(function*() {
        const found = yield* byEmail(normalEmail(email))
        if (Option.isNone(found) || found.value.org_id !== orgId) return "missing" as const
        if (found.value.role === "owner" && role !== "owner" && (yield* ownersLocked(orgId)) <= 1) return "last-owner" as const
        yield* sql`UPDATE admins SET role = ${role} WHERE org_id = ${orgId} AND id = ${found.value.id}`
        return "changed" as const
      }))),
    removeKeepingAnOwner: (orgId, email) =>
      storage("admins.removeKeepingAnOwner")(sql.withTransaction(Effect.gen(function*() {
        const found = yield* byEmail(normalEmail(email))
        if (Option.isNone(found) || found.value.org_id !== orgId) return "missing" as const
        if (found.value.role === "owner" && (yield* ownersLocked(orgId)) <= 1) return "last-owner" as const
        yield* sql`DELETE FROM admins WHERE org_id = ${orgId} AND id = ${found.value.id}`
        yield* sql`DELETE FROM admin_sessions WHERE admin_id = ${found.value.id}`
        return "removed" as const
      }))),
    issueLink: (adminId) =>
      storage("admins.issueLink")(Effect.gen(function*() {
        const token = newToken()
        const until = (yield* Clock.currentTimeMillis) + LINK_HOURS * 3_600_000
        yield* sql`UPDATE admins SET link_hash = ${Crypto.sha256Hex(token)}, link_expires_at = ${until} WHERE id = ${adminId}`
        return token
      })),
    findByLink: (token) =>
      storage("admins.findByLink")(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(byLink({ hash: Crypto.sha256Hex(token), now }), Option.map(toAdmin)))),
    redeemLink: (token, hash) =>
      storage("admins.redeemLink")(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ id: string }>`UPDATE admins SET password_hash = ${hash}, link_hash = NULL,
          link_expires_at = NULL WHERE link_hash = ${Crypto.sha256Hex(token)} AND link_expires_at > ${now} RETURNING id`
        for (const { id } of rows) yield* sql`DELETE FROM admin_sessions WHERE admin_id = ${id}`
        return rows.length > 0
      })),
    openSession: (admin) =>
      storage("admins.openSession")(Effect.gen(function*() {
        const token = newToken()
        const now = yield* Clock.currentTimeMillis
        // Sessions that expired are removed here, on the rare write, not on every read.
        yield* sql`DELETE FROM admin_sessions WHERE expires_at <= ${now}`
        yield* sql`INSERT INTO admin_sessions ${
          sql.insert({
            token_hash: Crypto.sha256Hex(token),
            admin_id: admin.id,
            org_id: admin.orgId,
            csrf_token: newToken(),
            expires_at: now + SESSION_HOURS * 3_600_000
          })
        }`
        return token
      })),
    findSession: (token) =>
      storage("admins.findSession")(Effect.gen(function*() {
        const found = yield* sessionOf(Crypto.sha256Hex(token))
        const now = yield* Clock.currentTimeMillis
        return Option.flatMap(found, (r) =>
          r.expires_at <= now
            ? Option.none()
            : Option.some<Session>({
              adminId: r.admin_id,
              orgId: r.org_id,
              email: r.email,
              role: roleOf(r.role),
              csrfToken: r.csrf_token,
              timezone: r.timezone
            }))
      })),
    closeSession: (token) =>
      storage("admins.closeSession")(Effect.asVoid(sql`DELETE FROM admin_sessions WHERE token_hash = ${Crypto.sha256Hex(token)}`))
  })
})

/** Built on the SqlClient alone: the console and the `admins` command provide it where they run. */
export const layer: Layer.Layer<AdminStore, never, SqlClient.SqlClient> = Layer.effect(AdminStore, make)
