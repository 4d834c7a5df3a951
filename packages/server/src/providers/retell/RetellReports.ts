/**
 * Retell's webhooks as Parley reports: `call_started` moves a call to In
 * Progress; `call_ended` ends it by its `disconnection_reason`
 * (RetellStatuses) — Completed with the transcript in `body` and the recording
 * in `audioFileId`, or No Answer, Busy, Failed with the raw reason in
 * `errorMessage`. `call_analyzed` carries the same ended call again: it makes
 * the same report, so a lost or late `call_ended` still ends the call, and a
 * repeat changes nothing (reports only move an action forward).
 */
import type { CallbackReport } from "../ProviderCallbacks.js"
import type { RetellCallDetails } from "./RetellClient.js"
import { RETELL_NOT_PLACED_REASONS, retellCallStatus, retellEnding } from "./RetellStatuses.js"
import type { RetellWebhook } from "./RetellWebhooks.js"

/** The call's metadata (Parley puts the action and organisation there when it starts the call). */
export const callMetadata = (webhook: RetellWebhook): Readonly<Record<string, string>> =>
  webhook._tag === "Other" ? {} : webhook.metadata

/** What a call that ended reports; `providerStatus` is the raw reason. */
const ended = (
  callId: string,
  reason: string | null,
  transcript: string | null,
  recordingUrl: string | null
): CallbackReport => {
  const { errorMessage, status } = retellEnding(reason ?? "")
  return status === "Completed"
    ? {
      status,
      providerStatus: reason ?? "",
      sid: callId,
      body: transcript ?? "",
      ...(recordingUrl === null ? {} : { audioFileId: recordingUrl })
    }
    : {
      status,
      providerStatus: reason ?? "ended",
      sid: callId,
      errorMessage: errorMessage ?? reason ?? "",
      ...(RETELL_NOT_PLACED_REASONS.has(reason ?? "") ? { notPlaced: true } : {})
    }
}

/** The report a webhook makes, or null when it says nothing about the call's status. */
export const toCallReport = (webhook: RetellWebhook): CallbackReport | null => {
  if (webhook._tag === "Other") return null
  switch (webhook.event) {
    case "call_started":
      return { status: "In Progress", providerStatus: webhook.status ?? "ongoing", sid: webhook.callId }
    case "call_ended":
    case "call_analyzed":
      return ended(webhook.callId, webhook.disconnectionReason, webhook.transcript, webhook.recordingUrl)
  }
}

/**
 * The report a call read again (getCall) makes, for a call whose webhooks
 * Parley missed: the ended report once Retell gives a reason, else the status
 * so far (null when that says nothing yet).
 */
export const callDetailsReport = (call: RetellCallDetails): CallbackReport | null => {
  if (call.disconnectionReason !== null) {
    return ended(call.id, call.disconnectionReason, call.transcript, call.recordingUrl)
  }
  // Ended without a reason yet: Retell fills it in as the call is closed; the next look will have it.
  const status = call.status === null ? null : retellCallStatus(call.status)
  return status === null || call.status === null ? null : { status, providerStatus: call.status, sid: call.id }
}
