/**
 * Two-factor sign-in in SQL (both stores; migration 0048): an administrator's TOTP secret, sealed with
 * SecretBox (a copy of the database shows none), the one being set up until a code confirms it, the last
 * time step accepted (each code works once), their recovery codes (SHA-256 hashes, each used once: the
 * update that uses one is the check), the sign-ins waiting for their second step, and each organisation's
 * policy. A waiting sign-in is a token of its own, in its own table and cookie: AdminStore's sessions never
 * see it, so it opens no page.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Crypto, type StorageError } from "@parley/core/internal"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"
import { SecretBox, type SecretKeyError } from "../store/SecretBox.js"
import { type Admin, normalEmail } from "./AdminStore.js"
import { newTotpSecret } from "./TotpCodes.js"

/** How long the second step (or the forced set-up) may take after the right password. */
export const STEP_MINUTES = 10

/** What a waiting sign-in is waiting for: a code, or the set-up the organisation requires. */
export type StepPurpose = "code" | "enrol"

const isPurpose = (value: string): value is StepPurpose => value === "code" || value === "enrol"

export interface SignInStep {
  readonly adminId: string
  readonly orgId: string
  readonly email: string
  readonly purpose: StepPurpose
}

export interface TwoFactorStatus {
  /** When the administrator confirmed their authenticator; null when two-factor is off for them. */
  readonly enrolledAt: string | null
  readonly recoveryCodesLeft: number
  /** Whether their organisation requires it of everyone. */
  readonly required: boolean
}

type Failure = StorageError | SecretKeyError

export interface TwoFactorStoreService {
  readonly status: (adminId: string, orgId: string) => Effect.Effect<TwoFactorStatus, StorageError>
  readonly isRequired: (orgId: string) => Effect.Effect<boolean, StorageError>
  /**
   * Sets the organisation's policy. Requiring it ends the sessions of its administrators without two-factor:
   * they sign in again and set it up before anything else.
   */
  readonly setRequired: (orgId: string, required: boolean) => Effect.Effect<void, StorageError>
  /** The secret being set up, made now when there is none. */
  readonly pendingSecret: (adminId: string) => Effect.Effect<string, Failure>
  /**
   * Confirms the secret being set up (its code's step is the last used) and stores the recovery codes'
   * hashes in place of any earlier ones. False when nothing was being set up, or two-factor is on already
   * (replacing an authenticator takes turning it off first, with a current code).
   */
  readonly activate: (adminId: string, step: number, recoveryHashes: ReadonlyArray<string>) => Effect.Effect<boolean, StorageError>
  /** The confirmed secret, when two-factor is on. */
  readonly activeSecret: (adminId: string) => Effect.Effect<Option.Option<string>, Failure>
  /** Records `step` as used; false when it, or a later one, was used already (a replayed code). */
  readonly acceptStep: (adminId: string, step: number) => Effect.Effect<boolean, StorageError>
  readonly replaceRecoveryCodes: (adminId: string, hashes: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  /** Uses up the recovery code; false when it is not one of theirs or was used. */
  readonly useRecoveryCode: (adminId: string, hash: string) => Effect.Effect<boolean, StorageError>
  /** Turns two-factor off for the administrator; false (nothing changed) when their organisation requires it. */
  readonly disable: (adminId: string, orgId: string) => Effect.Effect<boolean, StorageError>
  /**
   * For an administrator locked out (`parley admins reset-2fa`): two-factor off, recovery codes gone, sessions
   * and waiting sign-ins ended. False when the organisation has no such administrator.
   */
  readonly reset: (orgId: string, email: string) => Effect.Effect<boolean, StorageError>
  /** A waiting sign-in for the administrator; its cookie token is returned once. */
  readonly openStep: (admin: Admin, purpose: StepPurpose) => Effect.Effect<string, StorageError>
  readonly findStep: (token: string) => Effect.Effect<Option.Option<SignInStep>, StorageError>
  readonly closeStep: (token: string) => Effect.Effect<void, StorageError>
}

export class TwoFactorStore extends Context.Tag("@parley/server/admin/TwoFactorStore")<TwoFactorStore, TwoFactorStoreService>() {}

const StepRow = Schema.Struct({
  admin_id: Schema.String,
  org_id: Schema.String,
  email: Schema.String,
  purpose: Schema.String,
  expires_at: DbInt
})

const SecretRow = Schema.Struct({ secret: NullableString })

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const box = yield* SecretBox
  const stepOf = SqlSchema.findOne({
    Request: Schema.String,
    Result: StepRow,
    execute: (hash) =>
      sql`SELECT s.admin_id, s.org_id, a.email, s.purpose, s.expires_at
          FROM admin_sign_in_steps s JOIN admins a ON a.id = s.admin_id AND a.org_id = s.org_id
          WHERE s.token_hash = ${hash}`
  })
  const active = SqlSchema.findOne({
    Request: Schema.String,
    Result: SecretRow,
    execute: (adminId) => sql`SELECT totp_secret AS secret FROM admins WHERE id = ${adminId}`
  })
  const pending = SqlSchema.findOne({
    Request: Schema.String,
    Result: SecretRow,
    execute: (adminId) => sql`SELECT totp_pending_secret AS secret FROM admins WHERE id = ${adminId}`
  })
  const opened = (row: Option.Option<typeof SecretRow.Type>) =>
    Option.isSome(row) && row.value.secret !== null ? Effect.map(box.open(row.value.secret), Option.some) : Effect.succeed(Option.none())
  const required = (orgId: string) =>
    Effect.map(
      sql<{ required: number | string }>`SELECT require_two_factor AS required FROM admin_policies WHERE org_id = ${orgId}`,
      (rows) => rows.some((r) => Number(r.required) === 1)
    )
  const insertCodes = (adminId: string, hashes: ReadonlyArray<string>) =>
    Effect.zipRight(
      sql`DELETE FROM admin_recovery_codes WHERE admin_id = ${adminId}`,
      hashes.length === 0 ? Effect.void : Effect.asVoid(
        sql`INSERT INTO admin_recovery_codes ${sql.insert(hashes.map((hash) => ({ admin_id: adminId, code_hash: hash, used_at: null })))}`
      )
    )
  return TwoFactorStore.of({
    status: (adminId, orgId) =>
      storage("twoFactor.status")(Effect.gen(function*() {
        const rows = yield* sql<{ enrolled_at: string | null }>`SELECT totp_enrolled_at AS enrolled_at FROM admins
          WHERE id = ${adminId} AND totp_secret IS NOT NULL`
        const left = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM admin_recovery_codes
          WHERE admin_id = ${adminId} AND used_at IS NULL`
        return {
          enrolledAt: rows[0]?.enrolled_at ?? null,
          recoveryCodesLeft: Number(left[0]?.n ?? 0),
          required: yield* required(orgId)
        }
      })),
    isRequired: (orgId) => storage("twoFactor.isRequired")(required(orgId)),
    setRequired: (orgId, on) =>
      storage("twoFactor.setRequired")(sql.withTransaction(Effect.gen(function*() {
        const at = new Date(yield* Clock.currentTimeMillis).toISOString()
        yield* sql`INSERT INTO admin_policies ${sql.insert({ org_id: orgId, require_two_factor: on ? 1 : 0, changed_at: at })}
          ON CONFLICT (org_id) DO UPDATE SET require_two_factor = ${on ? 1 : 0}, changed_at = ${at}`
        if (on) {
          yield* sql`DELETE FROM admin_sessions WHERE org_id = ${orgId} AND admin_id IN
            (SELECT id FROM admins WHERE org_id = ${orgId} AND totp_secret IS NULL)`
        }
      }))),
    pendingSecret: (adminId) =>
      Effect.gen(function*() {
        const found = yield* storage("twoFactor.pendingSecret")(pending(adminId))
        const existing = yield* opened(found)
        if (Option.isSome(existing)) return existing.value
        const secret = newTotpSecret()
        // Two tabs setting up at once: the first secret stored wins, and both show it.
        yield* storage("twoFactor.pendingSecret")(
          sql`UPDATE admins SET totp_pending_secret = ${box.seal(secret)} WHERE id = ${adminId} AND totp_pending_secret IS NULL`
        )
        const stored = yield* opened(yield* storage("twoFactor.pendingSecret")(pending(adminId)))
        return Option.getOrElse(stored, () => secret)
      }),
    activate: (adminId, step, hashes) =>
      storage("twoFactor.activate")(sql.withTransaction(Effect.gen(function*() {
        const at = new Date(yield* Clock.currentTimeMillis).toISOString()
        const rows = yield* sql<{ id: string }>`UPDATE admins SET totp_secret = totp_pending_secret,
          totp_pending_secret = NULL, totp_enrolled_at = ${at}, totp_last_step = ${step}
          WHERE id = ${adminId} AND totp_pending_secret IS NOT NULL AND totp_secret IS NULL RETURNING id`
        if (rows.length === 0) return false
        yield* insertCodes(adminId, hashes)
        return true
      }))),
    activeSecret: (adminId) =>
      Effect.flatMap(storage("twoFactor.activeSecret")(active(adminId)), opened),
    acceptStep: (adminId, step) =>
      storage("twoFactor.acceptStep")(Effect.map(
        sql<{ id: string }>`UPDATE admins SET totp_last_step = ${step}
          WHERE id = ${adminId} AND totp_secret IS NOT NULL AND (totp_last_step IS NULL OR totp_last_step < ${step})
          RETURNING id`,
        (rows) => rows.length > 0
      )),
    replaceRecoveryCodes: (adminId, hashes) =>
      storage("twoFactor.replaceRecoveryCodes")(sql.withTransaction(insertCodes(adminId, hashes))),
    useRecoveryCode: (adminId, hash) =>
      storage("twoFactor.useRecoveryCode")(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ admin_id: string }>`UPDATE admin_recovery_codes SET used_at = ${now}
          WHERE admin_id = ${adminId} AND code_hash = ${hash} AND used_at IS NULL RETURNING admin_id`
        return rows.length > 0
      })),
    disable: (adminId, orgId) =>
      storage("twoFactor.disable")(sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ id: string }>`UPDATE admins SET totp_secret = NULL, totp_pending_secret = NULL,
          totp_enrolled_at = NULL, totp_last_step = NULL
          WHERE id = ${adminId} AND NOT EXISTS
            (SELECT 1 FROM admin_policies WHERE org_id = ${orgId} AND require_two_factor = 1)
          RETURNING id`
        if (rows.length === 0) return false
        yield* sql`DELETE FROM admin_recovery_codes WHERE admin_id = ${adminId}`
        return true
      }))),
    reset: (orgId, email) =>
      storage("twoFactor.reset")(sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ id: string }>`UPDATE admins SET totp_secret = NULL, totp_pending_secret = NULL,
          totp_enrolled_at = NULL, totp_last_step = NULL
          WHERE org_id = ${orgId} AND email = ${normalEmail(email)} RETURNING id`
        for (const { id } of rows) {
          yield* sql`DELETE FROM admin_recovery_codes WHERE admin_id = ${id}`
          yield* sql`DELETE FROM admin_sessions WHERE admin_id = ${id}`
          yield* sql`DELETE FROM admin_sign_in_steps WHERE admin_id = ${id}`
        }
        return rows.length > 0
      }))),
    openStep: (admin, purpose) =>
      storage("twoFactor.openStep")(Effect.gen(function*() {
        const token = Crypto.randomBase62(32, 43)
        const now = yield* Clock.currentTimeMillis
        // Steps that expired are removed here, on the rare write, not on every read.
        yield* sql`DELETE FROM admin_sign_in_steps WHERE expires_at <= ${now}`
        yield* sql`INSERT INTO admin_sign_in_steps ${
          sql.insert({
            token_hash: Crypto.sha256Hex(token),
            admin_id: admin.id,
            org_id: admin.orgId,
            purpose,
            expires_at: now + STEP_MINUTES * 60_000
          })
        }`
        return token
      })),
    findStep: (token) =>
      storage("twoFactor.findStep")(Effect.gen(function*() {
        const found = yield* stepOf(Crypto.sha256Hex(token))
        const now = yield* Clock.currentTimeMillis
        return Option.flatMap(found, (r) =>
          r.expires_at > now && isPurpose(r.purpose)
            ? Option.some<SignInStep>({ adminId: r.admin_id, orgId: r.org_id, email: r.email, purpose: r.purpose })
            : Option.none())
      })),
    closeStep: (token) =>
      storage("twoFactor.closeStep")(Effect.asVoid(sql`DELETE FROM admin_sign_in_steps WHERE token_hash = ${Crypto.sha256Hex(token)}`))
  })
})

export const layer: Layer.Layer<TwoFactorStore, never, SqlClient.SqlClient | SecretBox> = Layer.effect(TwoFactorStore, make)
