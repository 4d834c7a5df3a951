/** Organisations, their numbers and bots, in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Organisations } from "@parley/core/domain"
import { AllowancePeriods } from "@parley/core/internal"
import { Effect, Layer, Option, Schema } from "effect"
import { bool, DbBool, DbInt, DbJson, NullableString, storage, StringArrayJson } from "./rows.js"
import { SettingsCache } from "./SettingsCache.js"

export const OrganisationRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  subscription_active: DbBool,
  seat_active: DbBool,
  pilot_open: DbBool,
  ai_calls_enabled: DbBool,
  timezone: Schema.String,
  sending_hours: Schema.String,
  sms_allowance: Schema.NullOr(DbInt),
  call_allowance: Schema.NullOr(DbInt),
  destination_countries: NullableString,
  premium_numbers_allowed: DbBool,
  international_networks_allowed: DbBool,
  // Migration 0035: absent from a row read by a release from before it (a rolling deploy).
  calls_follow_opt_outs: Schema.optionalWith(DbBool, { default: () => true }),
  opt_out_words: Schema.optionalWith(StringArrayJson, { default: () => [] }),
  // Migration 0037, likewise.
  recipient_hours: Schema.optionalWith(NullableString, { default: () => null }),
  // Migration 0036, likewise.
  keyword_replies: Schema.optionalWith(Schema.Literal("parley", "provider", "off"), { default: () => "provider" as const }),
  help_text: Schema.optionalWith(NullableString, { default: () => null }),
  stop_text: Schema.optionalWith(NullableString, { default: () => null }),
  start_text: Schema.optionalWith(NullableString, { default: () => null }),
  bots_management_url: NullableString,
  templates_management_url: NullableString,
  created_at: Schema.String
})

export const toOrganisation = (row: typeof OrganisationRow.Type): Organisations.Organisation => ({
  id: row.id,
  name: row.name,
  subscriptionActive: row.subscription_active,
  seatActive: row.seat_active,
  pilotOpen: row.pilot_open,
  aiCallsEnabled: row.ai_calls_enabled,
  timezone: row.timezone,
  sendingHours: row.sending_hours,
  smsAllowance: row.sms_allowance,
  callAllowance: row.call_allowance,
  destinationCountries: row.destination_countries === null ? null : row.destination_countries.split(","),
  premiumNumbersAllowed: row.premium_numbers_allowed,
  internationalNetworksAllowed: row.international_networks_allowed,
  callsFollowOptOuts: row.calls_follow_opt_outs,
  optOutWords: row.opt_out_words,
  recipientHours: row.recipient_hours,
  keywordReplies: row.keyword_replies,
  keywordTexts: { help: row.help_text, stop: row.stop_text, start: row.start_text },
  botsManagementUrl: row.bots_management_url,
  templatesManagementUrl: row.templates_management_url,
  createdAt: row.created_at
})

const fromOrganisation = (org: Organisations.Organisation) => ({
  id: org.id,
  name: org.name,
  subscription_active: bool(org.subscriptionActive),
  seat_active: bool(org.seatActive),
  pilot_open: bool(org.pilotOpen),
  ai_calls_enabled: bool(org.aiCallsEnabled),
  timezone: org.timezone,
  sending_hours: org.sendingHours,
  sms_allowance: org.smsAllowance,
  call_allowance: org.callAllowance,
  destination_countries: org.destinationCountries === null ? null : org.destinationCountries.join(","),
  premium_numbers_allowed: bool(org.premiumNumbersAllowed),
  international_networks_allowed: bool(org.internationalNetworksAllowed),
  calls_follow_opt_outs: bool(org.callsFollowOptOuts ?? true),
  opt_out_words: JSON.stringify(org.optOutWords ?? []),
  recipient_hours: org.recipientHours ?? null,
  keyword_replies: org.keywordReplies ?? "provider",
  help_text: org.keywordTexts?.help ?? null,
  stop_text: org.keywordTexts?.stop ?? null,
  start_text: org.keywordTexts?.start ?? null,
  bots_management_url: org.botsManagementUrl,
  templates_management_url: org.templatesManagementUrl,
  created_at: org.createdAt
})

/** One organisation's usage in one period (`allowance_usage`, migration 0021). */
export const UsageRow = Schema.Struct({ sms_used: DbInt, call_used: DbInt })

/** Counts units as used in `period`; the caller holds the organisation's row lock. */
export const addAllowanceUsage = (sql: SqlClient.SqlClient, orgId: string, period: string, sms: number, calls: number) =>
  sms === 0 && calls === 0 ? Effect.void : sql`INSERT INTO allowance_usage (org_id, period, sms_used, call_used)
    VALUES (${orgId}, ${period}, ${sms}, ${calls})
    ON CONFLICT (org_id, period) DO UPDATE SET sms_used = allowance_usage.sms_used + excluded.sms_used,
      call_used = allowance_usage.call_used + excluded.call_used`.pipe(Effect.asVoid)

const NumberRow = Schema.Struct({
  org_id: Schema.String,
  sid: Schema.String,
  phone_number: Schema.String,
  friendly_name: Schema.String,
  sms: DbBool,
  voice: DbBool,
  whatsapp: DbBool,
  voice_outbound_bot_id: NullableString,
  provider_ids: Schema.optionalWith(Schema.NullOr(DbJson(Schema.Array(Schema.String))), { default: () => null })
})

const BotRow = Schema.Struct({
  org_id: Schema.String,
  id: Schema.String,
  name: Schema.String,
  description: NullableString,
  active: DbBool,
  direction: Schema.Literal("outbound", "inbound"),
  provider_id: Schema.optionalWith(NullableString, { default: () => null })
})

export const layer = Layer.effect(
  Organisations.Organisations,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* SettingsCache

    const findOrg = SqlSchema.findOne({
      Request: Schema.String,
      Result: OrganisationRow,
      execute: (id) => sql`SELECT * FROM organisations WHERE id = ${id}`
    })
    const listOrgs = SqlSchema.findAll({
      Request: Schema.Void,
      Result: OrganisationRow,
      execute: () => sql`SELECT * FROM organisations ORDER BY created_at, id`
    })
    const listNumbers = SqlSchema.findAll({
      Request: Schema.String,
      Result: NumberRow,
      execute: (orgId) => sql`SELECT * FROM numbers WHERE org_id = ${orgId} ORDER BY phone_number, sid`
    })
    const numbersByPhone = SqlSchema.findAll({
      Request: Schema.String,
      Result: NumberRow,
      execute: (phone) => sql`SELECT * FROM numbers WHERE phone_number = ${phone} ORDER BY org_id, sid`
    })
    const toNumber = (r: typeof NumberRow.Type): Organisations.NumberRow => ({
      orgId: r.org_id,
      sid: r.sid,
      phoneNumber: r.phone_number,
      friendlyName: r.friendly_name,
      sms: r.sms,
      voice: r.voice,
      whatsApp: r.whatsapp,
      voiceOutboundBotId: r.voice_outbound_bot_id,
      providerIds: r.provider_ids ?? []
    })
    const listBots = SqlSchema.findAll({
      Request: Schema.String,
      Result: BotRow,
      execute: (orgId) => sql`SELECT * FROM bots WHERE org_id = ${orgId} ORDER BY name, id`
    })

    const get = (orgId: string) => Effect.map(findOrg(orgId), Option.map(toOrganisation))
    const findUsage = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, period: Schema.String }),
      Result: UsageRow,
      execute: ({ orgId, period }) =>
        sql`SELECT sms_used, call_used FROM allowance_usage WHERE org_id = ${orgId} AND period = ${period}`
    })
    const usageOf = (orgId: string, period: string) =>
      Effect.map(findUsage({ orgId, period }), (row) =>
        Option.match(row, {
          onNone: () => AllowancePeriods.unused(period),
          onSome: (r) => ({ period, sms: r.sms_used, calls: r.call_used })
        }))

    return Organisations.Organisations.of({
      insert: (org) => storage("organisations.insert")(sql`INSERT INTO organisations ${sql.insert(fromOrganisation(org))}`),
      get: (orgId) => storage("organisations.get")(get(orgId)),
      list: storage("organisations.list")(Effect.map(listOrgs(undefined), (rows) => rows.map(toOrganisation))),
      update: (orgId, patch) =>
        storage("organisations.update")(
          sql.withTransaction(Effect.gen(function*() {
            // Write first, so the transaction takes the write lock (waiting its turn) before it reads: on SQLite a
            // read-then-write transaction whose snapshot a concurrent writer made stale fails at once with BUSY
            // (the dispatcher writes all the time), and on Postgres the row lock keeps concurrent patches apart.
            yield* sql`UPDATE organisations SET id = id WHERE id = ${orgId}`
            const current = yield* get(orgId)
            if (Option.isNone(current)) return Option.none()
            const next = { ...current.value, ...patch }
            const { id: _id, created_at: _created, ...columns } = fromOrganisation(next)
            yield* sql`UPDATE organisations SET ${sql.update(columns)} WHERE id = ${orgId}`
            if (
              patch.sendingHours !== undefined || patch.timezone !== undefined || patch.aiCallsEnabled !== undefined ||
              patch.recipientHours !== undefined
            ) {
              // Actions held for the old sending or recipient-local hours (work_at moved past due_at) come due again now, so the
              // dispatcher decides them under the new settings: widened hours release them at once, and
              // narrowed ones hold them again until the new window opens.
              yield* sql`UPDATE actions SET work_at = due_at
                WHERE org_id = ${orgId} AND status = 'Queued' AND charged_at IS NULL AND lease_owner IS NULL
                  AND work_at > due_at`
            }
            return Option.some(next)
          }))
        ),
      takeAllowance: (orgId, kind, units, period) =>
        storage("organisations.takeAllowance")(
          sql.withTransaction(Effect.gen(function*() {
            // The organisation's row is locked first (as the dispatcher's commit does), so two takers never
            // both spend the last units.
            yield* sql`UPDATE organisations SET id = id WHERE id = ${orgId}`
            const org = yield* get(orgId)
            if (Option.isNone(org)) return false
            const used = yield* usageOf(orgId, period)
            const left = AllowancePeriods.left(org.value, used, kind)
            if (left !== null && left < units) return false
            yield* addAllowanceUsage(sql, orgId, period, kind === "sms" ? units : 0, kind === "call" ? units : 0)
            return true
          }))
        ),
      // Read each time (one primary-key read), not from the settings cache: usage moves with every text sent,
      // and a settings version that followed it emptied the whole cache — keys, numbers, the organisation —
      // after every send (migration 0045).
      usage: (orgId, period) => storage("organisations.usage")(usageOf(orgId, period)),
      upsertNumber: (n) =>
        storage("organisations.upsertNumber")(sql`INSERT INTO numbers ${
          sql.insert({
            org_id: n.orgId,
            sid: n.sid,
            phone_number: n.phoneNumber,
            friendly_name: n.friendlyName,
            sms: bool(n.sms),
            voice: bool(n.voice),
            whatsapp: bool(n.whatsApp),
            voice_outbound_bot_id: n.voiceOutboundBotId,
            provider_ids: JSON.stringify(n.providerIds ?? [])
          })
        } ON CONFLICT (org_id, sid) DO UPDATE SET phone_number = excluded.phone_number,
          friendly_name = excluded.friendly_name, sms = excluded.sms, voice = excluded.voice,
          whatsapp = excluded.whatsapp, voice_outbound_bot_id = excluded.voice_outbound_bot_id,
          provider_ids = excluded.provider_ids`),
      listNumbers: (orgId) =>
        cache.cachedValue(
          `numbers:${orgId}`,
          storage("organisations.listNumbers")(Effect.map(listNumbers(orgId), (rows) => rows.map(toNumber)))
        ),
      findNumbersByPhone: (phone) =>
        storage("organisations.findNumbersByPhone")(Effect.map(numbersByPhone(phone), (rows) => rows.map(toNumber))),
      upsertBot: (b) =>
        storage("organisations.upsertBot")(sql`INSERT INTO bots ${
          sql.insert({
            org_id: b.orgId,
            id: b.id,
            name: b.name,
            description: b.description,
            active: bool(b.active),
            direction: b.direction,
            provider_id: b.providerId ?? null
          })
        } ON CONFLICT (org_id, id) DO UPDATE SET name = excluded.name, description = excluded.description,
          active = excluded.active, direction = excluded.direction, provider_id = excluded.provider_id`),
      listBots: (orgId) =>
        storage("organisations.listBots")(Effect.map(listBots(orgId), (rows) =>
          rows.map((r) => ({
            orgId: r.org_id,
            id: r.id,
            name: r.name,
            description: r.description,
            active: r.active,
            direction: r.direction,
            providerId: r.provider_id
          }))))
    })
  })
)
