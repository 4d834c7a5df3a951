/**
 * The next step of a claimed action, decided in memory from its row: which
 * phase it is in, and the status change a provider's answer or the simulated
 * lifecycle makes. No I/O here, so a whole claimed batch is planned at once.
 */
import { Simulation } from "@parley/core/internal"
import type { ProviderReceipt } from "./SimulatedProviders.js"
import type { Change, ClaimedRow } from "./ClaimedAction.js"

export type Phase = "commit" | "submit" | "advance"

export const phaseOf = (row: ClaimedRow): Phase => {
  if (row.status === "Queued" && row.charged_at === null) return "commit"
  // Committed (allowance taken) but the provider's answer not yet recorded: submit, or redo the submission.
  // With the provider's id recorded the provider has it: what is left is following it (advance).
  if (row.charged_at !== null && row.sid === null && (row.status === "Sending" || row.status === "Queued")) {
    return "submit"
  }
  return "advance"
}

/** A call that will complete on its next step needs its bot's name for the transcript. */
export const needsBot = (row: ClaimedRow): boolean => row.kind === "ai_call" && row.status === "In Progress"

export const afterSubmit = (row: ClaimedRow, receipt: ProviderReceipt, now: number, stepMs: number): Change => {
  const final = receipt.status === "Failed"
  return {
    status: receipt.status,
    workAt: final ? null : now + stepMs,
    sid: receipt.sid,
    providerStatus: receipt.providerStatus,
    errorMessage: receipt.errorMessage,
    ...(row.kind === "message" && !final ? { at: new Date(now).toISOString() } : {})
  }
}

/** The provider's next lifecycle step after submission; with none left the action just leaves the queue. */
export const advance = (row: ClaimedRow, now: number, stepMs: number, botName: string | undefined): Change => {
  const stay: Change = { status: row.status, workAt: null }
  if (row.kind === "message") {
    const next = row.status === "Sent" ? Simulation.nextTextStep("Sent", row.counterpart) : null
    return next === null
      ? stay
      : { status: next.status, workAt: null, providerStatus: next.providerStatus, errorMessage: next.errorMessage }
  }
  const current = row.status === "Ringing" || row.status === "In Progress" ? row.status : null
  const next = current === null ? null : Simulation.nextCallStep(current, row.counterpart)
  if (next === null) return stay
  if (next.status === "Completed") {
    return {
      status: "Completed",
      workAt: null,
      providerStatus: next.providerStatus,
      body: Simulation.transcript({
        botName: botName ?? row.bot_id ?? "bot",
        mode: row.mode ?? "follow_script",
        purposeMessage: row.purpose_message,
        to: row.counterpart
      }),
      audioFileId: `AF${String(row.id).padStart(32, "0")}`
    }
  }
  return {
    status: next.status,
    workAt: next.status === "In Progress" ? now + stepMs : null,
    providerStatus: next.providerStatus,
    errorMessage: next.errorMessage,
    ...(next.status === "In Progress" ? { at: new Date(now).toISOString() } : {})
  }
}
