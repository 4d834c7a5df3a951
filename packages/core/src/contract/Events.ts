/**
 * The signed events Parley posts to webhook endpoints: their kinds and the
 * payload `{type, timestamp, data}`, where `data` is the same record as
 * GET /messages/{id} or /ai-calls/{id} (EventPayload), or for the opt-out
 * list's changes the entry as GET /opt-outs/{phone} answers it
 * (OptOutEventPayload). Published in the OpenAPI document's `webhooks`
 * section; delivery and signing are described there too.
 */
import { Schema } from "effect"
import { OptOut } from "./OptOuts.js"
import { ActionRecord } from "./Resources.js"

/** The events about a text or a call: their `data` is its record. */
export const ActionEventType = Schema.Literal(
  "message.queued",
  "message.sent",
  "message.delivered",
  "message.failed",
  "message.cancelled",
  "message.received",
  "ai_call.queued",
  "ai_call.started",
  "ai_call.completed",
  "ai_call.failed",
  "ai_call.cancelled",
  "crm.record_refused"
)
export type ActionEventType = typeof ActionEventType.Type

/** The events about the opt-out list: their `data` is the entry recorded, or the entry removed. */
export const OptOutEventType = Schema.Literal("optout.created", "optout.deleted")
export type OptOutEventType = typeof OptOutEventType.Type

export const EventType = Schema.Literal(...ActionEventType.literals, ...OptOutEventType.literals)
  .annotations({ identifier: "EventType" })
export type EventType = typeof EventType.Type

export const EventPayload = Schema.Struct({
  type: ActionEventType,
  timestamp: Schema.String.annotations({ description: "When the event was written (ISO 8601, UTC)." }),
  data: ActionRecord
}).annotations({
  identifier: "EventPayload",
  description: "The record after the change. Order is not promised: compare `data.modified` to discard stale events."
})
export type EventPayload = typeof EventPayload.Type

export const OptOutEventPayload = Schema.Struct({
  type: OptOutEventType,
  timestamp: Schema.String.annotations({ description: "When the event was written (ISO 8601, UTC)." }),
  data: OptOut
}).annotations({
  identifier: "OptOutEventPayload",
  description: "The opt-out entry recorded (optout.created) or removed (optout.deleted). Order is not promised: " +
    "compare `timestamp` to discard stale events."
})
export type OptOutEventPayload = typeof OptOutEventPayload.Type

export const EVENT_DESCRIPTIONS: Record<EventType, string> = {
  "message.queued": "A text was accepted (202) by a live key, or Parley queued its answer to a keyword (STOP, START, HELP).",
  "message.sent": "The carrier accepted the text.",
  "message.delivered": "The handset confirmed the text.",
  "message.failed": "The text could not be sent (Failed) or delivered (Undelivered); see errorMessage.",
  "message.cancelled": "A scheduled text was cancelled.",
  "message.received": "An inbound message arrived: its text in data.body, its media (an MMS) as URLs in data.mediaUrls.",
  "ai_call.queued": "An AI call was accepted (202) by a live key.",
  "ai_call.started": "The AI call was answered and is in progress.",
  "ai_call.completed": "The AI call ended; the transcript is in data.body, the recording id in data.audioFileId.",
  "ai_call.failed": "The AI call did not take place: No Answer, Busy or Failed.",
  "ai_call.cancelled": "A scheduled AI call was cancelled.",
  "crm.record_refused":
    "The connected CRM refused for good Parley's record of this text or call (Zoho: INVALID_DATA, MANDATORY_NOT_FOUND…, " +
    "e.g. the record was deleted or a field made mandatory there): Parley keeps the action, the CRM does not have it " +
    "or its latest status. The CRM's code is in `parley crm status` and the console's CRM page.",
  "optout.created":
    "A number was opted out, or its entry changed (channels, source): by the recipient's keyword (STOP…), the " +
    "carrier's refusal, an API key, an administrator or the CRM. `data` is the entry now in force.",
  "optout.deleted":
    "A number was opted back in (START, DELETE /opt-outs/{phone}, an administrator): it may be texted and called " +
    "again. `data` is the entry removed."
}
