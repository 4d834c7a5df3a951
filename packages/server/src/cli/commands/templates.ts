/** `parley templates add | list`: the CRM's message templates. */
import { randomInt, randomUUID } from "node:crypto"
import { Command, Options } from "@effect/cli"
import { Crm } from "@parley/core/domain"
import { Effect, Option } from "effect"
import { fail, MODULES, nonEmpty, orNone, requireOrg } from "../Input.js"
import { listCommand } from "../ListCommand.js"
import { json, optionalText, orgFlag, print } from "../Output.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const view = (t: Crm.TemplateRow) => ({
  id: t.id,
  orgId: t.orgId,
  crmId: t.crmId,
  recordType: t.recordType,
  name: t.name,
  body: t.body
})

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    name: Options.text("name").pipe(Options.withDescription("Template name (templates are listed by name)")),
    body: Options.text("body").pipe(
      Options.withDescription("Template text; may contain merge placeholders such as ${Leads.First Name}")
    ),
    id: optionalText("id", "Template UUID (default: a random UUID); an existing id is updated"),
    recordType: Options.choice("record-type", MODULES).pipe(
      Options.withDescription("CRM module the template is written for"),
      Options.optional
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const crm = yield* Crm.Crm
      const id = Option.isSome(input.id) ? input.id.value.trim() : randomUUID()
      if (!UUID.test(id)) return yield* fail(`--id "${id}" must be a UUID such as ${randomUUID()}`)
      const existing = yield* crm.findTemplate(input.org, id)
      const body = input.body
      if (body.trim() === "") return yield* fail("--body must not be empty")
      const row: Crm.TemplateRow = {
        orgId: input.org,
        id,
        // The CRM's own numeric id; kept when the template is updated.
        crmId: Option.match(existing, { onNone: () => String(randomInt(100_000_000, 1_000_000_000)), onSome: (t) => t.crmId }),
        recordType: Option.getOrNull(input.recordType),
        name: yield* nonEmpty("--name", input.name),
        body
      }
      yield* crm.upsertTemplate(row)
      yield* print(input.json, view(row), () => `Added template ${row.id} (${row.name}, CRM id ${row.crmId}) to ${row.orgId}`)
    })
).pipe(Command.withDescription("Add (or update, by --id) a message template"))

const list = listCommand({
  description: "List an organisation's message templates, by name",
  load: (orgId) => Effect.flatMap(Crm.Crm, (crm) => crm.listTemplates(orgId, Number.MAX_SAFE_INTEGER)),
  view,
  empty: (orgId) => `No templates for ${orgId}: add one with \`parley templates add --org ${orgId} --name NAME --body BODY\`.`,
  columns: ["ID", "CRM ID", "NAME", "RECORD TYPE", "BODY"],
  cells: (t) => [t.id, t.crmId, t.name, orNone(t.recordType), t.body.length > 60 ? `${t.body.slice(0, 57)}...` : t.body]
})

export const templates = Command.make("templates").pipe(
  Command.withDescription("CRM message templates"),
  Command.withSubcommands([add, list])
)
