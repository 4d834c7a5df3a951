/**
 * Managing an organisation's webhook endpoints as its administrator, in one place for `parley webhooks`
 * and the console's Events page: the URL rules and event normalisation are the core's (the API's too),
 * a new endpoint's signing secret is made once and answered once, and a rotated secret keeps the
 * previous one signing for ROTATION_OVERLAP_MS. Also the recent deliveries of an endpoint, for display.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Crypto, type EnabledEvent, type StorageError, WebhookEndpoints, Webhooks as Signing } from "@parley/core/internal"
import { Clock, Effect, Either, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"
import { type WebhookRow, Webhooks } from "../store/SqlWebhooks.js"

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

/** A new endpoint (its secret included, to be shown once), or why the URL cannot be one. */
export const addEndpoint = (
  orgId: string,
  url: string,
  events: ReadonlyArray<EnabledEvent>,
  description: string | null
): Effect.Effect<Either.Either<WebhookRow, string>, StorageError, Webhooks> =>
  Effect.gen(function*() {
    const checked = WebhookEndpoints.endpointUrl(url)
    if (Either.isLeft(checked)) return Either.left(checked.left)
    const row: WebhookRow = {
      id: Crypto.newId("wh"),
      orgId,
      url: checked.right,
      secret: Signing.newSecret(),
      enabledEvents: WebhookEndpoints.normalisedEvents(events),
      description,
      createdAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
      disabledAt: null,
      disabledReason: null,
      lastSuccessAt: null
    }
    yield* (yield* Webhooks).insert(row)
    return Either.right(row)
  })

/** A new signing secret (answered once) and until when the previous one still signs. */
export const rotateSecret = (id: string) =>
  Effect.gen(function*() {
    const secret = Signing.newSecret()
    const until = (yield* Clock.currentTimeMillis) + ROTATION_OVERLAP_MS
    yield* (yield* Webhooks).rotate(id, secret, until)
    return { secret, previousSecretValidUntil: new Date(until).toISOString() }
  })

export interface DeliveryView {
  readonly eventId: string
  readonly type: string
  readonly state: string
  readonly attempts: number
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: string | null
  readonly updatedAt: string
}

const DeliveryRow = Schema.Struct({
  event_id: Schema.String,
  type: Schema.String,
  state: Schema.String,
  attempts: DbInt,
  last_status: Schema.NullOr(DbInt),
  last_error: NullableString,
  next_attempt_at: Schema.NullOr(DbInt),
  updated_at: Schema.String
})

/** The endpoint's latest deliveries, newest event first; scoped by organisation through the endpoint. */
export const recentDeliveries = (orgId: string, webhookId: string, limit: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: DeliveryRow,
      execute: () =>
        sql`SELECT d.event_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.updated_at
            FROM webhook_deliveries d
            JOIN webhooks w ON w.id = d.webhook_id AND w.org_id = ${orgId}
            JOIN events e ON e.id = d.event_id
            WHERE d.webhook_id = ${webhookId}
            ORDER BY e.seq DESC LIMIT ${limit}`
    })(undefined)
    return rows.map((r): DeliveryView => ({
      eventId: r.event_id,
      type: r.type,
      state: r.state,
      attempts: r.attempts,
      lastStatus: r.last_status,
      lastError: r.last_error,
      nextAttemptAt: r.state === "pending" && r.next_attempt_at !== null ? new Date(r.next_attempt_at).toISOString() : null,
      updatedAt: r.updated_at
    }))
  }).pipe(storage("console.recentDeliveries"))
