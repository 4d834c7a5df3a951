/**
 * The live rules an action meets when it comes due, decided at dispatch time
 * so that a change of settings applies to everything not yet sent:
 * - sending hours: outside the organisation's window the action is held
 *   until the window next opens (in the organisation's time zone);
 * - AI settings: an AI call whose organisation turned AI calls off fails;
 * - allowances: a dispatched SMS takes one unit per segment (Segments), a
 *   WhatsApp message one, an AI call one whatever its duration, counted in the
 *   month it is sent (AllowancePeriods); with too little left the action fails.
 * The allowance is taken by the caller (an atomic store update) only after
 * this decision says Send.
 */
import { Either } from "effect"
import type { ActionKind } from "../ports/ActionStore.js"
import type { Organisation } from "../ports/Organisations.js"
import { nextOpening, parseSendingHours } from "./SendingHours.js"

export type DispatchDecision =
  | { readonly _tag: "Send" }
  | { readonly _tag: "Hold"; readonly until: number }
  | { readonly _tag: "Fail"; readonly reason: string }

export const decide = (organisation: Organisation, kind: ActionKind, now: number): DispatchDecision => {
  if (kind === "ai_call" && !organisation.aiCallsEnabled) {
    return { _tag: "Fail", reason: "AI calls are turned off in the organisation's AI settings." }
  }
  const hours = parseSendingHours(organisation.sendingHours, organisation.timezone)
  // A spec that no longer parses (edited by hand) must not block every send: treat it as always open.
  if (Either.isRight(hours)) {
    const opening = nextOpening(hours.right, new Date(now)).getTime()
    if (opening > now) return { _tag: "Hold", until: opening }
  }
  return { _tag: "Send" }
}

export const ALLOWANCE_FAILURE: Record<ActionKind, string> = {
  message: "The organisation's text allowance for this month is used up.",
  ai_call: "The organisation's AI call allowance for this month is used up."
}
