/**
 * `parley crm setup ORG`: creates in the connected Zoho organisation what
 * Parley needs (the `Parley_Templates` and `Parley_Messages` modules and their
 * fields, the opt-out checkboxes on Leads and Contacts) through Zoho's metadata API. Idempotent: it reads what exists first
 * and creates only what is missing. Where Zoho refuses (edition, permission)
 * it returns exactly what an administrator must create by hand.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isRecord, listOf, text } from "./ZohoApi.js"
import {
  type FieldSpec,
  KEY_FIELD,
  LARGE_TEXTAREA_LENGTH,
  MESSAGE_FIELDS,
  MESSAGES_MODULE,
  OPT_OUT_FIELDS,
  OPT_OUT_MODULES,
  TEMPLATE_FIELDS,
  TEMPLATES_MODULE
} from "./ZohoSchema.js"
import * as ZohoProfiles from "./ZohoProfiles.js"
import { ZohoSession, type ZohoSessionService } from "./ZohoSession.js"

export interface SetupReport {
  readonly created: ReadonlyArray<string>
  readonly existing: ReadonlyArray<string>
  /** What Zoho refused, as instructions for an administrator; empty when everything is in place. */
  readonly byHand: ReadonlyArray<string>
}

const MODULES: ReadonlyArray<{ readonly apiName: string; readonly plural: string; readonly singular: string; readonly fields: ReadonlyArray<FieldSpec> }> = [
  { apiName: TEMPLATES_MODULE, plural: "Parley Templates", singular: "Parley Template", fields: TEMPLATE_FIELDS },
  { apiName: MESSAGES_MODULE, plural: "Parley Messages", singular: "Parley Message", fields: MESSAGE_FIELDS }
]

const describeField = (f: FieldSpec) =>
  `${f.field_label} (API name ${f.api_name}, ${f.data_type}` +
  (f.unique === undefined ? "" : ", unique") +
  (f.pick_list_values === undefined ? "" : `: ${f.pick_list_values.map((v) => v.actual_value).join(", ")}`) +
  (f.lookup === undefined ? "" : ` to ${f.lookup.module.api_name}`) + ")"

/** Whether every item of a metadata answer succeeded. */
const succeeded = (status: number, json: unknown, name: string) =>
  status >= 200 && status < 300 && isRecord(json) && Array.isArray(json[name]) &&
  json[name].every((item) => isRecord(item) && item["status"] === "success")

/**
 * The opt-out checkboxes on Leads and Contacts (ZohoSchema.OPT_OUT_FIELDS), and then every number already on
 * the organisation's opt-out list queued for ZohoOptOutSync, so the boxes show the list from the start.
 */
const optOutBoxes = (
  session: ZohoSessionService,
  orgId: string,
  report: { readonly created: Array<string>; readonly existing: Array<string>; readonly byHand: Array<string> }
) =>
  Effect.gen(function*() {
    let ready = false
    for (const module of OPT_OUT_MODULES) {
      // A module the connected user may not read: the boxes are an administrator's to make, the rest goes on.
      const read = yield* Effect.either(session.call(orgId, "GET", `/settings/fields?module=${module}`))
      if (read._tag === "Left") {
        report.byHand.push(`In module ${module}, create the checkboxes ${OPT_OUT_FIELDS.map(describeField).join("; ")}.`)
        continue
      }
      const fields = listOf(read.right, "fields")
      const missing: Array<FieldSpec> = []
      for (const box of OPT_OUT_FIELDS) {
        const found = fields.find((f) => text(f, "api_name") === box.api_name)
        if (found === undefined) {
          missing.push({ api_name: box.api_name, field_label: box.field_label, data_type: box.data_type })
        } else if (text(found, "data_type") !== box.data_type) {
          report.byHand.push(
            `In module ${module}, the field ${box.api_name} is a ${text(found, "data_type") ?? "field"} and not a checkbox: ` +
              `rename it, then run \`parley crm setup ${orgId}\` again (Parley writes true or false into it).`
          )
        } else {
          report.existing.push(`field ${module}.${box.api_name}`)
          ready = true
        }
      }
      if (missing.length === 0) continue
      const answer = yield* Effect.either(session.call(orgId, "POST", `/settings/fields?module=${module}`, { fields: missing }))
      if (answer._tag === "Right" && succeeded(answer.right.status, answer.right.json, "fields")) {
        for (const f of missing) report.created.push(`field ${module}.${f.api_name}`)
        ready = true
      } else {
        report.byHand.push(`In module ${module}, create the checkboxes ${missing.map(describeField).join("; ")}.`)
      }
    }
    if (ready) {
      const sql = yield* SqlClient.SqlClient
      yield* Effect.orDie(sql`INSERT INTO zoho_optout_syncs (org_id, phone, version, due_at, attempts, lease_until)
        SELECT org_id, phone, 1, 0, 0, 0 FROM opt_outs WHERE org_id = ${orgId}
        ON CONFLICT (org_id, phone) DO NOTHING`)
    }
  })

export const setup = (orgId: string) =>
  Effect.gen(function*() {
    const session = yield* ZohoSession
    const created: Array<string> = []
    const existing: Array<string> = []
    const byHand: Array<string> = []
    const me = listOf(yield* session.call(orgId, "GET", "/users?type=CurrentUser"), "users")[0]
    const profile = me?.["profile"]
    const profileId = isRecord(profile) ? text(profile, "id") : undefined
    const modules = listOf(yield* session.call(orgId, "GET", "/settings/modules"), "modules")
    // Every profile that reads Leads or Contacts sees Parley's modules (ZohoProfiles), not only the connecting one.
    const access = yield* ZohoProfiles.readers(session, orgId, profileId)
    const ready: Array<(typeof MODULES)[number]> = []
    for (const m of MODULES) {
      if (modules.some((found) => text(found, "api_name") === m.apiName)) {
        existing.push(`module ${m.apiName}`)
      } else {
        const answer = yield* Effect.either(session.call(orgId, "POST", "/settings/modules", {
          modules: [{
            api_name: m.apiName,
            plural_label: m.plural,
            singular_label: m.singular,
            profiles: access !== undefined && access.length > 0 ? access.map((p) => ({ id: p.id })) : profileId === undefined ? [] : [{ id: profileId }]
          }]
        }))
        if (answer._tag === "Right" && succeeded(answer.right.status, answer.right.json, "modules")) {
          created.push(`module ${m.apiName}`)
        } else {
          byHand.push(
            `Create a custom module "${m.plural}" with API name ${m.apiName} (Setup → Customization → Modules and Fields), ` +
              `with these fields: ${m.fields.map(describeField).join("; ")}.`
          )
          continue
        }
      }
      ready.push(m)
      const fields = listOf(yield* session.call(orgId, "GET", `/settings/fields?module=${m.apiName}`), "fields")
      const missing = m.fields.filter((f) => !fields.some((found) => text(found, "api_name") === f.api_name))
      for (const f of m.fields) if (!missing.includes(f)) existing.push(`field ${m.apiName}.${f.api_name}`)
      // A text area made before Parley asked for large ones (or by hand) holds 2,000 characters: texts and
      // transcripts longer than that are cut to fit it (ZohoFieldLengths) until an administrator enlarges it.
      for (const f of m.fields) {
        if (f.textarea === undefined) continue
        const found = fields.find((candidate) => text(candidate, "api_name") === f.api_name)
        const length = found?.["length"]
        if (found !== undefined && typeof length === "number" && length < LARGE_TEXTAREA_LENGTH) {
          byHand.push(
            `In module ${m.apiName}, the field ${f.field_label} (API name ${f.api_name}) holds ${length} characters: ` +
              `edit it (Setup → Customization → Modules and Fields → ${m.plural} → ${f.field_label} → Edit Properties) ` +
              `and set its size to Large (${LARGE_TEXTAREA_LENGTH.toLocaleString("en")} characters). ` +
              `Until then Parley cuts longer texts to ${length} characters in Zoho and keeps the full text itself.`
          )
        }
      }
      if (missing.length === 0) continue
      const answer = yield* Effect.either(session.call(orgId, "POST", `/settings/fields?module=${m.apiName}`, { fields: missing }))
      if (answer._tag === "Right" && succeeded(answer.right.status, answer.right.json, "fields")) {
        for (const f of missing) created.push(`field ${m.apiName}.${f.api_name}`)
      } else {
        byHand.push(`In module ${m.apiName}, create the fields ${missing.map(describeField).join("; ")}` +
          (missing.some((f) => f.api_name === KEY_FIELD) ? ` (${KEY_FIELD} must be marked "Do not allow duplicate values")` : "") + ".")
      }
    }
    yield* optOutBoxes(session, orgId, { created, existing, byHand })
    if (access === undefined) {
      byHand.push(ZohoProfiles.unlistedInstruction(ready))
    } else if (ready.length > 0) {
      const granted = yield* ZohoProfiles.grant(session, orgId, ready, access)
      created.push(...granted.created)
      byHand.push(...granted.byHand)
    }
    const report: SetupReport = { created, existing, byHand }
    return report
  })
