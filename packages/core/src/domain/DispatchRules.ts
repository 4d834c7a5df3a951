/**
 * The live rules an action meets when it comes due, decided at dispatch time
 * so that a change of settings applies to everything not yet sent:
 * - sending hours: outside the organisation's window the action is held
 *   until the window next opens (in the organisation's time zone);
 * - AI settings: an AI call whose organisation turned AI calls off fails;
 * - allowances: a dispatched SMS takes one unit per segment (Segments), a
 *   WhatsApp message one, an AI call one whatever its duration, counted in the
 *   month it is sent (AllowancePeriods); with too little left the action fails.
 * - destinations: the organisation's destination rules (Destinations) are
 *   checked again for each action, since an operator who narrows them after
 *   an action was accepted expects nothing to go out to a now-refused
 *   recipient; such an action fails, naming the rule.
 * - recipient-local hours: outside the organisation's window on the recipient's own clock (RecipientHours)
 *   the action is held until it opens there, as for sending hours;
 * - consent: a recipient who opted out of the action's channel after it was accepted (a STOP reply, the
 *   carrier, an administrator) is not sent to; the action fails, naming the opt-out (Consent).
 * The allowance is taken by the caller (an atomic store update) only after
 * these decisions say Send.
 *
 * Parley's answer to a keyword (isKeywordReply) meets only the AI and destination rules: it answers a
 * recipient who has just written — a STOP's confirmation goes to a number that has just opted out, and
 * held until the sending window opened it would come hours after the STOP — and it is Parley's duty, not the
 * organisation's sending, so it takes no allowance.
 */
import { Either } from "effect"
import type { ActionKind } from "../ports/ActionStore.js"
import type { OptOutEntry } from "../ports/OptOuts.js"
import { channelOf, refusal as optOutRefusal } from "./Consent.js"
import type { Organisation } from "../ports/Organisations.js"
import { refusal, rulesOf } from "./Destinations.js"
import { releaseAt } from "./RecipientHours.js"
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

/** Whether the action is Parley's answer to a keyword (see Consent and ActionStore's `keywordReplyTo`). */
export const isKeywordReply = (action: { readonly keywordReplyTo?: string | null | undefined }): boolean =>
  action.keywordReplyTo !== undefined && action.keywordReplyTo !== null

export const ALLOWANCE_FAILURE: Record<ActionKind, string> = {
  message: "The organisation's text allowance for this month is used up.",
  ai_call: "The organisation's AI call allowance for this month is used up."
}

/**
 * The destination rules for one action (its sending line and recipient), after `decide` said Send for its
 * organisation and kind. Per action, unlike `decide`, because the recipient is.
 */
export const decideDestination = (organisation: Organisation, line: string, to: string): DispatchDecision => {
  const refused = refusal(rulesOf(organisation), line, to)
  return Either.isLeft(refused)
    ? { _tag: "Fail", reason: `The organisation's destination rules no longer allow this recipient: ${refused.left}.` }
    : { _tag: "Send" }
}

/**
 * The recipient-local hours for one action (its recipient), after `decide` and `decideDestination` said Send:
 * Hold until the organisation's window opens on the recipient's clock.
 */
export const decideRecipientHours = (organisation: Organisation, to: string, now: number): DispatchDecision => {
  const until = releaseAt(organisation, to, now)
  return until > now ? { _tag: "Hold", until } : { _tag: "Send" }
}

/**
 * The recipient's consent for one action (its kind and type), after the other rules said Send: Fail when the
 * number's opt-out entry covers the action's channel.
 */
export const decideConsent = (entry: OptOutEntry | undefined, kind: ActionKind, type: string): DispatchDecision => {
  const why = optOutRefusal(entry, channelOf(kind, type))
  return why === null ? { _tag: "Send" } : { _tag: "Fail", reason: `Not sent: ${why}` }
}
