/**
 * Webhook endpoints in SQL: where an organisation's signed events are posted
 * (Standard Webhooks), and which event types each one wants (a row per type in
 * `webhook_event_types`, `*` for all, matched when an event's deliveries are
 * written: see SqlEventOutbox). The signing secret is stored, sealed (see
 * SecretBox), because the server signs with it; it is shown once, at creation. One table and one row shape
 * for the API's endpoints (the core's WebhookEndpointStore) and the CLI's.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { EnabledEvent, type StorageError, WebhookEndpoints, WebhookEndpointStore } from "@parley/core/internal"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { NullableString, storage } from "./rows.js"
import * as SecretBox from "./SecretBox.js"

export type WebhookRow = WebhookEndpointStore.WebhookEndpointRow

export interface WebhooksService extends WebhookEndpointStore.WebhookEndpointStoreService {
  /** By id alone: for the administrator's CLI, which is not bound to an organisation. */
  readonly get: (id: string) => Effect.Effect<Option.Option<WebhookRow>, StorageError>
  /** Marks the endpoint disabled; false when there is no such endpoint or it already was. */
  readonly disable: (id: string, at: string) => Effect.Effect<boolean, StorageError>
  /** Enables it again; events written while it was disabled are not sent. False when there is no such endpoint. */
  readonly enable: (id: string) => Effect.Effect<boolean, StorageError>
  /**
   * Replaces the signing secret; the previous one keeps signing beside it
   * until `previousUntil` (epoch ms), so receivers can switch without a gap.
   */
  readonly rotate: (id: string, secret: string, previousUntil: number) => Effect.Effect<boolean, StorageError>
}

export class Webhooks extends Context.Tag("@parley/server/store/Webhooks")<Webhooks, WebhooksService>() {}

const WebhookDbRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  url: Schema.String,
  secret: Schema.String,
  description: NullableString,
  created_at: Schema.String,
  disabled_at: NullableString,
  disabled_reason: NullableString,
  last_success_at: NullableString
})

const EventTypeRow = Schema.Struct({ webhook_id: Schema.String, type: EnabledEvent })

const COLUMNS = "id, org_id, url, secret, description, created_at, disabled_at, disabled_reason, last_success_at"

const toWebhook = (r: typeof WebhookDbRow.Type, types: ReadonlyArray<typeof EventTypeRow.Type>): WebhookRow => ({
  id: r.id,
  orgId: r.org_id,
  url: r.url,
  secret: r.secret,
  enabledEvents: WebhookEndpoints.normalisedEvents(types.filter((t) => t.webhook_id === r.id).map((t) => t.type)),
  description: r.description,
  createdAt: r.created_at,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  lastSuccessAt: r.last_success_at
})

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal(COLUMNS)
  const byId = SqlSchema.findOne({
    Request: Schema.String,
    Result: WebhookDbRow,
    execute: (id) => sql`SELECT ${columns} FROM webhooks WHERE id = ${id}`
  })
  const byOrg = SqlSchema.findAll({
    Request: Schema.String,
    Result: WebhookDbRow,
    execute: (orgId) => sql`SELECT ${columns} FROM webhooks WHERE org_id = ${orgId} ORDER BY created_at, id`
  })
  const typesOf = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: EventTypeRow,
    execute: (ids) => sql`SELECT webhook_id, type FROM webhook_event_types WHERE ${sql.in("webhook_id", ids)}`
  })
  const box = yield* SecretBox.SecretBox
  // Every stored secret was opened once at start (resealSecrets): one that no longer opens is a defect.
  const opened = (r: typeof WebhookDbRow.Type) => Effect.map(Effect.orDie(box.open(r.secret)), (secret) => ({ ...r, secret }))
  const withTypes = (rows: ReadonlyArray<typeof WebhookDbRow.Type>) =>
    rows.length === 0
      ? Effect.succeed([])
      : Effect.flatMap(typesOf(rows.map((r) => r.id)), (types) =>
        Effect.forEach(rows, (r) => Effect.map(opened(r), (plain) => toWebhook(plain, types))))
  const one = (found: Option.Option<typeof WebhookDbRow.Type>) =>
    Option.isNone(found)
      ? Effect.succeed(Option.none<WebhookRow>())
      : Effect.map(withTypes([found.value]), (rows) => Option.fromNullable(rows[0]))
  return Webhooks.of({
    insert: (w) =>
      storage("webhooks.insert")(sql.withTransaction(Effect.zipRight(
        sql`INSERT INTO webhooks ${
          sql.insert({
            id: w.id,
            org_id: w.orgId,
            url: w.url,
            secret: box.seal(w.secret),
            description: w.description,
            created_at: w.createdAt,
            disabled_at: w.disabledAt,
            disabled_reason: w.disabledReason
          })
        }`,
        sql`INSERT INTO webhook_event_types ${sql.insert(w.enabledEvents.map((type) => ({ webhook_id: w.id, type })))}`
      ))),
    get: (id) => storage("webhooks.get")(Effect.flatMap(byId(id), one)),
    find: (orgId, id) =>
      storage("webhooks.find")(Effect.flatMap(byId(id), (found) => one(Option.filter(found, (r) => r.org_id === orgId)))),
    list: (orgId) => storage("webhooks.list")(Effect.flatMap(byOrg(orgId), withTypes)),
    remove: (orgId, id) =>
      storage("webhooks.remove")(sql.withTransaction(Effect.gen(function*() {
        const removed = yield* sql`DELETE FROM webhooks WHERE id = ${id} AND org_id = ${orgId} RETURNING id`
        if (removed.length === 0) return false
        // What was still owed to it (and what it was sent) means nothing without the endpoint.
        yield* sql`DELETE FROM webhook_deliveries WHERE webhook_id = ${id}`
        yield* sql`DELETE FROM webhook_event_types WHERE webhook_id = ${id}`
        return true
      }))),
    disable: (id, at) =>
      storage("webhooks.disable")(
        Effect.map(
          sql`UPDATE webhooks SET disabled_at = ${at}, disabled_reason = 'Disabled by an administrator.'
              WHERE id = ${id} AND disabled_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )
      ),
    enable: (id) =>
      storage("webhooks.enable")(
        Effect.map(
          sql`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL WHERE id = ${id} RETURNING id`,
          (rows) => rows.length > 0
        )
      ),
    rotate: (id, secret, previousUntil) =>
      storage("webhooks.rotate")(
        Effect.map(
          sql`UPDATE webhooks SET previous_secret = secret, previous_secret_until = ${previousUntil},
              secret = ${box.seal(secret)} WHERE id = ${id} RETURNING id`,
          (rows) => rows.length > 0
        )
      )
  })
})

/** The CLI's service and the core's port, one implementation. */
export const layer = Layer.effectContext(
  Effect.map(make, (service) =>
    Context.make(Webhooks, service).pipe(Context.add(WebhookEndpointStore.WebhookEndpointStore, service)))
)
