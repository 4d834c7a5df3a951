/**
 * The simulated carrier and AI-call provider's behaviour: Parley's embedded
 * default, with a realistic lifecycle and deterministic failure numbers, as
 * Twilio's test credentials have.
 *
 * Texts:  Queued → Sending → Sent → Delivered.
 * Calls:  Queued → Ringing → In Progress → Completed (transcript in `body`, an `audioFileId`).
 *
 * Failure numbers (recipients):
 * | Number        | Outcome |
 * |---------------|---------|
 * | +15005550001  | text fails at send: Failed, "21211: Invalid 'To' phone number" |
 * | +15005550002  | text is sent, then Undelivered, "30003: Unreachable destination handset" |
 * | +15005550003  | call is never answered: No Answer |
 * | +15005550004  | call finds the line busy: Busy |
 * | +15005550005  | call fails to connect: Failed, "Call could not be connected" |
 *
 * Each step takes the configured delay (`PARLEY_SIM_STEP_MS` on the server).
 */
import type { CallMode } from "../contract/Primitives.js"
import type { CallStatus, MessageStatus } from "../contract/Statuses.js"

export const FAILURE_NUMBERS = {
  textFailsAtSend: "+15005550001",
  textUndelivered: "+15005550002",
  callNoAnswer: "+15005550003",
  callBusy: "+15005550004",
  callFails: "+15005550005"
} as const

export interface SendOutcome<S> {
  readonly status: S
  /** The provider's own status value, kept apart from Parley's. */
  readonly providerStatus: string
  readonly errorMessage: string | null
}

/** What the carrier answers when asked to send. */
export const textSendOutcome = (to: string): SendOutcome<MessageStatus> =>
  to === FAILURE_NUMBERS.textFailsAtSend
    ? { status: "Failed", providerStatus: "failed", errorMessage: "21211: Invalid 'To' phone number" }
    : { status: "Sent", providerStatus: "sent", errorMessage: null }

/** The next status of a text after `current`, or null when it is final. */
export const nextTextStep = (current: MessageStatus, to: string): SendOutcome<MessageStatus> | null => {
  if (current !== "Sent") return null
  return to === FAILURE_NUMBERS.textUndelivered
    ? { status: "Undelivered", providerStatus: "undelivered", errorMessage: "30003: Unreachable destination handset" }
    : { status: "Delivered", providerStatus: "delivered", errorMessage: null }
}

export const callStartOutcome = (to: string): SendOutcome<CallStatus> =>
  to === FAILURE_NUMBERS.callFails
    ? { status: "Failed", providerStatus: "failed", errorMessage: "Call could not be connected" }
    : { status: "Ringing", providerStatus: "ringing", errorMessage: null }

export const nextCallStep = (current: CallStatus, to: string): SendOutcome<CallStatus> | null => {
  switch (current) {
    case "Ringing":
      if (to === FAILURE_NUMBERS.callNoAnswer) {
        return { status: "No Answer", providerStatus: "no-answer", errorMessage: "The call was not answered" }
      }
      if (to === FAILURE_NUMBERS.callBusy) {
        return { status: "Busy", providerStatus: "busy", errorMessage: "The line was busy" }
      }
      return { status: "In Progress", providerStatus: "in-progress", errorMessage: null }
    case "In Progress":
      return { status: "Completed", providerStatus: "completed", errorMessage: null }
    default:
      return null
  }
}

/** The transcript of a completed simulated call, driven by the bot, the mode and the purpose. */
export const transcript = (
  call: { readonly botName: string; readonly mode: CallMode; readonly purposeMessage: string | null; readonly to: string }
): string => {
  const opening = `Bot (${call.botName}): Hello, this is an automated assistant calling ${call.to}.`
  const middle = call.mode === "deliver_specific_message" && call.purposeMessage !== null
    ? [`Bot: ${call.purposeMessage}`, "Contact: Thank you, understood."]
    : [
      "Bot: I'm following up on your recent enquiry. Is now a good time to talk?",
      "Contact: Yes, go ahead.",
      ...(call.purposeMessage === null ? [] : [`Bot: ${call.purposeMessage}`]),
      "Bot: Thank you. I've noted your answers for the team."
    ]
  return [opening, ...middle, "Bot: Goodbye."].join("\n")
}
