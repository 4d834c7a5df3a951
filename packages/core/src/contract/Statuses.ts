/**
 * Parley's published value lists for `status`, `direction` and `type`.
 *
 * The spec shows only `Queued`, `Delivered`, `Outbound`, `SMS` and `Call`; these
 * are the full lists Parley promises. Carriers' and AI-call providers' own
 * statuses are mapped onto them, and the provider's raw value is kept apart.
 */
import { Schema } from "effect"

export const MessageStatus = Schema.Literal(
  "Queued",
  "Sending",
  "Sent",
  "Delivered",
  "Undelivered",
  "Failed",
  "Cancelled",
  "Received"
).annotations({
  identifier: "MessageStatus",
  description:
    "Queued: accepted, waiting for its time. Sending: handed to the carrier. Sent: the carrier accepted it. " +
    "Delivered: the handset confirmed it. Undelivered: the carrier could not deliver it (see errorMessage). " +
    "Failed: it could not be sent. Cancelled: cancelled before dispatch. Received: an inbound message."
})
export type MessageStatus = typeof MessageStatus.Type

export const CallStatus = Schema.Literal(
  "Queued",
  "Ringing",
  "In Progress",
  "Completed",
  "No Answer",
  "Busy",
  "Failed",
  "Cancelled"
).annotations({
  identifier: "CallStatus",
  description:
    "Queued: accepted, waiting for its time. Ringing / In Progress: the call is under way. Completed: the call " +
    "ended normally; the transcript is in body. No Answer, Busy, Failed: the call did not take place. Cancelled: " +
    "cancelled before dispatch."
})
export type CallStatus = typeof CallStatus.Type

export const RecordStatus = Schema.Union(MessageStatus, CallStatus).annotations({ identifier: "RecordStatus" })
export type RecordStatus = typeof RecordStatus.Type

/** Statuses after which a record never changes again. */
export const FINAL_STATUSES: ReadonlySet<RecordStatus> = new Set<RecordStatus>([
  "Delivered",
  "Undelivered",
  "Failed",
  "Cancelled",
  "Received",
  "Completed",
  "No Answer",
  "Busy"
])

export const Direction = Schema.Literal("Outbound", "Inbound").annotations({ identifier: "Direction" })
export type Direction = typeof Direction.Type

export const RecordType = Schema.Literal("SMS", "WhatsApp", "Call").annotations({ identifier: "RecordType" })
export type RecordType = typeof RecordType.Type
