/**
 * What Parley keeps inside a Zoho CRM organisation: the two custom modules
 * `crm setup` creates, their fields, and how an action is written into a
 * `Parley_Messages` record. The README's field table is this file in prose.
 */
import { createHash } from "node:crypto"
import type { Crm } from "@parley/core/domain"
import type { OptOutChannel } from "@parley/core/internal"

export const TEMPLATES_MODULE = "Parley_Templates"
export const MESSAGES_MODULE = "Parley_Messages"
/** The unique text field upserts match on: a retry of the same creation finds the same record. */
export const KEY_FIELD = "Parley_Key"

/** The modules a Parley_Messages record may look up, with the lookup field's API name. */
export const LOOKUPS: ReadonlyArray<{ readonly module: string; readonly field: string }> = [
  { module: "Leads", field: "Lead" },
  { module: "Contacts", field: "Contact" },
  { module: "Accounts", field: "Account" },
  { module: "Vendors", field: "Vendor" },
  { module: "Deals", field: "Deal" }
]

export interface FieldSpec {
  readonly api_name: string
  readonly field_label: string
  readonly data_type: string
  readonly length?: number
  /** Zoho's OpenAPI file (zoho/crm-oas v8.0, fields.json `unique`) types `casesensitive` as a string. */
  readonly unique?: { readonly casesensitive: "true" | "false" }
  readonly pick_list_values?: ReadonlyArray<{ readonly display_value: string; readonly actual_value: string }>
  readonly lookup?: { readonly module: { readonly api_name: string } }
  /** A multi-line field's size: Parley creates every one large (32,000 characters), never Zoho's small default. */
  readonly textarea?: { readonly type: "large" }
}

/** The characters of Zoho's large text area; `crm setup` reports any smaller text area as one to change. */
export const LARGE_TEXTAREA_LENGTH = 32_000
const LARGE = { type: "large" } as const

const picklist = (values: ReadonlyArray<string>) =>
  values.map((v) => ({ display_value: v, actual_value: v }))

export const TEMPLATE_FIELDS: ReadonlyArray<FieldSpec> = [
  { api_name: "Body", field_label: "Body", data_type: "textarea", textarea: LARGE },
  { api_name: "Record_Type", field_label: "Record Type", data_type: "picklist", pick_list_values: picklist(["-None-", "Leads", "Contacts", "Vendors", "Deals"]) }
]

export const MESSAGE_FIELDS: ReadonlyArray<FieldSpec> = [
  { api_name: KEY_FIELD, field_label: "Parley Key", data_type: "text", length: 64, unique: { casesensitive: "true" } },
  { api_name: "Kind", field_label: "Kind", data_type: "picklist", pick_list_values: picklist(["Message", "AI Call"]) },
  { api_name: "Direction", field_label: "Direction", data_type: "picklist", pick_list_values: picklist(["Outbound", "Inbound"]) },
  { api_name: "Channel", field_label: "Channel", data_type: "picklist", pick_list_values: picklist(["SMS", "WhatsApp", "Call"]) },
  { api_name: "Status", field_label: "Status", data_type: "text", length: 40 },
  { api_name: "From_Number", field_label: "From Number", data_type: "phone" },
  { api_name: "To_Number", field_label: "To Number", data_type: "phone" },
  { api_name: "Body", field_label: "Body", data_type: "textarea", textarea: LARGE },
  { api_name: "Sent_At", field_label: "Sent At", data_type: "datetime" },
  { api_name: "Scheduled_For", field_label: "Scheduled For", data_type: "datetime" },
  { api_name: "Bot_Id", field_label: "Bot Id", data_type: "text", length: 100 },
  { api_name: "Sent_By", field_label: "Sent By", data_type: "text", length: 120 },
  { api_name: "Provider_Sid", field_label: "Provider Sid", data_type: "text", length: 100 },
  { api_name: "Recording_Id", field_label: "Recording Id", data_type: "text", length: 255 },
  { api_name: "Error_Message", field_label: "Error Message", data_type: "textarea", textarea: LARGE },
  { api_name: "Status_Changed_At", field_label: "Status Changed At", data_type: "datetime" },
  ...LOOKUPS.map((l): FieldSpec => ({ api_name: l.field, field_label: l.field, data_type: "lookup", lookup: { module: { api_name: l.module } } }))
]

/**
 * The checkboxes `crm setup` adds to Leads and Contacts (Zoho's checkbox is the field type `boolean`): ticked
 * on every record of a number while Parley's opt-out list stops that channel to it (ZohoOptOutSync), and read
 * when an action links a record (ZohoCrm.findRecord): an administrator's tick stops sends to the record.
 * WhatsApp has no box: a WhatsApp-only opt-out is Parley's list alone (docs/crm.md).
 */
export const OPT_OUT_MODULES: ReadonlyArray<"Leads" | "Contacts"> = ["Leads", "Contacts"]
export const SMS_OPT_OUT_FIELD = "Parley_SMS_Opt_Out"
export const OPT_OUT_FIELDS: ReadonlyArray<FieldSpec & { readonly channel: OptOutChannel }> = [
  { api_name: SMS_OPT_OUT_FIELD, field_label: "Parley SMS Opt Out", data_type: "boolean", channel: "SMS" },
  { api_name: "Parley_Call_Opt_Out", field_label: "Parley Call Opt Out", data_type: "boolean", channel: "Call" }
]

/** The boxes' values for an opt-out entry's channels (none: every box cleared). */
export const optOutBoxes = (channels: ReadonlyArray<OptOutChannel>): Record<string, boolean> =>
  Object.fromEntries(OPT_OUT_FIELDS.map((f) => [f.api_name, channels.includes(f.channel)]))

/** The channels a record's ticked boxes stop (only the boxes the record was read with). */
export const optedOutOf = (record: Readonly<Record<string, unknown>>): ReadonlyArray<OptOutChannel> =>
  OPT_OUT_FIELDS.filter((f) => record[f.api_name] === true).map((f) => f.channel)

/** Zoho's datetime format: ISO 8601 to the second with an offset (no milliseconds). */
export const zohoTime = (iso: string): string => iso.replace(/\.\d+Z$/, "Z").replace(/Z$/, "+00:00")

/** The upsert key of a draft: a hash, so neither the API key's id nor the Idempotency-Key is shown in Zoho. */
export const parleyKey = (key: string): string => createHash("sha256").update(key).digest("hex").slice(0, 48)

/** A new action as the fields of its Parley_Messages record. */
export const messageRecord = (draft: Crm.CrmActionDraft): Record<string, unknown> => {
  const outbound = draft.direction === "Outbound"
  const lookup = draft.record === null ? undefined : LOOKUPS.find((l) => l.module === draft.record?.module)
  return {
    Name: `${draft.kind === "ai_call" ? "AI call" : draft.type} ${outbound ? "to" : "from"} ${draft.counterpart}`.slice(0, 120),
    [KEY_FIELD]: parleyKey(draft.key),
    Kind: draft.kind === "ai_call" ? "AI Call" : "Message",
    Direction: draft.direction,
    Channel: draft.type,
    Status: draft.status,
    From_Number: outbound ? draft.line : draft.counterpart,
    To_Number: outbound ? draft.counterpart : draft.line,
    // Parley_Messages has one text field: an inbound message's media URLs follow its text there, a line each,
    // so the record in Zoho still shows a media-only message. An inbound record is never written back
    // (ZohoWriteBack: its status and body do not change), so this text stays.
    Body: [...(draft.body === "" ? [] : [draft.body]), ...(draft.mediaUrls ?? [])].join("\n"),
    Sent_At: zohoTime(draft.at),
    Scheduled_For: draft.scheduledFor === null ? null : zohoTime(new Date(draft.scheduledFor).toISOString()),
    Bot_Id: draft.botId,
    Sent_By: draft.sentBy,
    ...(lookup === undefined || draft.record === null ? {} : { [lookup.field]: { id: draft.record.id } })
  }
}

/** A stable UUID (version 5, RFC 9562) for a Zoho template record: the same record always has the same id. */
export const templateUuid = (orgId: string, recordId: string): string => {
  // The URL namespace of RFC 9562, with a name only Parley's Zoho templates use.
  const namespace = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex")
  const hash = createHash("sha1").update(namespace).update(`parley:zoho-template:${orgId}:${recordId}`).digest()
  const bytes = hash.subarray(0, 16)
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
