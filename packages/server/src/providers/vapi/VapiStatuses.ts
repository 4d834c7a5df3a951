/**
 * Vapi's call statuses and `endedReason`s on Parley's list. The endings are an explicit table of the
 * values `@vapi-ai/server-sdk` 2.0.1 lists (597 of them, `CallEndedReason`): the ones that mean the call
 * happened are listed as successes, the ones that mean nobody picked up or the line was busy as such,
 * and every other value — including any Vapi adds later — is a failure that keeps Vapi's reason in
 * `errorMessage`. Guessing from words in the reason made `assistant-not-valid`, `manually-canceled`,
 * `worker-shutdown` or `call.forwarding.operator-busy` read as Completed.
 */
import type { CallStatus } from "@parley/core"

/** Vapi's call statuses (status-update messages, `Call.status`); `ended` waits for how it ended. */
export const vapiCallStatus = (raw: string): CallStatus | null => {
  switch (raw) {
    case "scheduled":
    case "queued":
      return "Queued"
    case "ringing":
      return "Ringing"
    case "in-progress":
    case "forwarding":
      return "In Progress"
    default:
      return null
  }
}

/** Endings after which the call took place: the customer and the assistant were connected. */
export const VAPI_COMPLETED_REASONS: ReadonlySet<string> = new Set([
  "assistant-ended-call",
  "assistant-said-end-call-phrase",
  "assistant-ended-call-with-hangup-task",
  "assistant-ended-call-after-message-spoken",
  "assistant-forwarded-call",
  "customer-ended-call",
  "customer-ended-call-before-warm-transfer",
  "customer-ended-call-after-warm-transfer-attempt",
  "customer-ended-call-during-transfer",
  "exceeded-max-duration",
  "silence-timed-out",
  "call.in-progress.twilio-completed-call",
  "call.in-progress.sip-completed-call",
  "vonage-completed",
  "call.ending.hook-executed-say",
  "call.ending.hook-executed-transfer"
])

/**
 * Endings where nobody took the call: a voicemail greeting is not the person, for an outbound bot call; and
 * the outbound SIP answers 408 (Request Timeout) and 480 (Temporarily Unavailable), which Vapi's docs on SIP
 * response codes list as the callee not answering or not being reachable now, not as a fault to fix.
 */
export const VAPI_NO_ANSWER_REASONS: ReadonlySet<string> = new Set([
  "customer-did-not-answer",
  "voicemail",
  "call.in-progress.error-providerfault-outbound-sip-408-request-timeout",
  "call.in-progress.error-providerfault-outbound-sip-480-temporarily-unavailable"
])

export const VAPI_BUSY_REASONS: ReadonlySet<string> = new Set(["customer-busy"])

export interface VapiEnding {
  readonly status: CallStatus
  /** Vapi's own reason when the call did not take place; null when it did. */
  readonly errorMessage: string | null
}

/** How a Vapi call ended (`endedReason`) on Parley's list. */
export const vapiEnding = (endedReason: string): VapiEnding => {
  if (VAPI_COMPLETED_REASONS.has(endedReason)) return { status: "Completed", errorMessage: null }
  const reason = endedReason === "" ? "Vapi gave no endedReason" : endedReason
  if (VAPI_NO_ANSWER_REASONS.has(endedReason)) return { status: "No Answer", errorMessage: reason }
  if (VAPI_BUSY_REASONS.has(endedReason)) return { status: "Busy", errorMessage: reason }
  return { status: "Failed", errorMessage: reason }
}
