/**
 * The demo organisation: everything a newcomer needs to try every endpoint —
 * a connected CRM account, an open pilot, always-open sending hours, AI calls
 * on, two SMS+voice numbers and a WhatsApp-connected one, two active bots and
 * an inactive one, templates (one with `${Leads.First Name}`) and records in
 * each module. Seeding is idempotent; every call mints a fresh test and live key. A key's secret is never
 * kept, so the previous demo keys cannot be printed again: `replacePrevious` (what `serve --demo`, run by
 * `pnpm start` on every start, asks for) revokes them, so that restarts do not pile up full-scope keys.
 */
import { Clock, Effect, Option } from "effect"
import { ALL_SCOPES } from "../contract/Primitives.js"
import { ApiKeys } from "../domain/ApiKeys.js"
import { ApiKeyStore } from "../ports/ApiKeyStore.js"
import { Crm, type CrmRecord, FULL_PERMISSIONS, type TemplateRow } from "../ports/Crm.js"
import { type BotRow, type NumberRow, OPEN_ORGANISATION, Organisations } from "../ports/Organisations.js"

export const DEMO_ORG_ID = "org_demo"

const numbers = (orgId: string): ReadonlyArray<NumberRow> => [
  { orgId, sid: "PN00000000000000000000000000000001", phoneNumber: "+14155550100", friendlyName: "Sales line",
    sms: true, voice: true, whatsApp: false, voiceOutboundBotId: "bot_sales" },
  { orgId, sid: "PN00000000000000000000000000000002", phoneNumber: "+14155550101", friendlyName: "Support line",
    sms: true, voice: true, whatsApp: false, voiceOutboundBotId: "bot_support" },
  { orgId, sid: "PN00000000000000000000000000000003", phoneNumber: "+14155550199", friendlyName: "WhatsApp line",
    sms: true, voice: false, whatsApp: true, voiceOutboundBotId: null }
]

const bots = (orgId: string): ReadonlyArray<BotRow> => [
  { orgId, id: "bot_sales", name: "Sales qualifier", description: "Qualifies inbound leads and books demos.",
    active: true, direction: "outbound" },
  { orgId, id: "bot_support", name: "Appointment confirmer", description: "Confirms or reschedules appointments.",
    active: true, direction: "outbound" },
  { orgId, id: "bot_legacy", name: "Legacy survey", description: "Retired.", active: false, direction: "outbound" }
]

const templates = (orgId: string): ReadonlyArray<TemplateRow> => [
  { orgId, id: "6f1c2a3e-0000-4000-8000-000000000001", crmId: "9000001", recordType: "Leads",
    name: "Appointment reminder", body: "Hi ${Leads.First Name}, a reminder of your appointment tomorrow." },
  { orgId, id: "6f1c2a3e-0000-4000-8000-000000000002", crmId: "9000002", recordType: null,
    name: "Follow-up", body: "Thanks for your time today. Reply here if you have any questions." },
  { orgId, id: "6f1c2a3e-0000-4000-8000-000000000003", crmId: "9000003", recordType: "Contacts",
    name: "Welcome", body: "Welcome aboard, ${Contacts.First Name}!" }
]

const records = (orgId: string): ReadonlyArray<CrmRecord> => [
  { orgId, module: "Leads", id: "5001", name: "Ada Lovelace", phone: "+447700900001", ownerId: "crm_user_demo",
    fields: { "First Name": "Ada", "Last Name": "Lovelace", "Company": "Analytical Engines" } },
  { orgId, module: "Leads", id: "5002", name: "Alan Turing", phone: "+447700900002", ownerId: "crm_user_demo",
    fields: { "First Name": "Alan", "Last Name": "Turing" } },
  { orgId, module: "Leads", id: "5003", name: "Grace Hopper", phone: "+14155550123", ownerId: "crm_user_demo",
    fields: { "First Name": "Grace", "Last Name": "Hopper" } },
  { orgId, module: "Contacts", id: "6001", name: "Katherine Johnson", phone: "+14155550124", ownerId: null,
    fields: { "First Name": "Katherine", "Last Name": "Johnson" } },
  { orgId, module: "Contacts", id: "6002", name: "Edsger Dijkstra", phone: "+31612345678", ownerId: null,
    fields: { "First Name": "Edsger", "Last Name": "Dijkstra" } },
  { orgId, module: "Vendors", id: "7001", name: "Acme Supplies", phone: "+14155550125", ownerId: null,
    fields: { "Vendor Name": "Acme Supplies" } },
  { orgId, module: "Deals", id: "8001", name: "Acme renewal", phone: null, ownerId: "crm_user_demo",
    fields: { "Deal Name": "Acme renewal", "Stage": "Negotiation" } }
]

export interface DemoSummary {
  readonly orgId: string
  readonly numbers: ReadonlyArray<{ readonly sid: string; readonly phoneNumber: string; readonly whatsApp: boolean }>
  readonly bots: ReadonlyArray<{ readonly id: string; readonly name: string; readonly active: boolean }>
  readonly templates: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly records: ReadonlyArray<{ readonly module: string; readonly id: string; readonly name: string }>
  readonly keys: { readonly live: string; readonly test: string }
  /** With `replacePrevious`: how many earlier demo keys were revoked. */
  readonly revokedKeys?: number
}

const demoKeyName = (mode: "test" | "live") => `demo ${mode} key`

export const seedDemo = (orgId: string = DEMO_ORG_ID, options: { readonly replacePrevious?: boolean } = {}) =>
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    const apiKeys = yield* ApiKeys
    const existing = yield* organisations.get(orgId)
    if (Option.isNone(existing)) {
      yield* organisations.insert({
        id: orgId,
        name: "Parley Demo",
        ...OPEN_ORGANISATION,
        smsAllowance: 10_000,
        callAllowance: 1_000,
        // Its numbers are in the US and its CRM records in the UK (and Canada shares +1).
        destinationCountries: ["CA", "GB", "US"],
        premiumNumbersAllowed: false,
        internationalNetworksAllowed: false,
        botsManagementUrl: null,
        templatesManagementUrl: null,
        createdAt: new Date(yield* Clock.currentTimeMillis).toISOString()
      })
      yield* crm.setConnection(orgId, {
        state: "connected",
        account: { id: "crm_user_demo", name: "Dana Demo", permissions: FULL_PERMISSIONS }
      })
      for (const n of numbers(orgId)) yield* organisations.upsertNumber(n)
      for (const b of bots(orgId)) yield* organisations.upsertBot(b)
      for (const t of templates(orgId)) yield* crm.upsertTemplate(t)
      for (const r of records(orgId)) yield* crm.upsertRecord(r)
    }
    const mint = (mode: "test" | "live") =>
      apiKeys.create({
        orgId,
        name: demoKeyName(mode),
        mode,
        scopes: ALL_SCOPES,
        numberSids: [],
        botIds: [],
        expiresAt: null
      })
    const test = yield* mint("test")
    const live = yield* mint("live")
    let revokedKeys = 0
    if (options.replacePrevious === true) {
      const store = yield* ApiKeyStore
      const now = yield* Clock.currentTimeMillis
      const at = new Date(now).toISOString()
      const previous = (yield* store.list(orgId)).filter((k) =>
        k.revokedAt === null && (k.name === demoKeyName("test") || k.name === demoKeyName("live")) &&
        k.id !== test.key.id && k.id !== live.key.id
      )
      for (const key of previous) if (yield* store.revoke(key.id, at)) revokedKeys++
    }
    const summary: DemoSummary = {
      orgId,
      numbers: (yield* organisations.listNumbers(orgId)).map((n) => ({
        sid: n.sid,
        phoneNumber: n.phoneNumber,
        whatsApp: n.whatsApp
      })),
      bots: (yield* organisations.listBots(orgId)).map((b) => ({ id: b.id, name: b.name, active: b.active })),
      templates: (yield* crm.listTemplates(orgId, 200)).map((t) => ({ id: t.id, name: t.name })),
      records: (yield* crm.listRecords(orgId)).map((r) => ({ module: r.module, id: r.id, name: r.name })),
      keys: { live: live.token, test: test.token },
      ...(options.replacePrevious === true ? { revokedKeys } : {})
    }
    return summary
  })
