/**
 * Port: the organisations Parley serves and their settings — access state,
 * sending hours, allowances, AI settings — with their sender numbers and bots.
 * The server gives it SQLite and Postgres layers; the memory layer is beside it.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { StorageError } from "./StorageError.js"

export interface Organisation {
  readonly id: string
  readonly name: string
  readonly subscriptionActive: boolean
  readonly seatActive: boolean
  readonly pilotOpen: boolean
  readonly aiCallsEnabled: boolean
  /** IANA time zone of the sending hours. */
  readonly timezone: string
  /** Sending-hours spec (see SendingHours); `always` when unrestricted. */
  readonly sendingHours: string
  /**
   * Text segments that may be sent per period (a calendar month in `timezone`; see AllowancePeriods), a long
   * SMS counting each of its segments (see Segments); null means unlimited.
   */
  readonly smsAllowance: number | null
  /** AI calls that may be started per period; null means unlimited. */
  readonly callAllowance: number | null
  /** Regions texts and calls may go to (ISO 3166, `US`); null: the sending line's own region (see Destinations). */
  readonly destinationCountries: ReadonlyArray<string> | null
  /** Whether premium-rate and shared-cost numbers may be texted or called. */
  readonly premiumNumbersAllowed: boolean
  /** Whether international networks (non-geographic codes: +882, +883, +979…) may be texted or called. */
  readonly internationalNetworksAllowed: boolean
  /**
   * Whether a keyword opt-out (STOP) also stops AI calls to the number; absent means yes (see Consent).
   */
  readonly callsFollowOptOuts?: boolean | undefined
  /** The organisation's own opt-out words besides the standard ones (`ARRET`, `BAJA`); absent means none. */
  readonly optOutWords?: ReadonlyArray<string> | undefined
  /**
   * Recipient-local quiet hours: a window (`08:00-21:00`) read on each recipient's clock, outside which live
   * texts and calls are held (see RecipientHours); absent or null means off.
   */
  readonly recipientHours?: string | null | undefined
  /**
   * Who answers the keywords (STOP, START, HELP and the organisation's own words): Parley itself, the provider
   * (Twilio's Advanced Opt-Out does on long codes), or nobody; absent means `provider` (see Consent).
   */
  readonly keywordReplies?: KeywordReplies | undefined
  /** The organisation's own reply texts, when Parley answers; absent or null: Consent's defaults. */
  readonly keywordTexts?: KeywordTexts | undefined
  readonly botsManagementUrl: string | null
  readonly templatesManagementUrl: string | null
  readonly createdAt: string
}

/**
 * An organisation open for business with no restriction on when it sends: what the demo, `parley orgs
 * create` and the tests start from (each then sets its own name, allowances and limits).
 */
export const OPEN_ORGANISATION = {
  subscriptionActive: true,
  seatActive: true,
  pilotOpen: true,
  aiCallsEnabled: true,
  timezone: "UTC",
  sendingHours: "always"
} as const satisfies Partial<Organisation>

export type KeywordReplies = "parley" | "provider" | "off"

export interface KeywordTexts {
  readonly help: string | null
  readonly stop: string | null
  readonly start: string | null
}

export interface NumberRow {
  readonly orgId: string
  readonly sid: string
  readonly phoneNumber: string
  readonly friendlyName: string
  readonly sms: boolean
  readonly voice: boolean
  readonly whatsApp: boolean
  readonly voiceOutboundBotId: string | null
  /** The number's ids at the real providers (the Twilio phone number sid PN…, the Vapi phone number id). */
  readonly providerIds?: ReadonlyArray<string> | undefined
}

export interface BotRow {
  readonly orgId: string
  readonly id: string
  readonly name: string
  readonly description: string | null
  readonly active: boolean
  readonly direction: "outbound" | "inbound"
  /** The bot's id at the AI-call provider (the Vapi assistant id). */
  readonly providerId?: string | null | undefined
}

export type OrganisationPatch = Partial<Omit<Organisation, "id" | "createdAt">>
export type AllowanceKind = "sms" | "call"

/** What an organisation used in one period (`YYYY-MM`, see AllowancePeriods): text segments and AI calls. */
export interface AllowanceUsage {
  readonly period: string
  readonly sms: number
  readonly calls: number
}

export interface OrganisationsService {
  readonly insert: (org: Organisation) => Effect.Effect<void, StorageError>
  readonly get: (orgId: string) => Effect.Effect<Option.Option<Organisation>, StorageError>
  readonly list: Effect.Effect<ReadonlyArray<Organisation>, StorageError>
  readonly update: (orgId: string, patch: OrganisationPatch) => Effect.Effect<Option.Option<Organisation>, StorageError>
  /**
   * Take `units` of an allowance in `period` atomically (a text takes its segments), counting them as used.
   * False when fewer are left; an unlimited allowance always succeeds (and counts).
   */
  readonly takeAllowance: (
    orgId: string,
    kind: AllowanceKind,
    units: number,
    period: string
  ) => Effect.Effect<boolean, StorageError>
  /** What the organisation used in `period` (nothing when it sent nothing then). */
  readonly usage: (orgId: string, period: string) => Effect.Effect<AllowanceUsage, StorageError>
  readonly upsertNumber: (row: NumberRow) => Effect.Effect<void, StorageError>
  readonly listNumbers: (orgId: string) => Effect.Effect<ReadonlyArray<NumberRow>, StorageError>
  /** Every organisation's number with this phone (the carrier's inbound webhook knows only the number). */
  readonly findNumbersByPhone: (phoneNumber: string) => Effect.Effect<ReadonlyArray<NumberRow>, StorageError>
  readonly upsertBot: (row: BotRow) => Effect.Effect<void, StorageError>
  readonly listBots: (orgId: string) => Effect.Effect<ReadonlyArray<BotRow>, StorageError>
}

export class Organisations extends Context.Tag("@parley/core/ports/Organisations")<
  Organisations,
  OrganisationsService
>() {}

const byName = <A extends { readonly phoneNumber?: string; readonly name?: string }>(a: A, b: A) =>
  (a.phoneNumber ?? a.name ?? "").localeCompare(b.phoneNumber ?? b.name ?? "")

/** In-memory organisations, for tests and for embedding the core without a database. */
export const layerMemory: Layer.Layer<Organisations> = Layer.effect(
  Organisations,
  Effect.gen(function*() {
    const orgs = yield* Ref.make(new Map<string, Organisation>())
    const numbers = yield* Ref.make(new Map<string, NumberRow>())
    const bots = yield* Ref.make(new Map<string, BotRow>())
    const usages = yield* Ref.make(new Map<string, AllowanceUsage>())
    const keyOf = (orgId: string, id: string) => `${orgId}\u0000${id}`
    return Organisations.of({
      insert: (org) => Ref.update(orgs, (m) => new Map(m).set(org.id, org)),
      get: (orgId) => Effect.map(Ref.get(orgs), (m) => Option.fromNullable(m.get(orgId))),
      list: Effect.map(Ref.get(orgs), (m) => [...m.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt))),
      update: (orgId, patch) =>
        Ref.modify(orgs, (m) => {
          const current = m.get(orgId)
          if (current === undefined) return [Option.none(), m]
          const next: Organisation = { ...current, ...patch }
          return [Option.some(next), new Map(m).set(orgId, next)]
        }),
      takeAllowance: (orgId, kind, units, period) =>
        Effect.flatMap(Ref.get(orgs), (m) => {
          const current = m.get(orgId)
          if (current === undefined) return Effect.succeed(false)
          return Ref.modify(usages, (u) => {
            const used = u.get(keyOf(orgId, period)) ?? { period, sms: 0, calls: 0 }
            const limit = kind === "sms" ? current.smsAllowance : current.callAllowance
            const spent = kind === "sms" ? used.sms : used.calls
            if (limit !== null && limit - spent < units) return [false, u]
            const next = kind === "sms" ? { ...used, sms: used.sms + units } : { ...used, calls: used.calls + units }
            return [true, new Map(u).set(keyOf(orgId, period), next)]
          })
        }),
      usage: (orgId, period) =>
        Effect.map(Ref.get(usages), (u) => u.get(keyOf(orgId, period)) ?? { period, sms: 0, calls: 0 }),
      upsertNumber: (row) => Ref.update(numbers, (m) => new Map(m).set(keyOf(row.orgId, row.sid), row)),
      listNumbers: (orgId) =>
        Effect.map(Ref.get(numbers), (m) => [...m.values()].filter((n) => n.orgId === orgId).sort(byName)),
      findNumbersByPhone: (phoneNumber) =>
        Effect.map(Ref.get(numbers), (m) => [...m.values()].filter((n) => n.phoneNumber === phoneNumber)),
      upsertBot: (row) => Ref.update(bots, (m) => new Map(m).set(keyOf(row.orgId, row.id), row)),
      listBots: (orgId) => Effect.map(Ref.get(bots), (m) => [...m.values()].filter((b) => b.orgId === orgId).sort(byName))
    })
  })
)
