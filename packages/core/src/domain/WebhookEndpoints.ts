/**
 * Webhook endpoint management through the API (Stripe's model): subscribe a
 * URL to event types, list, read, delete. The rules:
 * - an endpoint receives every event of its types in the organisation, so
 *   managing endpoints takes a key without number or bot restrictions (403
 *   RESOURCE_DENIED), and subscribing takes a CRM account that sees every
 *   action (403 CRM_PERMISSION_DENIED): otherwise a restricted key could read,
 *   through events, what its reads hide;
 * - the signing secret is answered by the creation only;
 * - another organisation's endpoint is missing (404), never forbidden.
 */
import { Clock, Context, Effect, Either, Layer, Option } from "effect"
import { CrmPermissionDenied, InvalidRequest, NotFound, ResourceDenied } from "../contract/Errors.js"
import {
  ALL_EVENTS,
  CreatedWebhookEndpoint,
  type CreateWebhookEndpointRequest,
  type EnabledEvent,
  WebhookEndpoint,
  WebhookEndpointDeletion
} from "../contract/WebhookEndpoints.js"
import { EventType } from "../contract/Events.js"
import type { StorageError } from "../ports/StorageError.js"
import { WebhookEndpointStore, type WebhookEndpointRow } from "../ports/WebhookEndpointStore.js"
import type { CallerInfo } from "./Caller.js"
import { newId } from "./Crypto.js"
import * as WebhookAddresses from "./WebhookAddresses.js"
import { newSecret } from "./Webhooks.js"

/** The URL events are posted to, normalised, or why it cannot be one. Shared by the API and the CLI. */
export const endpointUrl = (text: string): Either.Either<string, string> => {
  let parsed: URL
  try {
    parsed = new URL(text.trim())
  } catch {
    return Either.left("must be an http:// or https:// URL, such as https://example.com/parley/events")
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return Either.left(`must be an http:// or https:// URL, not ${parsed.protocol}`)
  }
  if (parsed.hostname === "") return Either.left("must name a host")
  // Listings show the URL to every key with webhooks:read: a password in it would be a secret on display.
  if (parsed.username !== "" || parsed.password !== "") {
    return Either.left("must not carry a user name or password; authenticate deliveries with the signing secret")
  }
  // Addresses that are never a receiver are refused at once; names, and private addresses (which the
  // operator's allow-list may permit), are decided on the address connected to, at each delivery.
  if (WebhookAddresses.classify(parsed.hostname) === "never" || WebhookAddresses.isMetadataName(parsed.hostname)) {
    return Either.left("must not point at a link-local or cloud metadata address")
  }
  return Either.right(parsed.toString())
}

const EVENT_ORDER: ReadonlyArray<string> = [ALL_EVENTS, ...EventType.literals]

/**
 * Repeated types merged, `*` first and then the contract's order: an endpoint's types read the same in the
 * creation's answer, every listing and the CLI, whatever order they were given in.
 */
export const normalisedEvents = (events: ReadonlyArray<EnabledEvent>): ReadonlyArray<EnabledEvent> =>
  [...new Set(events)].sort((a, b) => EVENT_ORDER.indexOf(a) - EVENT_ORDER.indexOf(b))

export const toWebhookEndpoint = (row: WebhookEndpointRow): WebhookEndpoint =>
  WebhookEndpoint.make({
    id: row.id,
    url: row.url,
    enabledEvents: row.enabledEvents,
    description: row.description,
    status: row.disabledAt === null ? "enabled" : "disabled",
    disabledReason: row.disabledReason,
    createdAt: row.createdAt,
    lastSuccessAt: row.lastSuccessAt
  })

/** Whether an endpoint wants events of this type. */
export const wants = (enabledEvents: ReadonlyArray<string>, type: string): boolean =>
  enabledEvents.includes(ALL_EVENTS) || enabledEvents.includes(type)

export interface WebhookEndpointsService {
  readonly create: (
    caller: CallerInfo,
    request: CreateWebhookEndpointRequest
  ) => Effect.Effect<CreatedWebhookEndpoint, InvalidRequest | ResourceDenied | CrmPermissionDenied | StorageError>
  readonly list: (caller: CallerInfo) => Effect.Effect<ReadonlyArray<WebhookEndpoint>, ResourceDenied | StorageError>
  readonly get: (caller: CallerInfo, id: string) => Effect.Effect<WebhookEndpoint, ResourceDenied | NotFound | StorageError>
  readonly remove: (
    caller: CallerInfo,
    id: string
  ) => Effect.Effect<WebhookEndpointDeletion, ResourceDenied | NotFound | StorageError>
}

export class WebhookEndpoints extends Context.Tag("@parley/core/WebhookEndpoints")<
  WebhookEndpoints,
  WebhookEndpointsService
>() {}

const unrestricted = (caller: CallerInfo): Effect.Effect<void, ResourceDenied> =>
  caller.numberSids.length === 0 && caller.botIds.length === 0
    ? Effect.void
    : Effect.fail(
      new ResourceDenied({
        message: "Webhook endpoints receive every event of the organisation, so they are managed with a key " +
          "that has no number or bot restrictions."
      })
    )

const notFound = (id: string) => new NotFound({ message: `No webhook endpoint ${id}.` })

export const layer: Layer.Layer<WebhookEndpoints, never, WebhookEndpointStore> = Layer.effect(
  WebhookEndpoints,
  Effect.map(WebhookEndpointStore, (store) =>
    WebhookEndpoints.of({
      create: Effect.fn("WebhookEndpoints.create")(function*(caller, request) {
        yield* unrestricted(caller)
        if (caller.account.permissions.actionsView !== "all") {
          return yield* new CrmPermissionDenied({
            message: `The connected CRM account (${caller.account.name}) does not see every message and call, ` +
              "so it cannot subscribe to the organisation's events."
          })
        }
        const url = endpointUrl(request.url)
        if (Either.isLeft(url)) return yield* new InvalidRequest({ message: `url: ${url.left}` })
        const row: WebhookEndpointRow = {
          id: newId("wh"),
          orgId: caller.orgId,
          url: url.right,
          secret: newSecret(),
          enabledEvents: normalisedEvents(request.enabledEvents),
          description: request.description ?? null,
          createdAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
          disabledAt: null,
          disabledReason: null,
          lastSuccessAt: null
        }
        yield* store.insert(row)
        return CreatedWebhookEndpoint.make({ ...toWebhookEndpoint(row), secret: row.secret })
      }),
      list: Effect.fn("WebhookEndpoints.list")(function*(caller) {
        yield* unrestricted(caller)
        return (yield* store.list(caller.orgId)).map(toWebhookEndpoint)
      }),
      get: Effect.fn("WebhookEndpoints.get")(function*(caller, id) {
        yield* unrestricted(caller)
        const found = yield* store.find(caller.orgId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return toWebhookEndpoint(found.value)
      }),
      remove: Effect.fn("WebhookEndpoints.remove")(function*(caller, id) {
        yield* unrestricted(caller)
        if (!(yield* store.remove(caller.orgId, id))) return yield* notFound(id)
        return WebhookEndpointDeletion.make({ id, deleted: true })
      })
    }))
)
