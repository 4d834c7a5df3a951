/**
 * Managing an organisation's webhook endpoints as its administrator, in one place for `parley webhooks`
 * and the console's Events page: the URL rules and event normalisation are the core's (the API's too),
 * a new endpoint's signing secret is made once and answered once, and a rotated secret keeps the
 * previous one signing for ROTATION_OVERLAP_MS. Also an endpoint's deliveries page by page, one event with its
 * deliveries, and sending an event again, for the console's Events page.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ActionRecords,
  ActionStore,
  Crypto,
  type EnabledEvent,
  type StorageError,
  type WebhookAddresses,
  WebhookEndpoints,
  Webhooks as Signing
} from "@parley/core/internal"
import { Clock, Effect, Either, Option, Schema } from "effect"
import { postSigned } from "../events/Delivery.js"
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
  /** The event's place in the organisation's events: the keyset of the pages. */
  readonly seq: string
  readonly eventId: string
  readonly webhookId: string
  readonly type: string
  readonly state: string
  readonly attempts: number
  readonly lastStatus: number | null
  /** Why the last attempt failed (`HTTP 500`, a timeout, a refused address), as the delivery worker stored it. */
  readonly lastError: string | null
  readonly nextAttemptAt: string | null
  readonly updatedAt: string
}

const DeliveryRow = Schema.Struct({
  seq: Schema.Union(Schema.String, Schema.Number),
  event_id: Schema.String,
  webhook_id: Schema.String,
  type: Schema.String,
  state: Schema.String,
  attempts: DbInt,
  last_status: Schema.NullOr(DbInt),
  last_error: NullableString,
  next_attempt_at: Schema.NullOr(DbInt),
  updated_at: Schema.String
})

const toView = (r: typeof DeliveryRow.Type): DeliveryView => ({
  seq: String(r.seq),
  eventId: r.event_id,
  webhookId: r.webhook_id,
  type: r.type,
  state: r.state,
  attempts: r.attempts,
  lastStatus: r.last_status,
  lastError: r.last_error,
  nextAttemptAt: r.state === "pending" && r.next_attempt_at !== null ? new Date(r.next_attempt_at).toISOString() : null,
  updatedAt: r.updated_at
})

/** Whether a page's starting point from a query string is an event sequence number (a BIGINT). */
export const isSeq = (value: string): boolean => /^[1-9][0-9]{0,17}$/.test(value)

/**
 * A page of the endpoint's deliveries, newest event first, starting after `beforeSeq`: the organisation's events
 * walked backwards on `events_by_org` (org_id, seq), each probing the deliveries' primary key (event_id,
 * webhook_id). A page reads about as many rows as it shows for an endpoint that wants most events, whatever the
 * history's size; CROSS JOIN keeps SQLite's planner on that order (on Postgres it is an inner join). Scoped by
 * organisation through the events; the caller has checked that the endpoint is the organisation's.
 */
export const deliveriesPage = (orgId: string, webhookId: string, beforeSeq: string | null, limit: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: DeliveryRow,
      execute: () =>
        sql`SELECT e.seq, d.event_id, d.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error,
                   d.next_attempt_at, d.updated_at
            FROM events e CROSS JOIN webhook_deliveries d
            WHERE e.org_id = ${orgId} ${beforeSeq === null ? sql`` : sql`AND e.seq < ${Number(beforeSeq)}`}
              AND d.event_id = e.id AND d.webhook_id = ${webhookId}
            ORDER BY e.seq DESC LIMIT ${limit}`
    })(undefined)
    return rows.map(toView)
  }).pipe(storage("console.deliveriesPage"))

const EventRow = Schema.Struct({ id: Schema.String, type: Schema.String, timestamp: Schema.String, payload: Schema.String })

/** One event of the organisation (its payload as delivered) and its deliveries to each endpoint. */
export const eventWithDeliveries = (orgId: string, eventId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const event = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: EventRow,
      execute: () => sql`SELECT id, type, timestamp, payload FROM events WHERE id = ${eventId} AND org_id = ${orgId}`
    })(undefined)
    const found = event[0]
    if (found === undefined) return Option.none()
    const deliveries = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: DeliveryRow,
      execute: () =>
        sql`SELECT e.seq, d.event_id, d.webhook_id, e.type, d.state, d.attempts, d.last_status, d.last_error,
                   d.next_attempt_at, d.updated_at
            FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
            JOIN webhooks w ON w.id = d.webhook_id AND w.org_id = ${orgId}
            WHERE d.event_id = ${found.id} ORDER BY d.webhook_id`
    })(undefined)
    return Option.some({ event: found, deliveries: deliveries.map(toView) })
  }).pipe(storage("console.eventWithDeliveries"))

/**
 * Sends the event to the endpoint again: its delivery is due now, with a fresh retry schedule (attempts 0), and
 * the delivery worker posts it on its next round, signed as any delivery. A delivery being attempted right now
 * (leased) is left to finish. False when the organisation has no such delivery or it is being attempted.
 */
export const resendDelivery = (orgId: string, eventId: string, webhookId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    const changed = yield* sql`UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${now},
        updated_at = ${new Date(now).toISOString()}
      WHERE event_id = ${eventId} AND webhook_id = ${webhookId}
        AND (lease_until IS NULL OR lease_until <= ${now})
        AND webhook_id IN (SELECT id FROM webhooks WHERE org_id = ${orgId})
      RETURNING event_id`
    return changed.length > 0
  }).pipe(storage("console.resendDelivery"))

/** The type of the test event: the commonest event, so a receiver's usual path is what gets tested. */
const TEST_EVENT_TYPE = "message.delivered"

/**
 * "Send test event": a `message.delivered` event about a made-up text (id `0`, text saying it is a test), signed
 * with the endpoint's current secret and posted once, now, as deliveries are. Not kept: it is no delivery, owes
 * no retry and changes no endpoint state. Answers what was sent and what the endpoint answered.
 */
export const sendTestEvent = (orgId: string, endpoint: WebhookRow, allowed: WebhookAddresses.AllowedNetworks) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const timestamp = new Date(now).toISOString()
    const made: ActionStore.Action = {
      id: "0",
      orgId,
      kind: "message",
      type: "SMS",
      direction: "Outbound",
      status: "Delivered",
      line: "+14155550100",
      counterpart: "+14155550101",
      fromNumberSid: null,
      body: "A test event from the Parley console.",
      mediaUrls: [],
      ...ActionStore.NO_SENDING_DETAILS,
      read: null,
      at: timestamp,
      scheduledFor: null,
      dueAt: now,
      owner: null,
      ...ActionStore.UNTOUCHED,
      modified: timestamp
    }
    const eventId = Crypto.newId("evt")
    const payload = JSON.stringify({ type: TEST_EVENT_TYPE, timestamp, data: ActionRecords.toActionRecord(made) })
    const result = yield* postSigned({ url: endpoint.url, secrets: [endpoint.secret], eventId, payload }, now, allowed)
    return { type: TEST_EVENT_TYPE, eventId, payload, result }
  })
