/**
 * Consent: a recipient who said STOP is not texted or called again until they say START.
 *
 * - Keywords are matched on the whole inbound text, trimmed, in any case, with trailing punctuation
 *   ignored (`Stop.`, `stop!`): the CTIA's opt-out words and the FCC's 2025 revocation words
 *   (`STOP`, `STOPALL`, `UNSUBSCRIBE`, `CANCEL`, `END`, `QUIT`, `REVOKE`, `OPT OUT`, `OPTOUT`), plus the
 *   organisation's own (`ARRET`, `BAJA`…); `START` and `UNSTOP` opt back in, and so does `YES` when the
 *   number is opted out (otherwise a YES is an ordinary reply); `HELP` and `INFO` ask for help.
 * - A keyword opt-out covers SMS and WhatsApp from every number of the organisation, and AI calls unless
 *   the organisation turned that off (`callsFollowOptOuts`): an AI call is an artificial-voice call, which
 *   the FCC's rules treat as a robocall, and a person who told a business to stop texting them does not
 *   expect its robot to ring instead.
 * - Every creation (live and test keys alike, so integrations can test the path) and every dispatch asks
 *   `check`/`decide` before anything is queued or handed to a provider.
 * - Every change of the list appends `optout.created` (the entry now in force) or `optout.deleted` (the entry
 *   removed) to the event outbox, in the unit of work of the change.
 * - Who answers a keyword is the organisation's choice (`keywordReplies`): the provider (Twilio's Advanced
 *   Opt-Out does on long codes; the default, so that a recipient never gets two confirmations), Parley
 *   (`keywordReply`: the organisation's text or the default naming it), or nobody.
 */
import { Context, Effect, Layer, Option } from "effect"
import { RecipientOptedOut } from "../contract/Errors.js"
import { ALL_OPT_OUT_CHANNELS, type OptOutChannel, type OptOutSource } from "../contract/OptOuts.js"
import type { ActionKind } from "../ports/ActionStore.js"
import { EventOutbox } from "../ports/EventOutbox.js"
import { type OptOutEntry, OptOuts } from "../ports/OptOuts.js"
import type { KeywordTexts, Organisation } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { emitOptOut } from "./Events.js"

export const OPT_OUT_WORDS: ReadonlyArray<string> = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPT OUT", "OPTOUT"]
export const OPT_IN_WORDS: ReadonlyArray<string> = ["START", "UNSTOP"]
/** Opts back in only a number that is opted out; otherwise it is a reply like any other. */
export const CONDITIONAL_OPT_IN_WORDS: ReadonlyArray<string> = ["YES"]
export const HELP_WORDS: ReadonlyArray<string> = ["HELP", "INFO"]

export type Keyword = "opt_out" | "opt_in" | "opt_in_if_opted_out" | "help"

/** The text as keywords are compared: trimmed, trailing punctuation dropped, inner spaces single, upper case. */
export const normalise = (text: string): string =>
  text.normalize("NFC").trim().replace(/[\s\p{P}]+$/u, "").replace(/\s+/g, " ").toLocaleUpperCase("und")

/** The keyword an inbound text is, if it is one (the organisation's own words count as opt-outs). */
export const keywordOf = (text: string, organisation: Pick<Organisation, "optOutWords">): Keyword | null => {
  const said = normalise(text)
  if (said === "") return null
  if (OPT_OUT_WORDS.includes(said) || (organisation.optOutWords ?? []).some((word) => normalise(word) === said)) {
    return "opt_out"
  }
  if (OPT_IN_WORDS.includes(said)) return "opt_in"
  if (CONDITIONAL_OPT_IN_WORDS.includes(said)) return "opt_in_if_opted_out"
  if (HELP_WORDS.includes(said)) return "help"
  return null
}

/** The reply each keyword gets when Parley answers and the organisation wrote none (`{name}`: its name). */
export const DEFAULT_KEYWORD_TEXTS: { readonly [K in keyof KeywordTexts]: string } = {
  help: "{name}: Reply STOP to opt out, START to opt back in.",
  stop: "{name}: You will receive no more messages. Reply START to opt back in.",
  start: "{name}: You will receive messages again. Reply STOP to opt out."
}

/** Which of the organisation's texts answers a keyword that was acted on. */
const TEXT_OF: Record<Keyword, keyof KeywordTexts> = { opt_out: "stop", opt_in: "start", opt_in_if_opted_out: "start", help: "help" }

/**
 * Parley's answer to a keyword it acted on (`fromInbound`'s answer), or null when the organisation leaves
 * keywords to the provider or to nobody.
 */
export const keywordReply = (
  organisation: Pick<Organisation, "name" | "keywordReplies" | "keywordTexts">,
  keyword: Keyword | null
): string | null => {
  if (keyword === null || organisation.keywordReplies !== "parley") return null
  const which = TEXT_OF[keyword]
  return organisation.keywordTexts?.[which] ?? DEFAULT_KEYWORD_TEXTS[which].replace("{name}", organisation.name)
}

/** The channel an action reaches its recipient on. */
export const channelOf = (kind: ActionKind, type: string): OptOutChannel =>
  kind === "ai_call" ? "Call" : type === "WhatsApp" ? "WhatsApp" : "SMS"

/** What a keyword opt-out covers for this organisation. */
export const keywordChannels = (organisation: Pick<Organisation, "callsFollowOptOuts">): ReadonlyArray<OptOutChannel> =>
  organisation.callsFollowOptOuts === false ? ["SMS", "WhatsApp"] : ["SMS", "WhatsApp", "Call"]

const CHANNEL_WORDS: Record<OptOutChannel, string> = { SMS: "SMS texts", WhatsApp: "WhatsApp messages", Call: "AI calls" }
const SOURCE_WORDS: Record<OptOutSource, string> = {
  keyword: "by replying with an opt-out keyword",
  carrier: "as the carrier reported (unsubscribed)",
  api: "through the API",
  console: "by an administrator in the console",
  crm: "on the CRM record",
  cli: "by an administrator with the CLI"
}

/** Why the entry stops a send on `channel`, in plain words; null when it does not cover the channel. */
export const refusal = (entry: OptOutEntry | undefined, channel: OptOutChannel): string | null =>
  entry === undefined || !entry.channels.includes(channel)
    ? null
    : `${entry.phone} opted out of ${CHANNEL_WORDS[channel]} on ${entry.createdAt} ${SOURCE_WORDS[entry.source]}` +
      (entry.cause === null ? "" : ` (${entry.cause})`) + "."

export interface ConsentService {
  /** Fails with RECIPIENT_OPTED_OUT when the number opted out of the channel. */
  readonly check: (
    orgId: string,
    phone: string,
    channel: OptOutChannel
  ) => Effect.Effect<void, RecipientOptedOut | StorageError>
  /**
   * What an inbound text does to its sender's consent, recorded in the caller's unit of work: an opt-out
   * keyword records one (source `keyword`, caused by the inbound message), an opt-in removes the entry.
   * Answers the keyword acted on, if any.
   */
  /**
   * Records an opt-out (all channels when none are named). Recording what is already recorded changes
   * nothing, so the call is idempotent; answers the entry in force and whether it changed.
   */
  readonly optOut: (
    orgId: string,
    phone: string,
    request: { readonly channels?: ReadonlyArray<OptOutChannel> | undefined; readonly reason?: string | null | undefined },
    by: ChangedBy
  ) => Effect.Effect<{ readonly entry: OptOutEntry; readonly changed: boolean }, StorageError>
  /** Lifts the number's opt-out (the number may be texted and called again), within the rule of OptInRefusal. */
  readonly optIn: (
    orgId: string,
    phone: string,
    by: ChangedBy
  ) => Effect.Effect<OptOutEntry, OptInRefusal | StorageError>
  /**
   * A carrier refused a send because the recipient unsubscribed there (a provider's `unsubscribed` refusal): the number is opted out
   * of the action's channel (added to what it had), source `carrier`, caused by the action.
   */
  readonly fromCarrier: (
    orgId: string,
    phone: string,
    refused: { readonly actionId: string; readonly channel: OptOutChannel; readonly message: string; readonly at: string }
  ) => Effect.Effect<void, StorageError>
  /**
   * The CRM record a send links says its person opted out (a hosted CRM's opt-out checkbox, ticked by an
   * administrator there): the number is opted out of those channels (added to what it had), source `crm`,
   * caused by the record.
   */
  readonly fromCrm: (
    orgId: string,
    phone: string,
    marked: { readonly channels: ReadonlyArray<OptOutChannel>; readonly record: string; readonly at: string }
  ) => Effect.Effect<OptOutEntry, StorageError>
  readonly fromInbound: (
    organisation: Organisation,
    message: { readonly from: string; readonly body: string; readonly messageId: string; readonly at: string }
  ) => Effect.Effect<Keyword | null, StorageError>
}

/** Who asks to change the list, and on what authority: the recipient's own keyword, an administrator, a key. */
export interface ChangedBy {
  readonly source: OptOutSource
  /** The inbound message, key or administrator, as history and `cause` show it. */
  readonly cause: string | null
  readonly at: string
}

export type OptInRefusal =
  | { readonly _tag: "NotOptedOut" }
  /** A carrier's opt-out: lifted only by the recipient's own START or an administrator, never by a key. */
  | { readonly _tag: "CarrierOptOut"; readonly entry: OptOutEntry }

export class Consent extends Context.Tag("@parley/core/Consent")<Consent, ConsentService>() {}

export const layer: Layer.Layer<Consent, never, OptOuts | EventOutbox | UnitOfWork> = Layer.effect(
  Consent,
  Effect.gen(function*() {
    const store = yield* OptOuts
    const outbox = yield* Effect.context<EventOutbox>()
    const unitOfWork = yield* UnitOfWork
    /** The store, each change with its event in one unit of work (joined to the caller's where one is open). */
    const optOuts = {
      find: store.find,
      record: (entry: OptOutEntry) =>
        unitOfWork.atomically(Effect.zipRight(store.record(entry), Effect.provide(emitOptOut("optout.created", entry), outbox))),
      remove: (orgId: string, phone: string, by: Parameters<typeof store.remove>[2]) =>
        unitOfWork.atomically(Effect.tap(store.remove(orgId, phone, by), (removed) =>
          Option.match(removed, {
            onNone: () => Effect.void,
            onSome: (entry) => Effect.provide(emitOptOut("optout.deleted", entry), outbox)
          })))
    }
    return Consent.of({
      check: (orgId, phone, channel) =>
        Effect.flatMap(optOuts.find(orgId, phone), (found) => {
          const why = refusal(Option.getOrUndefined(found), channel)
          return why === null ? Effect.void : Effect.fail(new RecipientOptedOut({ message: `to: ${why}` }))
        }),
      optOut: (orgId, phone, request, by) =>
        Effect.gen(function*() {
          const wanted = new Set(request.channels === undefined || request.channels.length === 0 ? ALL_OPT_OUT_CHANNELS : request.channels)
          const channels = ALL_OPT_OUT_CHANNELS.filter((channel) => wanted.has(channel))
          const reason = request.reason ?? null
          const current = Option.getOrUndefined(yield* optOuts.find(orgId, phone))
          if (
            current !== undefined && current.channels.join(",") === channels.join(",") &&
            current.source === by.source && current.reason === reason
          ) return { entry: current, changed: false }
          const entry: OptOutEntry = { orgId, phone, channels, source: by.source, reason, cause: by.cause, createdAt: by.at }
          yield* optOuts.record(entry)
          return { entry, changed: true }
        }),
      optIn: (orgId, phone, by) =>
        Effect.gen(function*() {
          const current = Option.getOrUndefined(yield* optOuts.find(orgId, phone))
          if (current === undefined) return yield* Effect.fail<OptInRefusal>({ _tag: "NotOptedOut" })
          if (current.source === "carrier" && by.source === "api") {
            return yield* Effect.fail<OptInRefusal>({ _tag: "CarrierOptOut", entry: current })
          }
          const removed = yield* optOuts.remove(orgId, phone, by)
          return Option.getOrElse(removed, () => current)
        }),
      fromCarrier: (orgId, phone, refused) =>
        Effect.flatMap(optOuts.find(orgId, phone), (found) => {
          const current = Option.getOrUndefined(found)
          if (current?.source === "carrier" && current.channels.includes(refused.channel)) return Effect.void
          const covered = new Set<OptOutChannel>([...(current?.channels ?? []), refused.channel])
          return optOuts.record({
            orgId,
            phone,
            channels: ALL_OPT_OUT_CHANNELS.filter((channel) => covered.has(channel)),
            source: "carrier",
            reason: refused.message,
            cause: `action ${refused.actionId}`,
            createdAt: refused.at
          })
        }),
      fromCrm: (orgId, phone, marked) =>
        Effect.gen(function*() {
          const current = Option.getOrUndefined(yield* optOuts.find(orgId, phone))
          const covered = new Set<OptOutChannel>([...(current?.channels ?? []), ...marked.channels])
          const entry: OptOutEntry = {
            orgId,
            phone,
            channels: ALL_OPT_OUT_CHANNELS.filter((channel) => covered.has(channel)),
            source: "crm",
            reason: null,
            cause: marked.record,
            createdAt: marked.at
          }
          if (current !== undefined && current.channels.join(",") === entry.channels.join(",")) return current
          yield* optOuts.record(entry)
          return entry
        }),
      fromInbound: (organisation, message) =>
        Effect.gen(function*() {
          const keyword = keywordOf(message.body, organisation)
          if (keyword === null || keyword === "help") return keyword
          const current = Option.getOrUndefined(yield* optOuts.find(organisation.id, message.from))
          if (keyword === "opt_out") {
            const channels = keywordChannels(organisation)
            const covered = new Set<OptOutChannel>([...(current?.channels ?? []), ...channels])
            yield* optOuts.record({
              orgId: organisation.id,
              phone: message.from,
              channels: ALL_OPT_OUT_CHANNELS.filter((channel) => covered.has(channel)),
              source: "keyword",
              reason: normalise(message.body),
              cause: `inbound message ${message.messageId}`,
              createdAt: message.at
            })
            return keyword
          }
          if (current === undefined) return keyword === "opt_in" ? keyword : null
          yield* optOuts.remove(organisation.id, message.from, {
            source: "keyword",
            cause: `inbound message ${message.messageId}`,
            at: message.at
          })
          return keyword
        })
    })
  })
)
