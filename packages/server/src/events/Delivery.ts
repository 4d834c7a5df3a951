/**
 * Event delivery: posts each pending (event, endpoint) delivery, signed per
 * Standard Webhooks (see the core's Webhooks), and records the outcome.
 * - 2xx: delivered.
 * - 410 Gone: the endpoint asked to stop; it is disabled with that reason.
 * - an address deliveries may not reach (see WebhookPost): the endpoint is
 *   disabled at once, with the reason;
 * - anything else, a timeout (15 s) or a network error: retried on the
 *   schedule, never before the endpoint's Retry-After; when the schedule is
 *   spent the delivery has failed and the endpoint is disabled, with the last
 *   error as the reason (`parley webhooks list` shows it).
 * Deliveries are leased like dispatch work, so each attempt is made by one
 * process, and a process that dies mid-attempt leaves it to be retried.
 */
import { SqlClient } from "@effect/sql"
import { Crypto, type WebhookAddresses, Webhooks } from "@parley/core/internal"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { yieldToEventLoop } from "../dispatch/yieldToEventLoop.js"
import { beat } from "../observability/Health.js"
import { Metrics, type WebhookOutcome } from "../observability/Metrics.js"
import { withStoredParent } from "../observability/TraceLinks.js"
import { DbInt, NullableString, storage } from "../store/rows.js"
import { RowLocks } from "../store/RowLocks.js"
import * as SecretBox from "../store/SecretBox.js"
import { type PostResult, postWebhook } from "./WebhookPost.js"

const BATCH = 50
const CONCURRENCY = 8
const LEASE_MS = 60_000
const TIMEOUT_MS = 15_000

const DueDelivery = Schema.Struct({
  event_id: Schema.String,
  webhook_id: Schema.String,
  attempts: DbInt,
  url: Schema.String,
  secret: Schema.String,
  previous_secret: NullableString,
  previous_secret_until: Schema.NullOr(DbInt),
  payload: Schema.String,
  trace_parent: NullableString
})
type DueDelivery = typeof DueDelivery.Type
const decodeDue = Schema.decodeUnknown(Schema.Array(DueDelivery))

/**
 * One signed post of an event's payload to a URL (Standard Webhooks: `webhook-id`, `-timestamp`, `-signature`
 * with each secret); the delivery worker's attempts and the console's test event both go through it.
 */
export const postSigned = (
  target: { readonly url: string; readonly secrets: ReadonlyArray<string>; readonly eventId: string; readonly payload: string },
  now: number,
  allowed: WebhookAddresses.AllowedNetworks
): Effect.Effect<PostResult> => {
  const timestamp = Math.floor(now / 1000)
  return Effect.promise((signal) =>
    postWebhook(target.url, {
      headers: {
        "content-type": "application/json",
        "user-agent": "Parley-Webhooks/1",
        "webhook-id": target.eventId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": Webhooks.signatureHeader(target.secrets, target.eventId, timestamp, target.payload)
      },
      body: target.payload,
      allowed,
      timeoutMs: TIMEOUT_MS,
      signal
    })
  )
}

const attempt = (
  delivery: DueDelivery,
  now: number,
  allowed: WebhookAddresses.AllowedNetworks
): Effect.Effect<PostResult> => {
  const secrets = delivery.previous_secret !== null && (delivery.previous_secret_until ?? 0) > now
    ? [delivery.secret, delivery.previous_secret]
    : [delivery.secret]
  return postSigned({ url: delivery.url, secrets, eventId: delivery.event_id, payload: delivery.payload }, now, allowed)
}

export const DeliveryLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ServerConfig
    const worker = Crypto.newId("delivery")
    // On Postgres replicas claim concurrently: each skips the deliveries another is claiming.
    const { skipLocked } = yield* RowLocks
    const box = yield* SecretBox.SecretBox
    const metrics = yield* Effect.serviceOption(Metrics)
    const counted = (outcome: WebhookOutcome) =>
      Effect.sync(() => {
        if (Option.isSome(metrics)) metrics.value.webhookDelivery(outcome)
      })

    const claim = (now: number) =>
      Effect.gen(function*() {
        yield* sql`UPDATE webhook_deliveries SET lease_owner = ${worker}, lease_until = ${now + LEASE_MS}
          WHERE (event_id, webhook_id) IN (
            SELECT event_id, webhook_id FROM webhook_deliveries
            WHERE state = 'pending' AND next_attempt_at <= ${now}
              AND (lease_until IS NULL OR lease_until <= ${now})
              AND webhook_id IN (SELECT id FROM webhooks WHERE disabled_at IS NULL)
            ORDER BY next_attempt_at LIMIT ${BATCH} ${skipLocked}
          )`
        const due = yield* decodeDue(
          yield* sql`SELECT d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret,
                            w.previous_secret_until, e.payload, e.trace_parent
                     FROM webhook_deliveries d
                     JOIN webhooks w ON w.id = d.webhook_id
                     JOIN events e ON e.id = d.event_id
                     WHERE d.lease_owner = ${worker} AND d.state = 'pending' AND d.lease_until > ${now}`
        )
        // Secrets are stored sealed (SecretBox); they exist in the clear only while signing.
        return yield* Effect.forEach(due, (d) =>
          Effect.gen(function*() {
            const secret = yield* Effect.orDie(box.open(d.secret))
            const previous = d.previous_secret === null ? null : yield* Effect.orDie(box.open(d.previous_secret))
            return { ...d, secret, previous_secret: previous }
          }))
      })

    const disable = (webhookId: string, reason: string, at: string) =>
      sql`UPDATE webhooks SET disabled_at = ${at}, disabled_reason = ${reason}
          WHERE id = ${webhookId} AND disabled_at IS NULL`

    const record = (delivery: DueDelivery, result: PostResult, now: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const at = new Date(now).toISOString()
        const attempts = delivery.attempts + 1
        const key = sql`event_id = ${delivery.event_id} AND webhook_id = ${delivery.webhook_id} AND lease_owner = ${worker}`
        const status = result._tag === "Answered" ? result.status : null
        const error = result._tag === "Answered" ? `HTTP ${result.status}` : result.reason
        if (status !== null && status >= 200 && status < 300) {
          yield* sql`UPDATE webhook_deliveries SET state = 'delivered', attempts = ${attempts}, last_status = ${status},
                     last_error = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ${at} WHERE ${key}`
          yield* sql`UPDATE webhooks SET last_success_at = ${at} WHERE id = ${delivery.webhook_id}`
          return yield* counted("delivered")
        }
        if (result._tag === "Refused") {
          // The address is not one deliveries may reach: retrying would not change that, so the endpoint stops
          // at once and says why (`parley webhooks list`); an operator can re-enable it after fixing the cause.
          yield* sql`UPDATE webhook_deliveries SET state = 'failed', attempts = ${attempts}, last_status = NULL,
                     last_error = ${error}, lease_owner = NULL, lease_until = NULL, updated_at = ${at} WHERE ${key}`
          yield* disable(delivery.webhook_id, `Refused to deliver on ${at}: ${result.reason}.`, at)
          return
        }
        if (status === 410) {
          yield* sql`UPDATE webhook_deliveries SET state = 'failed', attempts = ${attempts}, last_status = 410,
                     last_error = ${error}, lease_owner = NULL, lease_until = NULL, updated_at = ${at} WHERE ${key}`
          yield* disable(delivery.webhook_id, `The endpoint answered 410 Gone on ${at}.`, at)
          return yield* counted("gone")
        }
        const next = Webhooks.nextAttemptAt(attempts, now, {
          retryAfterMs: result._tag === "Answered" ? Webhooks.parseRetryAfter(result.retryAfter, now) : undefined,
          scale: config.webhookRetryScale
        })
        if (next === null) {
          yield* sql`UPDATE webhook_deliveries SET state = 'failed', attempts = ${attempts}, last_status = ${status},
                     last_error = ${error}, lease_owner = NULL, lease_until = NULL, updated_at = ${at} WHERE ${key}`
          yield* disable(
            delivery.webhook_id,
            `Deliveries kept failing for the whole retry schedule (${attempts} attempts); last: ${error}.`,
            at
          )
          return yield* counted("failed")
        }
        yield* sql`UPDATE webhook_deliveries SET attempts = ${attempts}, next_attempt_at = ${next},
                   last_status = ${status}, last_error = ${error}, lease_owner = NULL, lease_until = NULL,
                   updated_at = ${at} WHERE ${key}`
        yield* counted("retry")
      }))

    const round = Effect.gen(function*() {
      const due = yield* claim(yield* Clock.currentTimeMillis)
      yield* Effect.forEach(
        due,
        (delivery) =>
          Effect.gen(function*() {
            const result = yield* attempt(delivery, yield* Clock.currentTimeMillis, config.webhookAllowedNetworks)
            yield* record(delivery, result, yield* Clock.currentTimeMillis)
          }).pipe(
            // A child of the request that created the action the event is about, while traces are exported.
            withStoredParent("webhook.deliver", delivery.trace_parent, {
              "parley.event_id": delivery.event_id,
              "parley.webhook_id": delivery.webhook_id,
              "parley.attempt": delivery.attempts + 1
            })
          ),
        { concurrency: CONCURRENCY, discard: true }
      )
      return due.length
    }).pipe(storage("delivery.round"))

    const loop = Effect.gen(function*() {
      while (true) {
        yield* beat("delivery")
        const count = yield* round.pipe(
          Effect.catchAll((error) => Effect.as(Effect.logWarning(`event delivery round failed: ${error.operation}`), 0))
        )
        if (count < BATCH) yield* Effect.sleep(config.dispatchPollMs * 2)
        else yield* yieldToEventLoop
      }
    })

    yield* Effect.forkScoped(loop)
  })
)
