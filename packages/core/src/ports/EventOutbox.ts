/**
 * Port: the transactional outbox of signed events. The domain appends an
 * event in the same unit of work as the change it reports; the server's
 * delivery worker reads the outbox and posts each event to the webhooks.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { RecordStatus } from "../contract/Statuses.js"
import type { ActionKind } from "./ActionStore.js"
import type { StorageError } from "./StorageError.js"

export interface OutboxEvent {
  /** `evt_…`; also the Standard Webhooks `webhook-id`. */
  readonly id: string
  readonly orgId: string
  readonly type: string
  readonly timestamp: string
  /** The encoded JSON payload `{type, timestamp, data}`. */
  readonly payload: string
  /**
   * The reported action, as the server's metrics count it (finished actions by status) and its traces link
   * the event to the action's request, so an outbox need not parse the payload back; not stored as such.
   */
  readonly subject?: { readonly actionId: string; readonly kind: ActionKind; readonly status: RecordStatus }
}

export interface EventOutboxService {
  readonly append: (event: OutboxEvent) => Effect.Effect<void, StorageError>
  /** Several events at once, in order (a batch of changes made in one unit of work). */
  readonly appendAll: (events: ReadonlyArray<OutboxEvent>) => Effect.Effect<void, StorageError>
  /** Events of an organisation, oldest first (for inspection and tests). */
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<OutboxEvent>, StorageError>
}

export class EventOutbox extends Context.Tag("@parley/core/ports/EventOutbox")<EventOutbox, EventOutboxService>() {}

export const layerMemory: Layer.Layer<EventOutbox> = Layer.effect(
  EventOutbox,
  Effect.gen(function*() {
    const events = yield* Ref.make<ReadonlyArray<OutboxEvent>>([])
    return EventOutbox.of({
      append: (event) => Ref.update(events, (all) => [...all, event]),
      appendAll: (appended) => Ref.update(events, (all) => [...all, ...appended]),
      list: (orgId) => Effect.map(Ref.get(events), (all) => all.filter((e) => e.orgId === orgId))
    })
  })
)
