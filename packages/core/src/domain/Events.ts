/**
 * Signed events: the kinds Parley emits and their payload `{type, timestamp,
 * data}`, where `data` is the same record as GET /messages/{id} or
 * /ai-calls/{id}. Delivery follows Standard Webhooks v1 (see the server).
 */
import { Clock, Effect } from "effect"
import type { ActionEventType, EventPayload, OptOutEventPayload, OptOutEventType } from "../contract/Events.js"
import type { Action } from "../ports/ActionStore.js"
import { EventOutbox, type EventOutboxService, type OutboxEvent } from "../ports/EventOutbox.js"
import { type OptOutEntry, publicOptOut } from "../ports/OptOuts.js"
import type { StorageError } from "../ports/StorageError.js"
import { toActionRecord } from "./ActionRecords.js"
import { newId } from "./Crypto.js"

export { EventPayload, EventType, OptOutEventPayload } from "../contract/Events.js"

/**
 * The payload's JSON text. Its `data` is an ActionRecord built from a typed, decoded action
 * (`toActionRecord`), and the payload schema transforms nothing (plain strings, literals, structs), so
 * its encoding is the value itself: `JSON.stringify` writes the same text as the schema's encoder
 * without validating the record again (the dispatcher writes thousands of events a second).
 * Should the contract ever add a transformation to EventPayload, go back to `Schema.encodeSync`.
 */
const encodePayload = (payload: EventPayload | OptOutEventPayload): string => JSON.stringify(payload)

/** The outbox row of an action's event: its record as the event's data, its id, kind and status as the subject. */
const actionEvent = (type: ActionEventType, action: Action, timestamp: string): OutboxEvent => ({
  id: newId("evt"),
  orgId: action.orgId,
  type,
  timestamp,
  payload: encodePayload({ type, timestamp, data: toActionRecord(action) }),
  subject: { actionId: action.id, kind: action.kind, status: action.status }
})

/**
 * Appends the event to `outbox`, the service itself: a caller that holds it (Actions) appends without
 * providing it to the effect, which would copy the fiber's context on every creation. Call it inside the
 * unit of work of the change it reports.
 */
export const emitTo = (outbox: EventOutboxService, type: ActionEventType, action: Action): Effect.Effect<void, StorageError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.append(actionEvent(type, action, new Date(now).toISOString())))

/** Appends the event to the outbox; call it inside the unit of work of the change it reports. */
export const emit = (type: ActionEventType, action: Action): Effect.Effect<void, StorageError, EventOutbox> =>
  Effect.flatMap(EventOutbox, (outbox) => emitTo(outbox, type, action))

/**
 * Appends one event per change, with one timestamp for the batch; call it inside the unit of work of
 * the changes it reports (the dispatcher applies hundreds of status changes in one transaction).
 */
export const emitAll = (
  changes: ReadonlyArray<{ readonly type: ActionEventType; readonly action: Action }>
): Effect.Effect<void, StorageError, EventOutbox> =>
  Effect.gen(function*() {
    if (changes.length === 0) return
    const outbox = yield* EventOutbox
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    yield* outbox.appendAll(changes.map(({ action, type }) => actionEvent(type, action, timestamp)))
  })

/**
 * Appends an opt-out list change (the entry recorded, or the entry removed); call it inside the unit of work
 * of the change. `data` is the entry as GET /opt-outs/{phone} answers it.
 */
export const emitOptOut = (type: OptOutEventType, entry: OptOutEntry): Effect.Effect<void, StorageError, EventOutbox> =>
  Effect.gen(function*() {
    const outbox = yield* EventOutbox
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    const data = publicOptOut(entry)
    yield* outbox.append({ id: newId("evt"), orgId: entry.orgId, type, timestamp, payload: encodePayload({ type, timestamp, data }) })
  })

/** The event a status change emits, if any (Sending and Ringing are steps no integration needs to hear of). */
export const eventForStatus = (kind: "message" | "ai_call", status: string): ActionEventType | null => {
  if (kind === "message") {
    switch (status) {
      case "Queued": return "message.queued"
      case "Sent": return "message.sent"
      case "Delivered": return "message.delivered"
      case "Undelivered":
      case "Failed": return "message.failed"
      case "Cancelled": return "message.cancelled"
      case "Received": return "message.received"
      default: return null
    }
  }
  switch (status) {
    case "Queued": return "ai_call.queued"
    case "In Progress": return "ai_call.started"
    case "Completed": return "ai_call.completed"
    case "No Answer":
    case "Busy":
    case "Failed": return "ai_call.failed"
    case "Cancelled": return "ai_call.cancelled"
    default: return null
  }
}
