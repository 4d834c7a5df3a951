/**
 * Vapi's server messages as Parley reports: `status-update` moves a call to
 * Ringing or In Progress (`ended` waits for the report that says how); the
 * `end-of-call-report` ends it — Completed with the transcript in `body` and
 * the recording in `audioFileId`, or No Answer, Busy, Failed with Vapi's
 * `endedReason` in `errorMessage` (VapiStatuses). A call read again makes the
 * same reports (callDetailsRecheck).
 */
import { ProviderReports } from "@parley/core/domain"
import { Option } from "effect"
import type { Recheck } from "../Provider.js"
import type { CallbackReport } from "../ProviderCallbacks.js"
import type { VapiCallDetails, VapiServerMessage } from "./VapiClient.js"
import { vapiCallStatus, vapiEnding } from "./VapiStatuses.js"

/** The call's metadata (Parley puts the action and organisation there when it starts the call). */
export const callMetadata = (message: VapiServerMessage): Readonly<Record<string, string>> =>
  message._tag === "Other" ? {} : message.metadata

/** The report a message makes, or null when it says nothing about the call's status. */
export const toCallReport = (message: VapiServerMessage): CallbackReport | null => {
  switch (message._tag) {
    case "StatusUpdate": {
      const status = vapiCallStatus(message.status)
      return status === null ? null : { status, providerStatus: message.status, sid: message.callId }
    }
    case "EndOfCallReport": {
      const { errorMessage, status } = vapiEnding(message.endedReason)
      return status === "Completed"
        ? {
          status,
          providerStatus: message.endedReason,
          sid: message.callId,
          body: message.transcript ?? "",
          ...(message.recordingUrl === null ? {} : { audioFileId: message.recordingUrl })
        }
        : { status, providerStatus: message.endedReason, sid: message.callId, errorMessage: errorMessage ?? message.endedReason }
    }
    case "Other":
      return null
  }
}

/**
 * What a call read again (GET /call/{id}) says, for a call whose server messages Parley missed; None while
 * it says nothing Parley's list has a status for. `ended` with no `endedReason` yet says nothing: Vapi
 * fills the reason in as it closes the call, and the next look has it (as the other AI-call provider's
 * recheck waits for its reason), where reading it as "no reason" would end a call that went well Failed.
 */
export const callDetailsRecheck = (call: VapiCallDetails): Option.Option<Recheck> => {
  const ended = call.status === "ended" || call.status === null
  if (ended && call.endedReason === null) return Option.none()
  const ending = ended && call.endedReason !== null ? vapiEnding(call.endedReason) : null
  const status = ending?.status ?? (call.status === null ? null : vapiCallStatus(call.status))
  if (status === null) return Option.none()
  const raw = call.endedReason ?? call.status ?? ""
  return Option.some(
    status === "Completed"
      ? {
        status,
        providerStatus: raw,
        body: call.transcript ?? "",
        ...(call.recordingUrl === null ? {} : { audioFileId: call.recordingUrl })
      }
      : ProviderReports.isFinal("ai_call", status)
      ? { status, providerStatus: raw, errorMessage: ending?.errorMessage ?? raw }
      : { status, providerStatus: raw }
  )
}
