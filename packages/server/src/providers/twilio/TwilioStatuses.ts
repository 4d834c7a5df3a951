/**
 * Twilio's Message statuses (`MessageStatus` of a status callback, `status` of the resource) on
 * Parley's list. Twilio's values: queued, sending, sent, failed, delivered, undelivered, receiving,
 * received, accepted, scheduled, read, partially_delivered, canceled.
 */
import type { MessageStatus } from "@parley/core"

/**
 * Null for the inbound ones (and anything else). `read` (WhatsApp) implies delivered; `canceled` is a
 * Twilio-scheduled message Twilio dropped, which Parley never asks for, so it reads as failed.
 */
export const twilioMessageStatus = (raw: string): MessageStatus | null => {
  switch (raw) {
    case "accepted":
    case "scheduled":
    case "queued":
    case "sending":
      return "Sending"
    case "sent":
      return "Sent"
    case "delivered":
    case "read":
    case "partially_delivered":
      return "Delivered"
    case "undelivered":
      return "Undelivered"
    case "failed":
    case "canceled":
      return "Failed"
    default:
      return null
  }
}
