/**
 * `parley records add | list`: records of the embedded CRM's Leads, Contacts, Vendors and Deals. The list
 * shows each record's opt-out state (the channels its number is opted out of), as a hosted CRM shows it in
 * its own checkboxes.
 */
import { Command, Options } from "@effect/cli"
import { Crm } from "@parley/core/domain"
import { OptOuts } from "@parley/core/internal"
import { Effect, Option } from "effect"
import { e164, fail, MODULES, nonEmpty, orNone, requireOrg } from "../Input.js"
import { listCommand } from "../ListCommand.js"
import { json, optionalText, orgFlag, print } from "../Output.js"

const view = (r: Crm.CrmRecord) => ({
  orgId: r.orgId,
  module: r.module,
  id: r.id,
  name: r.name,
  phone: r.phone,
  ownerId: r.ownerId,
  fields: r.fields
})

/** A listed record and the channels its number is opted out of (empty: it may be texted and called). */
interface ListedRecord {
  readonly record: Crm.CrmRecord
  readonly optedOut: ReadonlyArray<string>
}

/** The organisation's records, each with its number's opt-out entry (one read for all the numbers). */
const withOptOuts = (orgId: string) =>
  Effect.gen(function*() {
    const records = yield* Effect.flatMap(Crm.Crm, (crm) => crm.listRecords(orgId))
    const phones = records.flatMap((r) => (r.phone === null ? [] : [r.phone]))
    const entries = yield* Effect.flatMap(OptOuts.OptOuts, (optOuts) => optOuts.findMany(orgId, phones))
    return records.map((record): ListedRecord => ({
      record,
      optedOut: record.phone === null ? [] : entries.get(record.phone)?.channels ?? []
    }))
  })

const parseFields = (items: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed: Record<string, string> = {}
    for (const item of items) {
      const at = item.indexOf("=")
      const label = at < 0 ? "" : item.slice(0, at).trim()
      if (label === "") return yield* fail(`--field "${item}" must look like "First Name=Ada"`)
      parsed[label] = item.slice(at + 1)
    }
    return parsed
  })

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    module: Options.choice("module", MODULES).pipe(Options.withDescription("CRM module")),
    id: Options.text("id").pipe(Options.withDescription("Record id in the module; an existing id is updated")),
    name: Options.text("name").pipe(Options.withDescription("Record name")),
    phone: optionalText("phone", "Phone number in E.164"),
    owner: optionalText("owner", "CRM account id of the record's owner"),
    field: Options.text("field").pipe(
      Options.withDescription("A field value for merging, LABEL=VALUE, such as \"First Name=Ada\" (repeatable)"),
      Options.repeated
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const crm = yield* Crm.Crm
      const row: Crm.CrmRecord = {
        orgId: input.org,
        module: input.module,
        id: yield* nonEmpty("--id", input.id),
        name: yield* nonEmpty("--name", input.name),
        phone: Option.isSome(input.phone) ? yield* e164("--phone", input.phone.value.trim()) : null,
        ownerId: Option.isSome(input.owner) ? yield* nonEmpty("--owner", input.owner.value) : null,
        fields: yield* parseFields(input.field)
      }
      yield* crm.upsertRecord(row)
      yield* print(input.json, view(row), () => `Added ${row.module} record ${row.id} (${row.name}) to ${row.orgId}`)
    })
).pipe(Command.withDescription("Add (or update, by module and id) a CRM record"))

const list = listCommand({
  description: "List an organisation's CRM records",
  load: withOptOuts,
  view: (row) => ({ ...view(row.record), optedOut: row.optedOut }),
  empty: (orgId) => `No CRM records for ${orgId}: add one with \`parley records add --org ${orgId} …\`.`,
  columns: ["MODULE", "ID", "NAME", "PHONE", "OPT-OUT", "OWNER", "FIELDS"],
  cells: ({ optedOut, record: r }) => [
    r.module,
    r.id,
    r.name,
    orNone(r.phone),
    optedOut.length === 0 ? "-" : optedOut.join(","),
    orNone(r.ownerId),
    Object.entries(r.fields).map(([k, v]) => `${k}=${v}`).join("; ")
  ]
})

export const records = Command.make("records").pipe(
  Command.withDescription("Records of the embedded CRM"),
  Command.withSubcommands([add, list])
)
