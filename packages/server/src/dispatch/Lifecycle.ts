/**
 * Where a claimed action is in its life, decided in memory from its row, so
 * that a whole claimed batch is sorted at once: still to be committed (rules,
 * allowance), committed and to be handed to its provider (or handed over
 * again after a crash), or with its provider, to be looked at again.
 */
import type { ClaimedRow } from "./ClaimedAction.js"

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
