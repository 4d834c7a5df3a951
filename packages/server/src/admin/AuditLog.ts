/**
 * The audit log (issue 33): who did what in an organisation, when, and from where — the console's sign-ins
 * and every change made in it, and the changes made with the `parley` CLI. Entries are appended, never
 * changed: the table refuses updates, and deletes of entries younger than a year (migration 0043). An entry
 * names what was changed (a key's name, an endpoint's URL, an administrator's email), never a secret: the
 * writers pass only fields chosen to be safe (ConsoleAudit), and every value is cut short.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Crypto, type StorageError } from "@parley/core/internal"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"

/** What happened, as stored (`kind`), with the words the page and the CLI show for it. */
export const AUDIT_KINDS = {
  "admin.signed-in": "Signed in",
  "admin.sign-in-failed": "Sign-in failed (wrong password)",
  "admin.signed-out": "Signed out",
  "admin.added": "Administrator added",
  "admin.removed": "Administrator removed",
  "admin.role-changed": "Role changed",
  "key.created": "API key created",
  "key.revoked": "API key revoked",
  "key.rolled": "API key rolled",
  "key.changed": "API key changed",
  "provider.set": "Provider connected or changed",
  "provider.cleared": "Provider removed",
  "crm.connected": "CRM connected",
  "crm.disconnected": "CRM disconnected",
  "crm.consent-started": "CRM consent started",
  "crm.setting-changed": "CRM setting changed",
  "sending-rules.changed": "Sending rules changed",
  "webhook.added": "Webhook endpoint added",
  "webhook.secret-rotated": "Webhook secret rotated",
  "webhook.disabled": "Webhook endpoint disabled",
  "webhook.enabled": "Webhook endpoint enabled",
  "webhook.deleted": "Webhook endpoint deleted",
  "opt-out.added": "Opt-out added",
  "opt-out.removed": "Opt-out removed",
  "admin.two-factor-enrolled": "Two-factor sign-in set up",
  "admin.two-factor-disabled": "Two-factor sign-in turned off",
  "admin.two-factor-failed": "Two-factor code wrong",
  "admin.two-factor-reset": "Two-factor sign-in reset",
  "admin.recovery-codes-regenerated": "Recovery codes regenerated",
  "admin.recovery-code-used": "Recovery code used",
  "admin.password-changed": "Password changed",
  "admin.password-change-failed": "Password change failed (wrong current password)",
  "admin.two-factor-policy-changed": "Two-factor requirement changed"
} as const

export type AuditKind = keyof typeof AUDIT_KINDS

/** The words for a kind; one this release does not know (written by a newer one) shows as stored. */
export const kindLabel = (kind: string): string => (kind in AUDIT_KINDS ? AUDIT_KINDS[kind as AuditKind] : kind)

/** Who acts from the shell: the CLI has no sign-in, so its entries name it rather than a person. */
export const CLI_ACTOR = "cli"

/** Longest value kept per field and per entry: enough to recognise a name or a URL, too little to hold a dump. */
const VALUE_CHARS = 200
const DETAIL_CHARS = 1_000

export interface AuditEntry {
  readonly id: string
  readonly orgId: string
  /** Milliseconds since the epoch. */
  readonly at: number
  /** An administrator's email, `cli`, or an API key's prefix. */
  readonly actor: string
  readonly kind: string
  /** What was acted on (a key, an endpoint, an email), when there is one thing. */
  readonly subject: string | null
  /** The other safe fields, `name=value` separated by `; `. */
  readonly detail: string | null
  /** The client's address (for the console; none from the CLI). */
  readonly address: string | null
}

export interface NewAuditEntry {
  readonly orgId: string
  readonly actor: string
  readonly kind: AuditKind | `console.${string}`
  readonly subject?: string | null | undefined
  readonly details?: ReadonlyArray<readonly [string, string]>
  readonly address?: string | null | undefined
}

export interface AuditQuery {
  readonly actor?: string | undefined
  readonly kind?: string | undefined
  /** The cursor of the last entry already seen (`next` of the previous page). */
  readonly after?: string | undefined
  readonly limit: number
}

export interface AuditPage {
  readonly entries: ReadonlyArray<AuditEntry>
  /** The cursor for the next (older) page; null on the last one. */
  readonly next: string | null
}

export interface AuditLogService {
  readonly record: (entry: NewAuditEntry) => Effect.Effect<void, StorageError>
  /** The organisation's entries, newest first, a page at a time. */
  readonly page: (orgId: string, query: AuditQuery) => Effect.Effect<AuditPage, StorageError>
  /** Everyone who appears in the organisation's log (for the actor filter), at most `limit`. */
  readonly actors: (orgId: string, limit: number) => Effect.Effect<ReadonlyArray<string>, StorageError>
}

export class AuditLog extends Context.Tag("@parley/server/admin/AuditLog")<AuditLog, AuditLogService>() {}

const cut = (value: string, chars: number) => (value.length > chars ? `${value.slice(0, chars - 1)}…` : value)

/** `at.id` of an entry: the position keyset paging continues after. */
const cursorOf = (entry: AuditEntry) => `${entry.at}.${entry.id}`

const parseCursor = (cursor: string): Option.Option<{ readonly at: number; readonly id: string }> => {
  const dot = cursor.indexOf(".")
  const at = Number(cursor.slice(0, dot))
  return dot > 0 && Number.isSafeInteger(at) ? Option.some({ at, id: cursor.slice(dot + 1) }) : Option.none()
}

const Row = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  at: DbInt,
  actor: Schema.String,
  kind: Schema.String,
  subject: NullableString,
  detail: NullableString,
  address: NullableString
})

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal("id, org_id, at, actor, kind, subject, detail, address")
  const Request = Schema.Struct({
    orgId: Schema.String,
    actor: Schema.NullOr(Schema.String),
    kind: Schema.NullOr(Schema.String),
    at: Schema.NullOr(Schema.Number),
    id: Schema.String,
    limit: Schema.Number
  })
  const select = SqlSchema.findAll({
    Request,
    Result: Row,
    execute: (q) => {
      const conditions = [
        sql`org_id = ${q.orgId}`,
        ...(q.actor === null ? [] : [sql`actor = ${q.actor}`]),
        ...(q.kind === null ? [] : [sql`kind = ${q.kind}`]),
        ...(q.at === null ? [] : [sql`(at < ${q.at} OR (at = ${q.at} AND id < ${q.id}))`])
      ]
      return sql`SELECT ${columns} FROM audit_log WHERE ${sql.and(conditions)} ORDER BY at DESC, id DESC LIMIT ${q.limit}`
    }
  })
  return AuditLog.of({
    record: (entry) =>
      storage("audit.record")(Effect.gen(function*() {
        const details = (entry.details ?? [])
          .filter(([, value]) => value !== "")
          .map(([name, value]) => `${name}=${cut(value, VALUE_CHARS)}`)
          .join("; ")
        yield* sql`INSERT INTO audit_log ${
          sql.insert({
            id: Crypto.newId("aud"),
            org_id: entry.orgId,
            at: yield* Clock.currentTimeMillis,
            actor: cut(entry.actor, VALUE_CHARS),
            kind: entry.kind,
            subject: entry.subject === undefined || entry.subject === null ? null : cut(entry.subject, VALUE_CHARS),
            detail: details === "" ? null : cut(details, DETAIL_CHARS),
            address: entry.address ?? null
          })
        }`
      })),
    page: (orgId, query) =>
      storage("audit.page")(Effect.gen(function*() {
        const after = query.after === undefined ? Option.none() : parseCursor(query.after)
        const rows = yield* select({
          orgId,
          actor: query.actor ?? null,
          kind: query.kind ?? null,
          at: Option.isSome(after) ? after.value.at : null,
          id: Option.isSome(after) ? after.value.id : "",
          limit: query.limit + 1
        })
        const entries = rows.slice(0, query.limit).map((r): AuditEntry => ({
          id: r.id,
          orgId: r.org_id,
          at: r.at,
          actor: r.actor,
          kind: r.kind,
          subject: r.subject,
          detail: r.detail,
          address: r.address
        }))
        const last = entries[entries.length - 1]
        return { entries, next: rows.length > query.limit && last !== undefined ? cursorOf(last) : null }
      })),
    actors: (orgId, limit) =>
      storage("audit.actors")(Effect.map(
        sql<{ actor: string }>`SELECT DISTINCT actor FROM audit_log WHERE org_id = ${orgId} ORDER BY actor LIMIT ${limit}`,
        (rows) => rows.map((r) => r.actor)
      ))
  })
})

export const layer: Layer.Layer<AuditLog, never, SqlClient.SqlClient> = Layer.effect(AuditLog, make)
