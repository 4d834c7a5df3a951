/**
 * Vapi's server messages as Parley reports: `status-update` moves a call to
 * Ringing or In Progress (`ended` waits for the report that says how); the
 * `end-of-call-report` ends it — Completed with the transcript in `body` and
 * the recording in `audioFileId`, or No Answer, Busy, Failed with Vapi's
 * `endedReason` in `errorMessage` (VapiStatuses).
 */
import type { CallbackReport } from "../ProviderCallbacks.js"
import type { VapiServerMessage } from "./VapiClient.js"
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
