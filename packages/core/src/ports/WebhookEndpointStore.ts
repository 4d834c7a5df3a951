/**
 * Port: the organisation's webhook endpoints, where its signed events are
 * posted. One row shape for the API and the administrator's CLI, so an
 * endpoint made by either is the same thing to both and to delivery.
 * Every read and removal is by organisation: an id alone finds nothing.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { EnabledEvent } from "../contract/WebhookEndpoints.js"
import type { StorageError } from "./StorageError.js"

export interface WebhookEndpointRow {
  /** `wh_…` */
  readonly id: string
  readonly orgId: string
  readonly url: string
  /** `whsec_` + base64 of 24 random bytes; the server signs with it, so it is stored. */
  readonly secret: string
  /** The event types posted to it; `["*"]` for all. */
  readonly enabledEvents: ReadonlyArray<EnabledEvent>
  readonly description: string | null
  readonly createdAt: string
  readonly disabledAt: string | null
  /** Why delivery stopped: a 410 from the endpoint, a spent retry schedule, an administrator. */
  readonly disabledReason: string | null
  readonly lastSuccessAt: string | null
}

export interface WebhookEndpointStoreService {
  readonly insert: (row: WebhookEndpointRow) => Effect.Effect<void, StorageError>
  /** An organisation's endpoints, enabled and disabled, oldest first. */
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRow>, StorageError>
  readonly find: (orgId: string, id: string) => Effect.Effect<Option.Option<WebhookEndpointRow>, StorageError>
  /** Removes the endpoint and the deliveries still owed to it; false when the organisation has no such endpoint. */
  readonly remove: (orgId: string, id: string) => Effect.Effect<boolean, StorageError>
}

export class WebhookEndpointStore extends Context.Tag("@parley/core/ports/WebhookEndpointStore")<
  WebhookEndpointStore,
  WebhookEndpointStoreService
>() {}

export const layerMemory: Layer.Layer<WebhookEndpointStore> = Layer.effect(
  WebhookEndpointStore,
  Effect.map(Ref.make<ReadonlyArray<WebhookEndpointRow>>([]), (rows) =>
    WebhookEndpointStore.of({
      insert: (row) => Ref.update(rows, (all) => [...all, row]),
      list: (orgId) => Effect.map(Ref.get(rows), (all) => all.filter((r) => r.orgId === orgId)),
      find: (orgId, id) =>
        Effect.map(Ref.get(rows), (all) => Option.fromNullable(all.find((r) => r.orgId === orgId && r.id === id))),
      remove: (orgId, id) =>
        Ref.modify(rows, (all) => {
          const kept = all.filter((r) => !(r.orgId === orgId && r.id === id))
          return [kept.length < all.length, kept]
        })
    }))
)
