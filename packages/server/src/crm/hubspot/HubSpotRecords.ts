/**
 * An organisation's HubSpot records as the CRM port reads and writes them.
 *
 * - Records: `Contacts` → contacts, `Deals` → deals, `Leads` → HubSpot's leads object; ids are HubSpot's
 *   numeric-string object ids. `Vendors` has no HubSpot counterpart: 400 CRM_REJECTED naming the module and
 *   the CRM. Merge placeholders name property labels (`${Contacts.First name}`), mapped to property names
 *   through the properties API (cached per organisation and object); the owner through the owners API.
 * - Every live text is a HubSpot communication and every AI call a HubSpot call, associated with the linked
 *   record and with the contact whose phone matches. HubSpot has no upsert for engagements, so creation is
 *   keyed by a `parley_key` property (`crm setup` creates it): a search for the key before each create, one
 *   at a time per key in the process, finds the object a dropped connection or a killed process left behind.
 * - Write-back (status, transcript, recording, duration) goes in `/batch/update` calls of at most 100.
 */
import { Crm } from "@parley/core/domain"
import type { CrmModule } from "@parley/core/internal"
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { type CrmAnswer, isRecord, text } from "./HubSpotApi.js"
import type { HubSpotSessionService } from "./HubSpotSession.js"
import type { SyncPending } from "../OptOutSyncPending.js"

/** The property `crm setup` creates on calls and communications: Parley's key of each object it created. */
export const KEY_PROPERTY = "parley_key"
/** Parley's status of a text, on communications (HubSpot's communications have no status of their own). */
export const STATUS_PROPERTY = "parley_status"
/** Why an action failed, on calls and communications; empty while it has not. */
export const ERROR_PROPERTY = "parley_error"
/** The contact property the consent work reads and sets: set, the contact receives no texts. */
export const OPT_OUT_PROPERTY = "parley_sms_opt_out"
/** What `parley_sms_opt_out` covers: texts, SMS and WhatsApp (not AI calls: it is a texting opt-out). */
export const TEXT_CHANNELS: ReadonlyArray<"SMS" | "WhatsApp"> = ["SMS", "WhatsApp"]
/** HubSpot's batch endpoints take at most this many inputs. */
export const BATCH_LIMIT = 100

type ObjectType = "contacts" | "deals" | "leads"

const OBJECT_OF: Readonly<Record<CrmModule, ObjectType | undefined>> = {
  Contacts: "contacts",
  Deals: "deals",
  Leads: "leads",
  Vendors: undefined
}

/** The property that names a record of each object. */
const NAME_PROPERTIES: Readonly<Record<ObjectType, ReadonlyArray<string>>> = {
  contacts: ["firstname", "lastname"],
  deals: ["dealname"],
  leads: ["hs_lead_name"]
}

/**
 * HUBSPOT_DEFINED association types from an engagement to a record (HubSpot's published association type ids).
 * Leads have no published id: theirs is read from the associations API (`definedAssociation`).
 */
const ASSOCIATION: Readonly<Record<"communications" | "calls", Partial<Record<ObjectType, number>>>> = {
  communications: { contacts: 81, deals: 85 },
  calls: { contacts: 194, deals: 206 }
}

/** Parley's call statuses as HubSpot's `hs_call_status` values. */
export const CALL_STATUS: Readonly<Record<string, string>> = {
  Queued: "QUEUED",
  Ringing: "RINGING",
  "In Progress": "IN_PROGRESS",
  Completed: "COMPLETED",
  "No Answer": "NO_ANSWER",
  Busy: "BUSY",
  Failed: "FAILED",
  Cancelled: "CANCELED"
}

/** The key as stored in HubSpot: a digest, so a key's text (an API key's Idempotency-Key) is not shown there. */
export const parleyKey = (key: string): string => createHash("sha256").update(key).digest("hex").slice(0, 48)

const unsupported = (module: CrmModule) =>
  new Crm.CrmError({
    operation: "hubspot.record",
    cause: `HubSpot has no counterpart of ${module}`,
    reason: "rejected",
    code: "MODULE_NOT_SUPPORTED",
    field: `record.module (${module} has no counterpart in HubSpot; use Contacts, Deals or Leads)`
  })

const resultsOf = (answer: CrmAnswer): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  isRecord(answer.json) && Array.isArray(answer.json["results"]) ? answer.json["results"].filter(isRecord) : []

const propertiesOf = (object: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> =>
  isRecord(object["properties"]) ? object["properties"] : {}

/**
 * A refusal naming one of the properties `crm setup` creates (`parley_…`) means setup has not run since Parley
 * needed it: SETUP_REQUIRED (retried by the outboxes), not a refusal of the record.
 */
export const setupAware = (error: Crm.CrmError): Crm.CrmError =>
  error.reason === "rejected" && error.field !== undefined && error.field.startsWith("parley_")
    ? new Crm.CrmError({ operation: error.operation, cause: error.cause, reason: "setup_required", code: error.code ?? "PROPERTY_DOESNT_EXIST", field: error.field })
    : error

/** What a write-back carries of an action to its HubSpot object (HubSpotWriteBack reads it from the action). */
export interface WriteBackChange {
  readonly kind: "message" | "ai_call"
  readonly crmId: string
  readonly status: string
  readonly body: string
  readonly errorMessage?: string | null
  readonly recordingUrl: string | null
  readonly durationMs: number | null
}

/** The engagement type an action's object is. */
export const engagementType = (kind: "message" | "ai_call"): "communications" | "calls" => (kind === "ai_call" ? "calls" : "communications")

/**
 * The properties a write-back sets. A call: HubSpot's own status, the transcript (`hs_call_body`), the
 * recording's URL and the duration in milliseconds once known. A communication has no status of its own in
 * HubSpot: Parley's (`parley_status`, created by `crm setup`) — its text never changes after creation. Both
 * carry the reason of a failure in `parley_error` (empty once there is none).
 */
export const writeBackProperties = (change: WriteBackChange): Record<string, string> =>
  change.kind === "ai_call"
    ? {
      hs_call_status: CALL_STATUS[change.status] ?? "QUEUED",
      hs_call_body: change.body,
      [ERROR_PROPERTY]: change.errorMessage ?? "",
      ...(change.recordingUrl === null ? {} : { hs_call_recording_url: change.recordingUrl }),
      ...(change.durationMs === null ? {} : { hs_call_duration: String(change.durationMs) })
    }
    : { [STATUS_PROPERTY]: change.status, [ERROR_PROPERTY]: change.errorMessage ?? "" }

/** Records over the session; `syncPending` asks HubSpotOptOutSync's outbox (crm/OptOutSyncPending). */
export const make = (session: HubSpotSessionService, syncPending: SyncPending) => {
  const labels = new Map<string, ReadonlyMap<string, string>>()
  const owners = new Map<string, string>()
  // One lock per key while anyone holds or waits for it (a key per action: a map that only grew would leak).
  const locks = new Map<string, { readonly lock: Effect.Semaphore; users: number }>()
  const oneAtATime = <A, E>(key: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      const entry = locks.get(key) ?? { lock: Effect.unsafeMakeSemaphore(1), users: 0 }
      entry.users++
      locks.set(key, entry)
      return Effect.ensuring(
        entry.lock.withPermits(1)(effect),
        Effect.sync(() => {
          entry.users--
          if (entry.users === 0) locks.delete(key)
        })
      )
    })

  /** Label → property name of an object, read once per organisation (concurrent misses read it once). */
  const labelsOf = (orgId: string, type: ObjectType) =>
    oneAtATime(`labels\u0000${orgId}\u0000${type}`, Effect.suspend(() => {
      const cached = labels.get(`${orgId}\u0000${type}`)
      if (cached !== undefined) return Effect.succeed(cached)
      return Effect.map(session.call(orgId, "GET", `/crm/v3/properties/${type}`), (answer) => {
        const map = new Map<string, string>()
        for (const property of resultsOf(answer)) {
          const name = text(property, "name")
          const label = text(property, "label")
          if (name !== undefined && label !== undefined) map.set(label, name)
        }
        labels.set(`${orgId}\u0000${type}`, map)
        return map
      })
    }))

  /** An owner's name ("First Last", else the e-mail), read once per organisation and owner. */
  const ownerName = (orgId: string, ownerId: string) =>
    Effect.suspend(() => {
      const cached = owners.get(`${orgId}\u0000${ownerId}`)
      if (cached !== undefined) return Effect.succeed(cached)
      return Effect.map(session.call(orgId, "GET", `/crm/v3/owners/${encodeURIComponent(ownerId)}`), (answer) => {
        const owner = isRecord(answer.json) ? answer.json : {}
        const name = [text(owner, "firstName"), text(owner, "lastName")].filter((s) => s !== undefined && s !== "").join(" ")
        const found = name !== "" ? name : (text(owner, "email") ?? ownerId)
        owners.set(`${orgId}\u0000${ownerId}`, found)
        return found
      })
    })

  const recordOf = (orgId: string, module: CrmModule, type: ObjectType, object: Readonly<Record<string, unknown>>, fields: Record<string, string>): Crm.CrmRecord => {
    const props = propertiesOf(object)
    const id = text(object, "id") ?? ""
    const name = NAME_PROPERTIES[type].map((p) => text(props, p) ?? "").filter((s) => s !== "").join(" ")
    return {
      orgId,
      module,
      id,
      name: name === "" ? id : name,
      phone: text(props, "phone") ?? text(props, "mobilephone") ?? null,
      ownerId: text(props, "hubspot_owner_id") ?? null,
      fields,
      // HubSpot leaves an empty property out of nothing: a known but empty field merges as blank.
      emptyMergesAsBlank: true,
      // A contact whose `parley_sms_opt_out` is ticked (by Parley's opt-out sync or in HubSpot) gets no texts.
      ...(type === "contacts" ? { optedOut: text(props, OPT_OUT_PROPERTY) === "true" ? TEXT_CHANNELS : [] } : {})
    }
  }

  const findRecord = (orgId: string, module: CrmModule, id: string, fieldLabels?: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const type = OBJECT_OF[module]
      if (type === undefined) return yield* unsupported(module)
      if (!/^\d+$/.test(id)) return Option.none<Crm.CrmRecord>()
      const byLabel = yield* labelsOf(orgId, type)
      const wanted = (fieldLabels ?? [...byLabel.keys()]).flatMap((label) => {
        const name = byLabel.get(label)
        return name === undefined ? [] : [[label, name] as const]
      })
      const names = [...new Set([
        ...NAME_PROPERTIES[type],
        "phone",
        "mobilephone",
        "hubspot_owner_id",
        ...(type === "contacts" ? [OPT_OUT_PROPERTY] : []),
        ...wanted.map(([, n]) => n)
      ])]
      const answer = yield* session.call(orgId, "GET", `/crm/v3/objects/${type}/${id}?properties=${names.map(encodeURIComponent).join(",")}`)
      if (answer.status === 404 || !isRecord(answer.json)) return Option.none<Crm.CrmRecord>()
      const props = propertiesOf(answer.json)
      const fields: Record<string, string> = {}
      for (const [label, name] of wanted) {
        const value = text(props, name)
        if (value === undefined) {
          fields[label] = ""
        } else if (name === "hubspot_owner_id" && value !== "") {
          fields[label] = yield* ownerName(orgId, value)
        } else {
          fields[label] = value
        }
      }
      const record = recordOf(orgId, module, type, answer.json, fields)
      // A box Parley itself is about to change (the number's list entry changed and HubSpotOptOutSync has not
      // written it yet) is Parley's own stale write, not an administrator's: the list, checked first, decides.
      if (record.optedOut !== undefined && record.optedOut.length > 0) {
        const props = propertiesOf(answer.json)
        if (yield* syncPending(orgId, [text(props, "phone"), text(props, "mobilephone")])) {
          return Option.some<Crm.CrmRecord>({ ...record, optedOut: [] })
        }
      }
      return Option.some(record)
    })

  /** The one contact with this phone (phone or mobile phone); none when nobody or several have it. */
  const findByPhone = (orgId: string, phone: string) =>
    Effect.gen(function*() {
      const answer = yield* session.call(orgId, "POST", "/crm/v3/objects/contacts/search", {
        filterGroups: [
          { filters: [{ propertyName: "phone", operator: "EQ", value: phone }] },
          { filters: [{ propertyName: "mobilephone", operator: "EQ", value: phone }] }
        ],
        properties: ["firstname", "lastname", "phone", "mobilephone", "hubspot_owner_id"],
        limit: 2
      })
      const results = resultsOf(answer)
      return results.length === 1 && results[0] !== undefined
        ? Option.some(recordOf(orgId, "Contacts", "contacts", results[0], {}))
        : Option.none<Crm.CrmRecord>()
    })

  const engagementOf = (draft: Crm.CrmActionDraft): { readonly type: "communications" | "calls"; readonly properties: Record<string, string> } => {
    const outbound = draft.direction === "Outbound"
    const from = outbound ? draft.line : draft.counterpart
    const to = outbound ? draft.counterpart : draft.line
    const timestamp = new Date(draft.at).toISOString()
    if (draft.kind === "ai_call") {
      return {
        type: "calls",
        properties: {
          [KEY_PROPERTY]: parleyKey(draft.key),
          hs_timestamp: timestamp,
          hs_call_title: `AI call ${outbound ? "to" : "from"} ${draft.counterpart}`,
          hs_call_body: draft.body,
          hs_call_direction: outbound ? "OUTBOUND" : "INBOUND",
          hs_call_status: CALL_STATUS[draft.status] ?? "QUEUED",
          hs_call_from_number: from,
          hs_call_to_number: to
        }
      }
    }
    return {
      type: "communications",
      properties: {
        [KEY_PROPERTY]: parleyKey(draft.key),
        hs_timestamp: timestamp,
        hs_communication_channel_type: draft.type === "WhatsApp" ? "WHATS_APP" : "SMS",
        hs_communication_logged_from: "CRM",
        // One text property: an inbound message's media URLs follow its text, a line each.
        hs_communication_body: [...(draft.body === "" ? [] : [draft.body]), ...(draft.mediaUrls ?? [])].join("\n")
      }
    }
  }

  /**
   * HubSpot's own association type from an engagement to an object without a published id (leads), read from
   * the associations API once per organisation. A failed read leaves that one association out rather than the
   * activity unmade (the linked contact and the phone's contact are still associated).
   */
  const associationTypes = new Map<string, number | undefined>()
  const definedAssociation = (orgId: string, from: "communications" | "calls", to: ObjectType) =>
    Effect.suspend(() => {
      const key = `${orgId}\u0000${from}\u0000${to}`
      if (associationTypes.has(key)) return Effect.succeed(associationTypes.get(key))
      return session.call(orgId, "GET", `/crm/v4/associations/${from}/${to}/labels`).pipe(
        Effect.map((answer) => {
          const found = resultsOf(answer).find((r) => text(r, "category") === "HUBSPOT_DEFINED")
          const typeId = found === undefined ? undefined : Number(text(found, "typeId"))
          const known = typeId !== undefined && Number.isInteger(typeId) ? typeId : undefined
          associationTypes.set(key, known)
          return known
        }),
        Effect.orElseSucceed(() => undefined)
      )
    })

  const findByKey = (orgId: string, type: "communications" | "calls", key: string) =>
    Effect.map(
      Effect.mapError(
        session.call(orgId, "POST", `/crm/v3/objects/${type}/search`, {
          filterGroups: [{ filters: [{ propertyName: KEY_PROPERTY, operator: "EQ", value: key }] }],
          properties: [KEY_PROPERTY],
          limit: 1
        }),
        // A search naming a property that does not exist is refused as a whole: `crm setup` has not run.
        (error) => error.reason === "rejected" ? new Crm.CrmError({ ...error, reason: "setup_required", field: KEY_PROPERTY }) : error
      ),
      (answer) => Option.fromNullable(resultsOf(answer)[0]).pipe(Option.flatMap((o) => Option.fromNullable(text(o, "id"))))
    )

  const recordAction = (draft: Crm.CrmActionDraft) =>
    Effect.gen(function*() {
      if (draft.record !== null && OBJECT_OF[draft.record.module] === undefined) return yield* unsupported(draft.record.module)
      const { properties, type } = engagementOf(draft)
      const key = properties[KEY_PROPERTY] ?? ""
      return yield* oneAtATime(`key\u0000${draft.orgId}\u0000${key}`, Effect.gen(function*() {
        const existing = yield* findByKey(draft.orgId, type, key)
        if (Option.isSome(existing)) return existing
        const linked = draft.record === null ? Option.none<Crm.CrmRecord>() : yield* findRecord(draft.orgId, draft.record.module, draft.record.id, [])
        const contact = yield* findByPhone(draft.orgId, draft.counterpart)
        const targets = new Map<string, { readonly type: ObjectType; readonly id: string }>()
        for (const record of [...Option.toArray(linked), ...Option.toArray(contact)]) {
          const objectType = OBJECT_OF[record.module]
          if (objectType !== undefined) targets.set(`${objectType}:${record.id}`, { type: objectType, id: record.id })
        }
        const associations: Array<{ readonly to: { readonly id: string }; readonly types: ReadonlyArray<{ readonly associationCategory: string; readonly associationTypeId: number }> }> = []
        for (const target of targets.values()) {
          const typeId = ASSOCIATION[type][target.type] ?? (yield* definedAssociation(draft.orgId, type, target.type))
          if (typeId !== undefined) associations.push({ to: { id: target.id }, types: [{ associationCategory: "HUBSPOT_DEFINED", associationTypeId: typeId }] })
        }
        // Owned by the linked record's owner, else the matching contact's (HubSpot fills the connected user otherwise).
        const owner = [...Option.toArray(linked), ...Option.toArray(contact)].find((r) => r.ownerId !== null)?.ownerId ?? null
        const answer = yield* Effect.mapError(
          session.call(draft.orgId, "POST", `/crm/v3/objects/${type}`, {
            properties: { ...properties, ...(owner === null ? {} : { hubspot_owner_id: owner }) },
            associations
          }),
          setupAware
        )
        const id = isRecord(answer.json) ? text(answer.json, "id") : undefined
        if (id === undefined) {
          return yield* new Crm.CrmError({ operation: "hubspot.recordAction", cause: `status ${answer.status}`, reason: "unavailable" })
        }
        return Option.some(id)
      }))
    })

  /** Writes changes back in `/batch/update` calls of at most BATCH_LIMIT objects each (HubSpotWriteBack's calls, without its outbox). */
  const writeBack = (orgId: string, changes: ReadonlyArray<WriteBackChange>) =>
    Effect.gen(function*() {
      for (const type of ["communications", "calls"] as const) {
        const inputs = changes.filter((c) => engagementType(c.kind) === type).map((c) => ({ id: c.crmId, properties: writeBackProperties(c) }))
        for (let i = 0; i < inputs.length; i += BATCH_LIMIT) {
          yield* Effect.mapError(
            session.call(orgId, "POST", `/crm/v3/objects/${type}/batch/update`, { inputs: inputs.slice(i, i + BATCH_LIMIT) }),
            setupAware
          )
        }
      }
    })

  return { findRecord, findByPhone, recordAction, writeBack }
}
