/**
 * Retell's call statuses and disconnection reasons on Parley's list of call
 * statuses, from an explicit table of every `disconnection_reason` the
 * `retell-sdk` 5.66 types list (the client test checks the table against the
 * SDK's union, so a reason Retell adds shows up there). Nothing is guessed from
 * a reason's wording: a reason not in the table is Failed, with the raw reason
 * kept as the record's errorMessage.
 */
import type { CallStatus } from "@parley/core"

/** Retell's `call_status` values. */
export const RETELL_CALL_STATUSES = ["registered", "not_connected", "ongoing", "ended", "error"] as const
export type RetellCallStatus = (typeof RETELL_CALL_STATUSES)[number]

/**
 * How each disconnection reason ends a Parley call, and why where it is not obvious:
 * - the person was reached and the conversation ended, however it ended (either
 *   side hung up, a limit was reached, the call was handed to a human) → Completed;
 * - the person was not reached: nobody answered, or a machine did → No Answer;
 * - the line was busy, or the person declined the call (carriers report a
 *   declined call as busy) → Busy;
 * - anything that kept the call from being placed or from working → Failed.
 * `manual_stopped` (someone stopped the call at Retell, not through Parley) is
 * Failed: Parley's Cancelled means the action was cancelled before it was sent.
 */
export const RETELL_DISCONNECTION_STATUS = {
  user_hangup: "Completed",
  agent_hangup: "Completed",
  call_transfer: "Completed",
  transfer_bridged: "Completed",
  transfer_cancelled: "Completed",
  call_take_over: "Completed",
  inactivity: "Completed",
  max_duration_reached: "Completed",
  dial_no_answer: "No Answer",
  voicemail_reached: "No Answer",
  ivr_reached: "No Answer",
  dial_busy: "Busy",
  user_declined: "Busy",
  dial_failed: "Failed",
  invalid_destination: "Failed",
  telephony_provider_permission_denied: "Failed",
  telephony_provider_unavailable: "Failed",
  sip_routing_error: "Failed",
  marked_as_spam: "Failed",
  concurrency_limit_reached: "Failed",
  no_concurrency_fallback: "Failed",
  no_valid_payment: "Failed",
  scam_detected: "Failed",
  registered_call_timeout: "Failed",
  manual_stopped: "Failed",
  error_llm_websocket_open: "Failed",
  error_llm_websocket_lost_connection: "Failed",
  error_llm_websocket_runtime: "Failed",
  error_llm_websocket_corrupt_payload: "Failed",
  error_no_audio_received: "Failed",
  error_asr: "Failed",
  error_retell: "Failed",
  error_unknown: "Failed",
  error_user_not_joined: "Failed"
} as const satisfies Readonly<Record<string, CallStatus>>

export type RetellDisconnectionReason = keyof typeof RETELL_DISCONNECTION_STATUS

/**
 * Reasons Retell ends a call with before placing it that pass with time: Retell's docs say to retry
 * `concurrency_limit_reached` with exponential backoff. Parley places such a call again (as it retries a
 * create refused over the concurrency limit by the other AI-call provider); its Failed above applies once the attempts run out.
 */
export const RETELL_NOT_PLACED_REASONS: ReadonlySet<string> = new Set<RetellDisconnectionReason>(["concurrency_limit_reached"])

export const RETELL_DISCONNECTION_REASONS: ReadonlyArray<RetellDisconnectionReason> = Object.keys(
  RETELL_DISCONNECTION_STATUS
).filter((reason): reason is RetellDisconnectionReason => Object.hasOwn(RETELL_DISCONNECTION_STATUS, reason))

const isKnownReason = (reason: string): reason is RetellDisconnectionReason =>
  Object.hasOwn(RETELL_DISCONNECTION_STATUS, reason)

export interface RetellEnding {
  readonly status: CallStatus
  /** Retell's own reason when the call did not take place; null when it did. */
  readonly errorMessage: string | null
}

/** How a Retell call ended (`disconnection_reason`) on Parley's list; a reason Retell adds later is Failed. */
export const retellEnding = (reason: string): RetellEnding => {
  const status: CallStatus = isKnownReason(reason) ? RETELL_DISCONNECTION_STATUS[reason] : "Failed"
  if (status === "Completed") return { status, errorMessage: null }
  return { status, errorMessage: reason === "" ? "Retell gave no disconnection_reason" : reason }
}

/**
 * A call status before the call ended, on Parley's list; null when it says
 * nothing by itself (`not_connected`, `ended` and `error` wait for the
 * disconnection reason, which says how).
 */
export const retellCallStatus = (status: string): CallStatus | null => {
  switch (status) {
    case "registered":
      return "Queued"
    case "ongoing":
      return "In Progress"
    default:
      return null
  }
}
