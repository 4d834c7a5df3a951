/**
 * Webhook endpoints in SQL: where an organisation's signed events are posted
 * (Standard Webhooks). The signing secret is stored because the server signs
 * with it; it is shown to the administrator once, at creation.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { StorageError } from "@parley/core"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { NullableString, storage } from "./rows.js"

export interface WebhookRow {
  /** `wh_…` */
  readonly id: string
  readonly orgId: string
  readonly url: string
  /** `whsec_` + base64 of 24 random bytes. */
  readonly secret: string
  readonly createdAt: string
  readonly disabledAt: string | null
  /** Why delivery stopped: a 410 from the endpoint, or a retry schedule spent. */
  readonly disabledReason: string | null
  readonly lastSuccessAt: string | null
}

export interface WebhooksService {
  readonly insert: (row: WebhookRow) => Effect.Effect<void, StorageError>
  readonly get: (id: string) => Effect.Effect<Option.Option<WebhookRow>, StorageError>
  /** An organisation's endpoints, enabled and disabled, oldest first. */
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<WebhookRow>, StorageError>
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
  created_at: Schema.String,
  disabled_at: NullableString,
  disabled_reason: NullableString,
  last_success_at: NullableString
})

const toWebhook = (r: typeof WebhookDbRow.Type): WebhookRow => ({
  id: r.id,
  orgId: r.org_id,
  url: r.url,
  secret: r.secret,
  createdAt: r.created_at,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  lastSuccessAt: r.last_success_at
})

export const layer = Layer.effect(
  Webhooks,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: WebhookDbRow,
      execute: (id) => sql`SELECT * FROM webhooks WHERE id = ${id}`
    })
    const byOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: WebhookDbRow,
      execute: (orgId) => sql`SELECT * FROM webhooks WHERE org_id = ${orgId} ORDER BY created_at, id`
    })
    return Webhooks.of({
      insert: (w) =>
        storage("webhooks.insert")(sql`INSERT INTO webhooks ${
          sql.insert({
            id: w.id,
            org_id: w.orgId,
            url: w.url,
            secret: w.secret,
            created_at: w.createdAt,
            disabled_at: w.disabledAt,
            disabled_reason: w.disabledReason
          })
        }`),
      get: (id) => storage("webhooks.get")(Effect.map(byId(id), Option.map(toWebhook))),
      list: (orgId) => storage("webhooks.list")(Effect.map(byOrg(orgId), (rows) => rows.map(toWebhook))),
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
                secret = ${secret} WHERE id = ${id} RETURNING id`,
            (rows) => rows.length > 0
          )
        )
    })
  })
)
