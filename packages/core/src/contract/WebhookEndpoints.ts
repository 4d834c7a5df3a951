/**
 * Webhook endpoints as the API manages them (Stripe's model): where an
 * organisation's signed events are posted, and which kinds of event each one
 * wants. The signing secret is answered once, by the creation; no read shows it.
 */
import { Schema } from "effect"
import { EventType } from "./Events.js"
import { maxCharacters, Timestamp } from "./Primitives.js"

/** Every kind of event, present and future: what endpoints made before event filters (and by default in the CLI) receive. */
export const ALL_EVENTS = "*"

export const EnabledEvent = Schema.Union(EventType, Schema.Literal(ALL_EVENTS)).annotations({
  identifier: "EnabledEvent",
  description: "An event type, or `*` for every type (including types added later)."
})
export type EnabledEvent = typeof EnabledEvent.Type

/**
 * A non-empty list of event types, or `["*"]`. `*` beside named types would make them meaningless, so it is
 * refused rather than guessed at; repeated types are merged.
 */
export const EnabledEvents = Schema.Array(EnabledEvent).pipe(
  Schema.minItems(1, { message: () => "name at least one event type, or [\"*\"] for every type" }),
  Schema.maxItems(32),
  Schema.filter((events) =>
    events.includes(ALL_EVENTS) && events.length > 1
      ? "\"*\" already means every event type; send it alone"
      : true
  )
).annotations({
  identifier: "EnabledEvents",
  description: "The event types posted to the endpoint, or `[\"*\"]` for all of them."
})

/** The longest URL accepted: what browsers and proxies reliably carry. */
export const MAX_URL_LENGTH = 2048

export const CreateWebhookEndpointRequest = Schema.Struct({
  url: Schema.String.pipe(Schema.minLength(1), maxCharacters(MAX_URL_LENGTH)).annotations({
    description: "Absolute http:// or https:// URL that receives the events (no user:password part)."
  }),
  enabledEvents: EnabledEvents,
  description: Schema.optional(Schema.String.pipe(maxCharacters(256))).annotations({
    description: "A note for people: what this endpoint is for (e.g. the n8n workflow)."
  })
}).annotations({ identifier: "CreateWebhookEndpointRequest" })
export type CreateWebhookEndpointRequest = typeof CreateWebhookEndpointRequest.Type

export const WebhookEndpointId = Schema.String.pipe(Schema.minLength(1), maxCharacters(64)).annotations({
  identifier: "WebhookEndpointId",
  description: "`wh_…` id from POST or GET /webhook-endpoints.",
  examples: ["wh_4Zb2kQ9xTq1mN7cV"]
})

export class WebhookEndpoint extends Schema.Class<WebhookEndpoint>("WebhookEndpoint")({
  id: WebhookEndpointId,
  url: Schema.String,
  enabledEvents: Schema.Array(EnabledEvent),
  description: Schema.NullOr(Schema.String),
  status: Schema.Literal("enabled", "disabled").annotations({
    description: "`disabled` after a 410 Gone, a spent retry schedule or an administrator's `parley webhooks disable`."
  }),
  disabledReason: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  lastSuccessAt: Schema.NullOr(Timestamp)
}) {}

/** The creation's answer: the endpoint and, this once, its signing secret. */
export class CreatedWebhookEndpoint extends WebhookEndpoint.extend<CreatedWebhookEndpoint>("CreatedWebhookEndpoint")({
  secret: Schema.String.annotations({
    description: "`whsec_…` Standard Webhooks signing secret. Shown only in this response: store it now."
  })
}) {}

export const WebhookEndpointList = Schema.Struct({ items: Schema.Array(WebhookEndpoint) }).annotations({
  identifier: "WebhookEndpointList"
})

export class WebhookEndpointDeletion extends Schema.Class<WebhookEndpointDeletion>("WebhookEndpointDeletion")({
  id: WebhookEndpointId,
  deleted: Schema.Literal(true)
}) {}
