/** `parley bots add | list`: the organisation's AI-call bots. */
import { Command, Options } from "@effect/cli"
import { Crypto, Organisations } from "@parley/core/internal"
import { Effect, Option } from "effect"
import { fail, nonEmpty, orNone, requireOrg } from "../Input.js"
import { listCommand } from "../ListCommand.js"
import { json, optionalText, orgFlag, print } from "../Output.js"

const view = (b: Organisations.BotRow) => ({
  id: b.id,
  orgId: b.orgId,
  name: b.name,
  description: b.description,
  active: b.active,
  direction: b.direction,
  providerId: b.providerId ?? null
})

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    name: Options.text("name").pipe(Options.withDescription("The bot's name")),
    id: optionalText("id", "Bot id (default: a new bot_… id); an existing id is updated"),
    description: optionalText("description", "What the bot does"),
    inactive: Options.boolean("inactive").pipe(Options.withDescription("Add the bot switched off")),
    direction: Options.choice("direction", ["outbound", "inbound"]).pipe(
      Options.withDescription("Outbound bots can be started through the API"),
      Options.withDefault("outbound" as const)
    ),
    providerId: optionalText("provider-id", "The bot's id at the organisation's AI-call provider (its assistant or agent id)")
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const organisations = yield* Organisations.Organisations
      const id = Option.isSome(input.id) ? yield* nonEmpty("--id", input.id.value) : Crypto.newId("bot")
      if (id.length > 128) return yield* fail(`--id "${id}" is longer than 128 characters`)
      const row: Organisations.BotRow = {
        orgId: input.org,
        id,
        name: yield* nonEmpty("--name", input.name),
        description: Option.getOrNull(input.description),
        active: !input.inactive,
        direction: input.direction,
        providerId: Option.isSome(input.providerId) ? yield* nonEmpty("--provider-id", input.providerId.value) : null
      }
      yield* organisations.upsertBot(row)
      yield* print(input.json, view(row), () =>
        `Added ${row.active ? "active" : "inactive"} ${row.direction} bot ${row.id} (${row.name}) to ${row.orgId}`)
    })
).pipe(Command.withDescription("Add (or update, by --id) an AI-call bot"))

const list = listCommand({
  description: "List an organisation's bots",
  load: (orgId) => Effect.flatMap(Organisations.Organisations, (organisations) => organisations.listBots(orgId)),
  view,
  empty: (orgId) => `No bots for ${orgId}: add one with \`parley bots add --org ${orgId} --name NAME\`.`,
  columns: ["ID", "NAME", "STATUS", "DIRECTION", "DESCRIPTION"],
  cells: (b) => [b.id, b.name, b.active ? "active" : "inactive", b.direction, orNone(b.description)]
})

export const bots = Command.make("bots").pipe(
  Command.withDescription("AI-call bots"),
  Command.withSubcommands([add, list])
)
