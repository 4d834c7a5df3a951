/**
 * Zoho CRM's answers to the CRM port (crm/Crm.ts's CrmRecords), for an organisation that connected it
 * (CrmLive routes the others to the default CRM, which keeps the connection state either way).
 *
 * What Zoho answers, and how stale it may be:
 * - templates: every `Parley_Templates` record (read 200 a page, up to
 *   MAX_TEMPLATE_PAGES pages), ordered as the embedded CRM orders them
 *   (Crm.byTemplateName: "Step 2" before "Step 10"), cached 60 seconds per
 *   organisation; `GET /templates` lists the first 200, and any of them can
 *   be sent by its `templateUuid`; while Zoho is down or throttling, the last
 *   list read (its age in the `Age` header), read again in the background;
 * - records (links and merge fields): read from Zoho at each creation, only
 *   the fields the template needs, and a Lead's or Contact's opt-out
 *   checkboxes (ZohoSchema.OPT_OUT_FIELDS); field labels map to API names
 *   through `/settings/fields`, cached 10 minutes per organisation and module;
 * - every live action: an upsert into `Parley_Messages` on `Parley_Key`,
 *   whose id becomes the action's id.
 */
import { Crm } from "@parley/core/domain"
import type { CrmModule } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import { setResponseHeaders } from "../../http/RequestState.js"
import { SettingsCache } from "../../store/SettingsCache.js"
import { dataOf, isRecord, listOf, refusalOf, text } from "./ZohoApi.js"
import { limitCalls } from "./ZohoCallSlots.js"
import type { CrmRecords } from "../Crm.js"
import { ZohoConfig } from "./ZohoConfig.js"
import { ZohoConnections } from "./ZohoConnections.js"
import { makeFieldLengths } from "./ZohoFieldLengths.js"
import * as OptOutSyncPending from "../OptOutSyncPending.js"
import { makeSingleFlight } from "../SingleFlight.js"
import {
  KEY_FIELD,
  MESSAGES_MODULE,
  messageRecord,
  OPT_OUT_FIELDS,
  OPT_OUT_MODULES,
  optedOutOf,
  TEMPLATES_MODULE,
  templateUuid
} from "./ZohoSchema.js"
import * as ZohoOwners from "./ZohoOwners.js"
import * as ZohoSession from "./ZohoSession.js"
import * as ZohoWorkflows from "./ZohoWorkflows.js"

/** An unknown templateUuid re-reads the templates, at most this often per organisation. */
const TEMPLATE_MISS_REREAD_MS = 5_000
export const FIELD_CACHE_MS = 10 * 60_000
/** Zoho answers at most 200 records a page. */
const TEMPLATE_PAGE = 200
/** A bound on one organisation's template read (10,000 templates); Zoho's `page` works up to 2,000 records, `page_token` after. */
const MAX_TEMPLATE_PAGES = 50

/** The field that names a record of each module. */
const NAME_FIELD: Readonly<Record<CrmModule, string>> = {
  Leads: "Full_Name",
  Contacts: "Full_Name",
  Vendors: "Vendor_Name",
  Deals: "Deal_Name"
}

/** `${User.<label>}` fields as the record's `fields` carry them (see Templates.SENDER_MODULE). */
const SENDER_PREFIX = "User."

/** Zoho's `${User.…}` merge labels → the key of the user in `/users` answers. */
const USER_FIELDS: Readonly<Record<string, string>> = {
  "First Name": "first_name",
  "Last Name": "last_name",
  "Full Name": "full_name",
  "Email": "email",
  "Phone": "phone",
  "Mobile": "mobile"
}

/** A field's value as Zoho's merge writes it: text as it is, a lookup or owner by its name, nothing as "". */
const mergeValue = (value: unknown): string => {
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return value.map(mergeValue).filter((v) => v !== "").join(", ")
  if (isRecord(value)) return mergeValue(value["name"])
  return ""
}

interface Cached<A> {
  readonly at: number
  readonly value: A
}

/**
 * Zoho's records, templates and creations over `embedded`, the default CRM that keeps the connection state
 * (a lapsed token is recorded there); with the session every Zoho call of the process goes through.
 */
export const make = (embedded: Crm.CrmService) =>
  Effect.gen(function*() {
    // Every call of an organisation, whoever makes it, within Zoho's concurrency cap (ZohoCallSlots).
    const session = yield* limitCalls(yield* ZohoSession.make(embedded))
    const connections = yield* ZohoConnections
    // Every text cut to its field's length in Zoho (ZohoFieldLengths); Parley keeps the full text.
    const fieldLengths = makeFieldLengths(session)
    const templates = new Map<string, Cached<ReadonlyArray<Crm.TemplateRow>>>()
    const fieldMaps = new Map<string, Cached<ReadonlyMap<string, string>>>()
    const owners = yield* ZohoOwners.make
    const workflows = yield* ZohoWorkflows.make
    const senders = new Map<string, Cached<Readonly<Record<string, unknown>>>>()

    const settings = yield* SettingsCache
    // How long a template list is served from memory (PARLEY_ZOHO_TEMPLATE_CACHE_MS; a test shortens it).
    const templateCacheMs = (yield* ZohoConfig).zohoTemplateCacheMs
    // Asked on every creation: from memory on SQLite, exactly as fresh as the database (see SettingsCache).
    const isZoho = (orgId: string) => settings.cachedValue(`zoho-connected\u0000${orgId}`, connections.exists(orgId))

    // Concurrent misses of one organisation's templates read them from Zoho once (SingleFlight): 50 sends
    // arriving together on a cold cache would otherwise read every template page 50 times.
    const templatesFlight = makeSingleFlight()
    const listTemplates = (orgId: string, maxAgeMs = templateCacheMs) =>
      templatesFlight(orgId, Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const hit = templates.get(orgId)
        if (hit !== undefined && now - hit.at < maxAgeMs) return hit.value
        const records: Array<Readonly<Record<string, unknown>>> = []
        let cursor = "page=1"
        for (let page = 1; page <= MAX_TEMPLATE_PAGES; page++) {
          const answer = yield* session.call(orgId, "GET", `/${TEMPLATES_MODULE}?fields=Name,Body,Record_Type&per_page=${TEMPLATE_PAGE}&${cursor}`)
          records.push(...dataOf(answer))
          const info = isRecord(answer.json) && isRecord(answer.json["info"]) ? answer.json["info"] : {}
          if (info["more_records"] !== true) break
          const token = text(info, "next_page_token")
          cursor = token === undefined ? `page=${page + 1}` : `page_token=${encodeURIComponent(token)}`
        }
        const rows = records.flatMap((r): Array<Crm.TemplateRow> => {
          const id = text(r, "id")
          if (id === undefined) return []
          const recordType = text(r, "Record_Type")
          return [{
            orgId,
            id: templateUuid(orgId, id),
            crmId: id,
            recordType: recordType === undefined || recordType === "-None-" || recordType === "" ? null : recordType,
            name: text(r, "Name") ?? "",
            body: text(r, "Body") ?? ""
          }]
        })
        // The order every CRM of the port lists templates in, so the first 200 are the ones users expect.
        const sorted = [...rows].sort(Crm.byTemplateName)
        templates.set(orgId, { at: now, value: sorted })
        return sorted
      }))

    // Concurrent misses of one module's field map read it from Zoho once (SingleFlight).
    const fieldMapFlight = makeSingleFlight()
    // GET /templates while Zoho is down or throttling (issue 31): the last list read is served, its age in
    // seconds in the response's `Age` header, and the list is read again in the background — one read at a
    // time per organisation — so no request waits on a Zoho that is not answering.
    const templatesFailing = new Set<string>()
    const templatesRefreshing = new Set<string>()
    const servesStale = (error: Crm.CrmError) => error.reason === undefined || error.reason === "unavailable" || error.reason === "busy"
    const refreshTemplatesInBackground = (orgId: string) =>
      templatesRefreshing.has(orgId)
        ? Effect.void
        : Effect.asVoid(Effect.forkDaemon(Effect.sync(() => templatesRefreshing.add(orgId)).pipe(
          Effect.zipRight(listTemplates(orgId)),
          Effect.tap(() => Effect.sync(() => templatesFailing.delete(orgId))),
          Effect.ignore,
          Effect.ensuring(Effect.sync(() => templatesRefreshing.delete(orgId)))
        )))
    const servedTemplates = (orgId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const last = templates.get(orgId)
        const age = (at: number) => setResponseHeaders({ age: String(Math.max(0, Math.floor((now - at) / 1000))) })
        if (last !== undefined && now - last.at >= templateCacheMs && templatesFailing.has(orgId)) {
          yield* refreshTemplatesInBackground(orgId)
          yield* age(last.at)
          return last.value
        }
        const read = yield* Effect.either(listTemplates(orgId))
        if (read._tag === "Right") {
          templatesFailing.delete(orgId)
          yield* age(templates.get(orgId)?.at ?? now)
          return read.right
        }
        if (last === undefined || !servesStale(read.left)) return yield* read.left
        templatesFailing.add(orgId)
        yield* age(last.at)
        return last.value
      })

    /** Field label → API name for a module, as the connected user sees it. */
    const fieldMap = (orgId: string, module: string) =>
      fieldMapFlight(`${orgId}\u0000${module}`, Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const key = `${orgId}\u0000${module}`
        const hit = fieldMaps.get(key)
        if (hit !== undefined && now - hit.at < FIELD_CACHE_MS) return hit.value
        const answer = yield* session.call(orgId, "GET", `/settings/fields?module=${encodeURIComponent(module)}`)
        const map = new Map<string, string>()
        for (const f of listOf(answer, "fields")) {
          const label = text(f, "field_label")
          const api = text(f, "api_name")
          if (label !== undefined && api !== undefined) map.set(label, api)
        }
        fieldMaps.set(key, { at: now, value: map })
        return map
      }))

    /**
     * The connected user (whom every key runs as, so the sender of every text), as `/users?type=CurrentUser`
     * answers, cached like the field maps.
     */
    const currentUser = (orgId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const hit = senders.get(orgId)
        if (hit !== undefined && now - hit.at < FIELD_CACHE_MS) return hit.value
        const user = listOf(yield* session.call(orgId, "GET", "/users?type=CurrentUser"), "users")[0] ?? {}
        senders.set(orgId, { at: now, value: user })
        return user
      })

    const findRecord = (orgId: string, module: CrmModule, id: string, fieldLabels?: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        // Zoho's ids are digits; anything else cannot name a record (and must not reach the URL).
        if (!/^\d{1,25}$/.test(id)) return Option.none<Crm.CrmRecord>()
        const labels = (fieldLabels ?? []).filter((label) => !label.startsWith(SENDER_PREFIX))
        const senderLabels = (fieldLabels ?? []).filter((label) => label.startsWith(SENDER_PREFIX))
        const map = yield* fieldMap(orgId, module)
        const wanted = new Set([NAME_FIELD[module], "Phone", "Owner"])
        // The opt-out checkboxes, where `crm setup` made them (asking Zoho for a field it lacks is an error).
        const existing = new Set(map.values())
        const boxes = OPT_OUT_MODULES.some((m) => m === module) ? OPT_OUT_FIELDS.filter((f) => existing.has(f.api_name)) : []
        for (const box of boxes) wanted.add(box.api_name)
        if (boxes.length > 0 && existing.has("Mobile")) wanted.add("Mobile")
        for (const label of labels) {
          const api = map.get(label)
          if (api !== undefined) wanted.add(api)
        }
        const answer = yield* session.call(orgId, "GET", `/${module}/${id}?fields=${[...wanted].join(",")}`)
        const record = dataOf(answer)[0]
        if (record === undefined) return Option.none<Crm.CrmRecord>()
        const fields: Record<string, string> = {}
        // A field of the module merges as Zoho's own merge does: a lookup or owner by its name, an empty value
        // as nothing. A label the module does not have stays unfilled (the template is refused, naming it).
        for (const label of labels) {
          const api = map.get(label)
          if (api !== undefined) fields[label] = mergeValue(record[api])
        }
        if (senderLabels.length > 0) {
          const sender = yield* currentUser(orgId)
          for (const label of senderLabels) {
            const key = USER_FIELDS[label.slice(SENDER_PREFIX.length)]
            if (key !== undefined) fields[label] = mergeValue(sender[key])
          }
        }
        const ownerId = ZohoOwners.ownerIdOf(record)
        yield* owners.remember(orgId, module, id, ownerId)
        const ticked = optedOutOf(record)
        // A box Parley itself is about to change (the number's list entry changed and ZohoOptOutSync has not
        // written it yet) is Parley's own stale write, not an administrator's: the list, checked first, decides.
        const optedOut = ticked.length > 0 && (yield* syncPending(orgId, [text(record, "Phone"), text(record, "Mobile")])) ? [] : ticked
        return Option.some<Crm.CrmRecord>({
          ...(boxes.length === 0 ? {} : { optedOut }),
          orgId,
          module,
          id,
          name: text(record, NAME_FIELD[module]) ?? id,
          phone: text(record, "Phone") ?? null,
          ownerId,
          fields,
          emptyMergesAsBlank: true
        })
      })

    /** Whether a change of the list for any of these numbers (as Zoho shows them) waits in ZohoOptOutSync's outbox. */
    const syncPending = yield* OptOutSyncPending.make("zoho", "zoho_optout_syncs")

    const recordAction = (draft: Crm.CrmActionDraft) =>
      Effect.gen(function*() {
        // Owned by the linked record's owner, else the connected user (ZohoOwners).
        const owner = yield* owners.ownerOf(session, draft)
        // Workflow rules run only where the organisation's setting says (ZohoWorkflows); never approvals or blueprints.
        const trigger = yield* workflows.creationTrigger(draft)
        // Every text cut to its field's length in Zoho (ZohoFieldLengths); Parley keeps the full text.
        const [fitted] = yield* fieldLengths.fit(draft.orgId, MESSAGES_MODULE, [messageRecord(draft)])
        const upsert = (ownerId: string | null) =>
          session.call(draft.orgId, "POST", `/${MESSAGES_MODULE}/upsert`, {
            data: [{ ...fitted, ...(ownerId === null ? {} : { Owner: { id: ownerId } }) }],
            duplicate_check_fields: [KEY_FIELD],
            trigger
          })
        const first = yield* upsert(owner)
        // An owner Zoho will not take (a deactivated user owning the Lead): the record stays the connected user's.
        const answer = owner !== null && ZohoOwners.ownerRefused(first)
          ? yield* upsert(yield* owners.connectedUser(draft.orgId))
          : first
        const item = dataOf(answer)[0]
        const details = item?.["details"]
        const id = typeof details === "object" && details !== null && "id" in details && typeof details.id === "string"
          ? details.id
          : undefined
        const status = item === undefined ? undefined : text(item, "status")
        // Zoho refused this record (INVALID_DATA, MANDATORY_NOT_FOUND, DUPLICATE_DATA…): a retry cannot fix it.
        if (item !== undefined && status === "error" && text(item, "code") !== undefined) {
          return yield* refusalOf("zoho.recordAction", item)
        }
        if (item === undefined || status !== "success" || id === undefined) {
          return yield* new Crm.CrmError({
            operation: "zoho.recordAction",
            cause: item === undefined ? `status ${answer.status}` : (text(item, "code") ?? "no id"),
            reason: "unavailable"
          })
        }
        // Its final status fired the rules already (an inbound record is final at birth); a miss here only means
        // a later write-back of the same final status could run them once more, so it does not fail the creation.
        if (trigger.length > 0) yield* Effect.ignore(workflows.markFired(draft.orgId, [id]))
        return Option.some(id)
      })

    /** The one Lead or Contact with this phone (Phone or Mobile); none when nobody or several have it. */
    const findByPhone = (orgId: string, phone: string) =>
      Effect.gen(function*() {
        const found: Array<Crm.CrmRecord> = []
        for (const module of ["Leads", "Contacts"] as const) {
          const answer = yield* session.call(orgId, "GET", `/${module}/search?phone=${encodeURIComponent(phone)}&fields=${NAME_FIELD[module]},Phone,Owner`)
          for (const r of dataOf(answer)) {
            const id = text(r, "id")
            const ownerId = ZohoOwners.ownerIdOf(r)
            if (id !== undefined) {
              yield* owners.remember(orgId, module, id, ownerId)
              found.push({ orgId, module, id, name: text(r, NAME_FIELD[module]) ?? id, phone, ownerId, fields: {} })
            }
          }
        }
        return found.length === 1 && found[0] !== undefined ? Option.some(found[0]) : Option.none<Crm.CrmRecord>()
      })

    const records: CrmRecords = {
      listTemplates: (orgId, limit) => Effect.map(servedTemplates(orgId), (rows) => rows.slice(0, limit)),
      findTemplate: (orgId, id) =>
        Effect.gen(function*() {
          const cached = (yield* listTemplates(orgId)).find((t) => t.id === id)
          if (cached !== undefined) return Option.some(cached)
          // A template created in Zoho since the last read is found at once; unknown ids re-read at most this often.
          return Option.fromNullable((yield* listTemplates(orgId, TEMPLATE_MISS_REREAD_MS)).find((t) => t.id === id))
        }),
      upsertTemplate: () =>
        Effect.fail(new Crm.CrmError({ operation: "zoho.upsertTemplate", cause: "templates are kept in Zoho (Parley_Templates)" })),
      findRecord,
      upsertRecord: () => Effect.fail(new Crm.CrmError({ operation: "zoho.upsertRecord", cause: "records are kept in Zoho" })),
      listRecords: () => Effect.succeed([]),
      recordAction,
      findByPhone
    }
    /** The organisation's connection changed: what was read as its user is forgotten. */
    const forget = (orgId: string) =>
      Effect.sync(() => {
        templates.delete(orgId)
        senders.delete(orgId)
        for (const key of fieldMaps.keys()) if (key.startsWith(`${orgId}\u0000`)) fieldMaps.delete(key)
      })
    return { records, session, forget, isConnected: isZoho }
  })
