/** `parley orgs create | update | show | list`: organisations, their settings and this month's usage. */
import { Args, Command, Options } from "@effect/cli"
import { Consent, Crypto, Destinations, Organisations, RecipientHours } from "@parley/core/internal"
import {
  allowancesThisPeriod,
  type AllowancesThisPeriod,
  describeAllowance,
  KEYWORD_REPLY_MODES,
  keywordTextValue,
  sendingHoursChange
} from "../../admin/SendingRules.js"
import { Effect, Either, Option } from "effect"
import { allowance, csv, fail, fields, nonEmpty, nowIso, requireOrg } from "../Input.js"
import { json, optionalText, print, table } from "../Output.js"

const showAllowance = (n: number | null) => (n === null ? "unlimited" : String(n))
/** What `orgs create | update | show` print: the organisation, and with `--json` its usage beside its settings. */
const printOrg = (asJson: boolean, org: Organisations.Organisation) =>
  Effect.gen(function*() {
    const allowances = yield* allowancesThisPeriod(org)
    yield* print(asJson, { ...org, allowances }, () => describeOrg(org, allowances))
  })

const allowOrRefuse = (allowed: boolean) => (allowed ? "allowed" : "refused")

/**
 * What `orgs create` gives a new organisation: finite allowances, so a leaked key or a pumping attack spends
 * at most this much before an operator looks, and destinations as a new carrier account has them (the home
 * country only: here the sending line's region; no premium-rate numbers, no international networks).
 */
export const NEW_ORGANISATION_ALLOWANCES = { sms: 1_000, calls: 100 } as const

export const describeOrg = (org: Organisations.Organisation, allowances: AllowancesThisPeriod): string =>
  [
    `Organisation ${org.id} (${org.name})`,
    fields([
      ["subscription", org.subscriptionActive ? "active" : "inactive"],
      ["seat", org.seatActive ? "active" : "inactive"],
      ["pilot", org.pilotOpen ? "open" : "pending"],
      ["AI calls", org.aiCallsEnabled ? "on" : "off"],
      ["sending hours", `${org.sendingHours} (${org.timezone})`],
      ["recipient-local hours", org.recipientHours ?? RecipientHours.OFF],
      ["SMS allowance", `${describeAllowance(allowances.sms, allowances.since)}, segments per month`],
      ["call allowance", `${describeAllowance(allowances.calls, allowances.since)}, AI calls per month`],
      ["destinations", Destinations.showCountries(org.destinationCountries)],
      ["premium-rate numbers", allowOrRefuse(org.premiumNumbersAllowed)],
      ["international networks", allowOrRefuse(org.internationalNetworksAllowed)],
      ["STOP also stops calls", org.callsFollowOptOuts === false ? "off" : "on"],
      ["own opt-out words", (org.optOutWords ?? []).length === 0 ? "-" : (org.optOutWords ?? []).join(", ")],
      ["keyword replies", org.keywordReplies ?? "provider"],
      ...(org.keywordReplies === "parley"
        ? (["help", "stop", "start"] as const).map((which): readonly [string, string] => [
          `${which.toUpperCase()} reply`,
          Consent.keywordReply(org, which === "help" ? "help" : which === "stop" ? "opt_out" : "opt_in") ?? "-"
        ])
        : []),
      ["created", org.createdAt]
    ])
  ].join("\n")

const create = Command.make(
  "create",
  { json, name: Options.text("name").pipe(Options.withDescription("The organisation's name")) },
  ({ json, name }) =>
    Effect.gen(function*() {
      const organisations = yield* Organisations.Organisations
      const org: Organisations.Organisation = {
        id: Crypto.newId("org"),
        name: yield* nonEmpty("--name", name),
        ...Organisations.OPEN_ORGANISATION,
        smsAllowance: NEW_ORGANISATION_ALLOWANCES.sms,
        callAllowance: NEW_ORGANISATION_ALLOWANCES.calls,
        destinationCountries: null,
        premiumNumbersAllowed: false,
        internationalNetworksAllowed: false,
        botsManagementUrl: null,
        templatesManagementUrl: null,
        createdAt: yield* nowIso
      }
      yield* organisations.insert(org)
      yield* printOrg(json, org)
    })
).pipe(Command.withDescription(
  `Create an organisation (active, pilot open, AI calls on, always open; ${NEW_ORGANISATION_ALLOWANCES.sms} SMS ` +
    `segments and ${NEW_ORGANISATION_ALLOWANCES.calls} AI calls a month; destinations: the sending line's region only)`
))

const onOff = <A extends string, B extends string>(name: string, on: A, off: B, description: string) =>
  Options.choice(name, [on, off]).pipe(Options.withDescription(description), Options.optional)

const keywordText = (name: string, what: string) =>
  optionalText(name, `Parley's answer to ${what} with --keyword-replies parley; "" for the default, which names the organisation`)

const update = Command.make(
  "update",
  {
    json,
    org: Args.text({ name: "ORG" }).pipe(Args.withDescription("Organisation id (org_…)")),
    subscription: onOff("subscription", "active", "inactive", "Subscription state"),
    seat: onOff("seat", "active", "inactive", "Seat of the connected CRM account"),
    pilot: onOff("pilot", "open", "pending", "Pilot gate"),
    aiCalls: onOff("ai-calls", "on", "off", "AI calls"),
    sendingHours: optionalText("sending-hours", "`always` or windows such as \"Mon-Fri 09:00-17:00; Sat 10:00-14:00\""),
    timezone: optionalText("timezone", "IANA time zone of the sending hours, such as Europe/Berlin"),
    recipientHours: optionalText(
      "recipient-hours",
      "Quiet hours on each recipient's own clock, such as 08:00-21:00 (live texts and calls wait outside them), or off"
    ),
    smsAllowance: optionalText("sms-allowance", "SMS segments per month (in the organisation's time zone): N or unlimited"),
    callAllowance: optionalText("call-allowance", "AI calls per month (in the organisation's time zone): N or unlimited"),
    destinations: optionalText("destinations", "Regions texts and calls may go to: ISO codes such as US,CA,GB, or home (the sending line's)"),
    premiumNumbers: onOff("premium-numbers", "allow", "refuse", "Premium-rate and shared-cost numbers"),
    internationalNetworks: onOff(
      "international-networks",
      "allow",
      "refuse",
      "International networks (non-geographic codes such as +882, +883, +979)"
    ),
    optOutCalls: onOff("opt-out-calls", "on", "off", "Whether a STOP reply also stops AI calls to the number (default on)"),
    optOutWords: optionalText("opt-out-words", "The organisation's own opt-out words besides STOP and the standard ones, comma-separated (ARRET,BAJA); \"\" for none"),
    keywordReplies: Options.choice("keyword-replies", KEYWORD_REPLY_MODES).pipe(
      Options.withDescription(
        "Who answers STOP, START and HELP: parley (Parley sends the texts below), provider (the carrier does, as " +
          "as carriers do on long codes; the default) or off"
      ),
      Options.optional
    ),
    helpText: keywordText("help-text", "HELP and INFO"),
    stopText: keywordText("stop-text", "an opt-out word"),
    startText: keywordText("start-text", "START, UNSTOP and YES")
  },
  (input) =>
    Effect.gen(function*() {
      const current = yield* requireOrg(input.org)
      const patch: { -readonly [K in keyof Organisations.OrganisationPatch]: Organisations.OrganisationPatch[K] } = {}
      if (Option.isSome(input.subscription)) patch.subscriptionActive = input.subscription.value === "active"
      if (Option.isSome(input.seat)) patch.seatActive = input.seat.value === "active"
      if (Option.isSome(input.pilot)) patch.pilotOpen = input.pilot.value === "open"
      if (Option.isSome(input.aiCalls)) patch.aiCallsEnabled = input.aiCalls.value === "on"
      if (Option.isSome(input.sendingHours) || Option.isSome(input.timezone)) {
        const spec = Option.getOrElse(input.sendingHours, () => current.sendingHours)
        const zone = Option.getOrElse(input.timezone, () => current.timezone)
        const change = sendingHoursChange(spec, zone)
        if (Either.isLeft(change)) {
          const flag = change.left.field === "timezone" ? `--timezone "${zone}"` : `--sending-hours "${spec}"`
          return yield* fail(`Invalid ${flag}: ${change.left.message}`)
        }
        patch.sendingHours = change.right.sendingHours
        patch.timezone = change.right.timezone
      }
      if (Option.isSome(input.recipientHours)) {
        const hours = RecipientHours.parseRecipientHours(input.recipientHours.value)
        if (Either.isLeft(hours)) return yield* fail(`Invalid --recipient-hours "${input.recipientHours.value}": ${hours.left}`)
        patch.recipientHours = hours.right
      }
      if (Option.isSome(input.smsAllowance)) {
        patch.smsAllowance = yield* allowance("--sms-allowance", input.smsAllowance.value)
      }
      if (Option.isSome(input.callAllowance)) {
        patch.callAllowance = yield* allowance("--call-allowance", input.callAllowance.value)
      }
      if (Option.isSome(input.destinations)) {
        const countries = Destinations.parseCountries(input.destinations.value)
        if (Either.isLeft(countries)) return yield* fail(`Invalid --destinations "${input.destinations.value}": ${countries.left}`)
        patch.destinationCountries = countries.right
      }
      if (Option.isSome(input.premiumNumbers)) patch.premiumNumbersAllowed = input.premiumNumbers.value === "allow"
      if (Option.isSome(input.internationalNetworks)) {
        patch.internationalNetworksAllowed = input.internationalNetworks.value === "allow"
      }
      if (Option.isSome(input.optOutCalls)) patch.callsFollowOptOuts = input.optOutCalls.value === "on"
      if (Option.isSome(input.optOutWords)) {
        const words = csv(input.optOutWords.value)
        const tooLong = words.find((word) => word.length > 40)
        if (tooLong !== undefined) return yield* fail(`--opt-out-words: "${tooLong}" is longer than 40 characters`)
        patch.optOutWords = words
      }
      if (Option.isSome(input.keywordReplies)) patch.keywordReplies = input.keywordReplies.value
      const texts = { help: input.helpText, stop: input.stopText, start: input.startText }
      if (Object.values(texts).some(Option.isSome)) {
        const written = { ...(current.keywordTexts ?? { help: null, stop: null, start: null }) }
        for (const which of ["help", "stop", "start"] as const) {
          const given = texts[which]
          if (Option.isNone(given)) continue
          const text = keywordTextValue(given.value)
          if (Either.isLeft(text)) return yield* fail(`--${which}-text: ${text.left}`)
          written[which] = text.right
        }
        patch.keywordTexts = written
      }
      if (Object.keys(patch).length === 0) {
        return yield* fail(
          "Nothing to update: give at least one of --subscription, --seat, --pilot, --ai-calls, --sending-hours, " +
            "--timezone, --recipient-hours, --sms-allowance, --call-allowance, --destinations, --premium-numbers, --international-networks, " +
            "--opt-out-calls, --opt-out-words, --keyword-replies, --help-text, --stop-text, --start-text"
        )
      }
      const organisations = yield* Organisations.Organisations
      const updated = yield* organisations.update(input.org, patch)
      if (Option.isNone(updated)) return yield* fail(`Unknown organisation "${input.org}"`)
      yield* printOrg(input.json, updated.value)
    })
).pipe(Command.withDescription("Change an organisation's access state, sending hours, recipient-local hours, AI settings, allowances, destination rules or keyword settings"))

const show = Command.make(
  "show",
  { json, org: Args.text({ name: "ORG" }).pipe(Args.withDescription("Organisation id (org_…)")) },
  ({ json, org }) => Effect.flatMap(requireOrg(org), (found) => printOrg(json, found))
).pipe(Command.withDescription("Show an organisation's settings and what it used of its allowances this month"))

const usedOf = (allowance: { readonly used: number; readonly limit: number | null }) =>
  `${allowance.used}/${showAllowance(allowance.limit)}`

const list = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function*() {
    const organisations = yield* Organisations.Organisations
    const orgs = yield* Effect.forEach(
      yield* organisations.list,
      (org) => Effect.map(allowancesThisPeriod(org), (allowances) => ({ ...org, allowances }))
    )
    yield* print(json, { items: orgs }, () =>
      orgs.length === 0
        ? "No organisations yet: create one with `parley orgs create --name NAME`."
        : table([
          ["ID", "NAME", "SUBSCRIPTION", "SEAT", "PILOT", "AI CALLS", "SENDING HOURS", "SMS USED", "CALLS USED"],
          ...orgs.map((o) => [
            o.id,
            o.name,
            o.subscriptionActive ? "active" : "inactive",
            o.seatActive ? "active" : "inactive",
            o.pilotOpen ? "open" : "pending",
            o.aiCallsEnabled ? "on" : "off",
            `${o.sendingHours} (${o.timezone})`,
            usedOf(o.allowances.sms),
            usedOf(o.allowances.calls)
          ])
        ]))
  })).pipe(Command.withDescription("List organisations"))

export const orgs = Command.make("orgs").pipe(
  Command.withDescription("Organisations and their settings"),
  Command.withSubcommands([create, update, show, list])
)
