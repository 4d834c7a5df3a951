/**
 * Sending rules: sending hours and their time zone, the recipient-local hours, AI calls on or off, the destinations (regions,
 * premium-rate numbers, international networks), the text and call allowances per
 * month with what is used of them this month, and the keyword settings (whether a STOP also stops AI calls, the
 * organisation's own opt-out words, who answers keywords and with what text). Validated by the same rules as `parley orgs update`
 * (SendingRules) and written through the Organisations port, whose change the dispatcher reads for the next
 * action it considers.
 */
import { Consent, Destinations, Organisations, RecipientHours } from "@parley/core/internal"
import { Effect, Either, Option } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { flag, html } from "../Html.js"
import { choices, csrfField, type FieldErrors, layout, textField } from "../Layout.js"
import {
  allowancesThisPeriod,
  type AllowancesThisPeriod,
  allowanceValue,
  describeAllowance,
  KEYWORD_REPLY_MODES,
  KEYWORD_TEXT_MAX,
  keywordTextValue,
  OPT_OUT_WORD_MAX,
  optOutWordsValue,
  sendingHoursChange,
  sendingHoursProblems
} from "../SendingRules.js"
import { notFoundPage } from "./NotFound.js"

interface RulesForm {
  readonly sendingHours: string
  readonly timezone: string
  /** Absent from a form posted without the field (an older page): the setting is then left as it is. */
  readonly recipientHours: string | undefined
  readonly aiCalls: boolean
  readonly smsAllowance: string
  readonly callAllowance: string
  /** `home`, `any` or region codes (`US, CA, GB`); undefined from a form without the destinations (an older page). */
  readonly destinationCountries: string | undefined
  readonly premiumNumbers: boolean
  readonly internationalNetworks: boolean
  readonly callsFollowOptOuts: boolean
  readonly optOutWords: string
  readonly keywordReplies: string
  readonly helpText: string
  readonly stopText: string
  readonly startText: string
}

const REPLY_MODE_LABELS: Record<Organisations.KeywordReplies, string> = {
  parley: "Parley answers, with the texts below",
  provider: "The provider answers (where it answers keywords itself, as carriers do on long codes)",
  off: "Nobody answers"
}

const isReplyMode = (value: string): value is Organisations.KeywordReplies => KEYWORD_REPLY_MODES.some((mode) => mode === value)

/** The three reply fields: name, label, which default shows in the hint. */
const REPLY_FIELDS = [
  { name: "stopText", label: "Reply to STOP", which: "stop" },
  { name: "startText", label: "Reply to START", which: "start" },
  { name: "helpText", label: "Reply to HELP", which: "help" }
] as const

const shown = (n: number | null) => (n === null ? "unlimited" : String(n))

/** The regions as the field takes them back: `home`, `any`, or `CA, GB, US`. */
const destinationsShown = (countries: ReadonlyArray<string> | null) =>
  countries === null ? "home" : countries.includes(Destinations.ANY_REGION) ? "any" : countries.join(", ")

const capitalised = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

const usageCard = (allowances: AllowancesThisPeriod) =>
  html`<section class="card" aria-labelledby="usage-title">
<h2 id="usage-title">This period</h2>
<dl>
<dt>Texts</dt><dd id="usage-sms">${describeAllowance(allowances.sms, allowances.since)}</dd>
<dt>AI calls</dt><dd id="usage-calls">${describeAllowance(allowances.calls, allowances.since)}</dd>
</dl>
<p class="hint">A period is a calendar month in ${allowances.timezone}: on the first of each month the allowances are whole again. A text counts when it is sent (one per SMS segment), an AI call when it is started; one cancelled before that never counts.</p>
</section>`

const rulesPage = (
  session: Session,
  organisationName: string,
  form: RulesForm,
  allowances: AllowancesThisPeriod,
  errors: FieldErrors,
  notice: string | undefined
) =>
  page(
    layout({
      title: "Sending rules",
      session,
      current: "/admin/rules",
      notice,
      alert: Object.keys(errors).length === 0 ? null : "Nothing was changed: see the fields marked below.",
      body: html`${usageCard(allowances)}
<form class="card" method="post" action="/admin/rules" novalidate>
${csrfField(session)}
${
        textField({
          name: "sendingHours",
          label: "Sending hours",
          value: form.sendingHours,
          errors,
          hint: "always, or windows such as Mon-Fri 09:00-17:00; Sat 10:00-14:00. Live texts and calls due outside them wait for the next opening."
        })
      }
${textField({ name: "timezone", label: "Time zone", value: form.timezone, errors, hint: "IANA name, such as Europe/Berlin." })}
${
        textField({
          name: "recipientHours",
          label: "Recipient-local hours",
          value: form.recipientHours ?? RecipientHours.OFF,
          errors,
          hint: "off, or a window such as 08:00-21:00 read on each recipient's own clock (the zone of the number's area code or country, else the time zone above). Live texts and calls wait outside it."
        })
      }
<fieldset><legend>AI calls</legend>
<label for="field-aiCalls"><input type="checkbox" id="field-aiCalls" name="aiCalls" value="on"${flag("checked", form.aiCalls)}>AI calls enabled</label>
</fieldset>
${
        textField({
          name: "smsAllowance",
          label: "Text allowance per month",
          value: form.smsAllowance,
          errors,
          hint: "SMS segments that may be sent each month: a whole number, or unlimited. A WhatsApp message uses one."
        })
      }
${
        textField({
          name: "callAllowance",
          label: "Call allowance per month",
          value: form.callAllowance,
          errors,
          hint: "AI calls that may be started each month: a whole number, or unlimited."
        })
      }
<fieldset><legend>Destinations</legend>
<p class="hint">Where texts and calls may go: closing the rest keeps SMS pumping and toll fraud out. A recipient the rules refuse is answered 403 DESTINATION_NOT_ALLOWED, and a queued one fails when it is due.</p>
${
        textField({
          name: "destinationCountries",
          label: "Regions",
          value: form.destinationCountries ?? "home",
          errors,
          hint: "home (the region of the number a text or call is sent from), any (every region), or ISO 3166 codes separated by commas, such as US, CA, GB."
        })
      }
<label for="field-premiumNumbers"><input type="checkbox" id="field-premiumNumbers" name="premiumNumbers" value="on"${
        flag("checked", form.premiumNumbers)
      }>Allow premium-rate and shared-cost numbers</label>
<label for="field-internationalNetworks"><input type="checkbox" id="field-internationalNetworks" name="internationalNetworks" value="on"${
        flag("checked", form.internationalNetworks)
      }>Allow international networks (+882, +883 and other non-geographic codes)</label>
</fieldset>
<fieldset><legend>Opt-out keywords</legend>
<p class="hint">A recipient who replies STOP (or another opt-out word) is not texted again; see the Opt-outs page.</p>
<label for="field-callsFollowOptOuts"><input type="checkbox" id="field-callsFollowOptOuts" name="callsFollowOptOuts" value="on"${
        flag("checked", form.callsFollowOptOuts)
      }>STOP also stops AI calls</label>
${
        textField({
          name: "optOutWords",
          label: "Own opt-out words",
          value: form.optOutWords,
          errors,
          hint: `Comma-separated, besides STOP and the standard words, such as ARRET, BAJA; each at most ${OPT_OUT_WORD_MAX} characters. Empty for none.`
        })
      }
${
        choices({
          name: "keywordReplies",
          legend: "Who answers STOP, START and HELP",
          type: "radio",
          errors,
          hint: "Each keyword gets one answer. Leave it to the provider where it answers them itself, so that nobody gets two.",
          items: KEYWORD_REPLY_MODES.map((mode) => ({ value: mode, label: REPLY_MODE_LABELS[mode], checked: form.keywordReplies === mode }))
        })
      }
${
        REPLY_FIELDS.map(({ label, name, which }) =>
          textField({
            name,
            label,
            value: form[name],
            errors,
            hint: `Sent when Parley answers; at most ${KEYWORD_TEXT_MAX} characters. Empty for the default: "${
              Consent.DEFAULT_KEYWORD_TEXTS[which].replace("{name}", organisationName)
            }"`
          })
        )
      }
</fieldset>
<button type="submit">Save sending rules</button>
</form>`
    }),
    { status: Object.keys(errors).length === 0 ? 200 : 400 }
  )

export const sendingRulesPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const org = yield* (yield* Organisations.Organisations).get(session.orgId)
    if (Option.isNone(org)) return notFoundPage(session, "The organisation is gone.")
    const o = org.value
    return rulesPage(session, o.name, {
      sendingHours: o.sendingHours,
      timezone: o.timezone,
      recipientHours: o.recipientHours ?? RecipientHours.OFF,
      aiCalls: o.aiCallsEnabled,
      smsAllowance: shown(o.smsAllowance),
      callAllowance: shown(o.callAllowance),
      destinationCountries: destinationsShown(o.destinationCountries),
      premiumNumbers: o.premiumNumbersAllowed,
      internationalNetworks: o.internationalNetworksAllowed,
      callsFollowOptOuts: o.callsFollowOptOuts ?? true,
      optOutWords: (o.optOutWords ?? []).join(", "),
      keywordReplies: o.keywordReplies ?? "provider",
      helpText: o.keywordTexts?.help ?? "",
      stopText: o.keywordTexts?.stop ?? "",
      startText: o.keywordTexts?.start ?? ""
    }, yield* allowancesThisPeriod(o), {}, request.query.get("done") === "saved" ? "Sending rules saved." : undefined)
  })

export const saveSendingRules = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const f = request.form
    const form: RulesForm = {
      sendingHours: f.get("sendingHours") ?? "",
      timezone: f.get("timezone") ?? "",
      recipientHours: f.get("recipientHours") ?? undefined,
      aiCalls: f.get("aiCalls") === "on",
      smsAllowance: f.get("smsAllowance") ?? "",
      callAllowance: f.get("callAllowance") ?? "",
      destinationCountries: f.get("destinationCountries") ?? undefined,
      premiumNumbers: f.get("premiumNumbers") === "on",
      internationalNetworks: f.get("internationalNetworks") === "on",
      callsFollowOptOuts: f.get("callsFollowOptOuts") === "on",
      optOutWords: f.get("optOutWords") ?? "",
      keywordReplies: f.get("keywordReplies") ?? "",
      helpText: f.get("helpText") ?? "",
      stopText: f.get("stopText") ?? "",
      startText: f.get("startText") ?? ""
    }
    const errors: Record<string, string> = {}
    const hours = sendingHoursChange(form.sendingHours, form.timezone)
    // Both fields' problems at once: the zone's error does not hide the spec's.
    for (const problem of sendingHoursProblems(form.sendingHours, form.timezone)) errors[problem.field] = problem.message
    const sms = allowanceValue(form.smsAllowance)
    if (Either.isLeft(sms)) errors["smsAllowance"] = sms.left
    const calls = allowanceValue(form.callAllowance)
    if (Either.isLeft(calls)) errors["callAllowance"] = calls.left
    const words = optOutWordsValue(form.optOutWords)
    if (Either.isLeft(words)) errors["optOutWords"] = words.left
    const recipientHours = form.recipientHours === undefined
      ? Either.right(undefined)
      : RecipientHours.parseRecipientHours(form.recipientHours.trim() === "" ? RecipientHours.OFF : form.recipientHours)
    if (Either.isLeft(recipientHours)) errors["recipientHours"] = recipientHours.left
    const countries = form.destinationCountries === undefined
      ? Either.right(undefined)
      : Destinations.parseCountries(form.destinationCountries)
    if (Either.isLeft(countries)) errors["destinationCountries"] = `${capitalised(countries.left)}.`
    // A form from before the keyword replies existed (an open tab) leaves them as they are.
    const mode = form.keywordReplies
    const keepsMode = !f.has("keywordReplies")
    const keepsTexts = ["helpText", "stopText", "startText"].every((name) => !f.has(name))
    if (!keepsMode && !isReplyMode(mode)) errors["keywordReplies"] = "Choose who answers keywords."
    const help = keywordTextValue(form.helpText)
    const stop = keywordTextValue(form.stopText)
    const start = keywordTextValue(form.startText)
    for (const [name, text] of [["helpText", help], ["stopText", stop], ["startText", start]] as const) {
      if (Either.isLeft(text)) errors[name] = text.left
    }
    if (
      Either.isLeft(hours) || Either.isLeft(sms) || Either.isLeft(calls) || Either.isLeft(words) || Either.isLeft(recipientHours) || Either.isLeft(countries) || (!keepsMode && !isReplyMode(mode)) ||
      Either.isLeft(help) || Either.isLeft(stop) || Either.isLeft(start)
    ) {
      const current = yield* (yield* Organisations.Organisations).get(session.orgId)
      if (Option.isNone(current)) return notFoundPage(session, "The organisation is gone.")
      return rulesPage(session, current.value.name, form, yield* allowancesThisPeriod(current.value), errors, undefined)
    }
    const updated = yield* (yield* Organisations.Organisations).update(session.orgId, {
      sendingHours: hours.right.sendingHours,
      timezone: hours.right.timezone,
      aiCallsEnabled: form.aiCalls,
      smsAllowance: sms.right,
      callAllowance: calls.right,
      callsFollowOptOuts: form.callsFollowOptOuts,
      optOutWords: words.right,
      ...(recipientHours.right === undefined ? {} : { recipientHours: recipientHours.right }),
      ...(countries.right === undefined ? {} : {
        destinationCountries: countries.right,
        premiumNumbersAllowed: form.premiumNumbers,
        internationalNetworksAllowed: form.internationalNetworks
      }),
      ...(isReplyMode(mode) ? { keywordReplies: mode } : {}),
      ...(keepsTexts ? {} : { keywordTexts: { help: help.right, stop: stop.right, start: start.right } })
    })
    if (Option.isNone(updated)) return notFoundPage(session, "The organisation is gone.")
    return redirect("/admin/rules?done=saved")
  })
