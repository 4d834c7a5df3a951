/** `parley numbers add | list`: the organisation's sender numbers. */
import { randomBytes } from "node:crypto"
import { Command, Options } from "@effect/cli"
import { Organisations } from "@parley/core/domain"
import { Effect, Option } from "effect"
import { csv, e164, fail, nonEmpty, oneOfEach, orNone, requireOrg } from "../Input.js"
import { listCommand } from "../ListCommand.js"
import { json, optionalText, orgFlag, print } from "../Output.js"

const CAPABILITIES = ["sms", "voice", "whatsapp"] as const

const view = (n: Organisations.NumberRow) => ({
  sid: n.sid,
  orgId: n.orgId,
  phoneNumber: n.phoneNumber,
  friendlyName: n.friendlyName,
  capabilities: { sms: n.sms, voice: n.voice, whatsapp: n.whatsApp },
  voiceOutboundBotId: n.voiceOutboundBotId,
  providerIds: n.providerIds ?? []
})

const capabilityList = (n: Organisations.NumberRow) =>
  [n.sms ? "sms" : null, n.voice ? "voice" : null, n.whatsApp ? "whatsapp" : null]
    .filter((c) => c !== null)
    .join(",")

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    phone: Options.text("phone").pipe(Options.withDescription("The number in E.164, such as +14155550100")),
    name: Options.text("name").pipe(Options.withDescription("Friendly name")),
    sid: optionalText("sid", "Number sid (default: PN followed by 32 hex digits); an existing sid is updated"),
    capabilities: Options.text("capabilities").pipe(
      Options.withDescription("Comma-separated: sms, voice, whatsapp (default sms,voice)"),
      Options.withDefault("sms,voice")
    ),
    voiceBot: optionalText("voice-bot", "Bot id that answers outbound calls from this number"),
    providerIds: Options.text("provider-id").pipe(
      Options.withDescription(
        "The number's ids at the organisation's providers (a carrier's phone number sid, an AI-call provider's " +
          "phone number id, for those that have one); " +
          "repeat the flag or separate by commas"
      ),
      Options.repeated
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const organisations = yield* Organisations.Organisations
      const phoneNumber = yield* e164("--phone", input.phone.trim())
      const friendlyName = yield* nonEmpty("--name", input.name)
      const sid = Option.isSome(input.sid)
        ? yield* nonEmpty("--sid", input.sid.value)
        : `PN${randomBytes(16).toString("hex")}`
      if (sid.length > 64) return yield* fail(`--sid "${sid}" is longer than 64 characters`)
      const capabilityItems = csv(input.capabilities.toLowerCase())
      if (capabilityItems.length === 0) {
        return yield* fail(`--capabilities is empty; give a comma-separated list of ${CAPABILITIES.join(", ")}`)
      }
      const capabilities = yield* oneOfEach("--capabilities", capabilityItems, CAPABILITIES, "capability")
      const bots = yield* organisations.listBots(input.org)
      let voiceOutboundBotId: string | null = null
      if (Option.isSome(input.voiceBot)) {
        const wanted = input.voiceBot.value.trim()
        if (!bots.some((b) => b.id === wanted)) {
          return yield* fail(
            `--voice-bot: unknown bot id "${wanted}" of ${input.org}` +
              (bots.length === 0 ? " (it has no bots yet)" : `; expected ${bots.map((b) => b.id).join(", ")}`)
          )
        }
        voiceOutboundBotId = wanted
      }
      // A number belongs to one organisation: inbound texts to it are routed by the number alone.
      const clash = (yield* organisations.findNumbersByPhone(phoneNumber)).find((n) =>
        n.orgId !== input.org || n.sid !== sid
      )
      if (clash !== undefined) {
        return yield* fail(
          clash.orgId === input.org
            ? `${phoneNumber} is already number ${clash.sid} of ${input.org} (pass --sid ${clash.sid} to update it)`
            : `${phoneNumber} already belongs to another organisation (${clash.orgId}); a number can serve only ` +
              "one organisation, since inbound messages are routed by the number alone. Remove it there first."
        )
      }
      const row: Organisations.NumberRow = {
        orgId: input.org,
        sid,
        phoneNumber,
        friendlyName,
        sms: capabilities.includes("sms"),
        voice: capabilities.includes("voice"),
        whatsApp: capabilities.includes("whatsapp"),
        voiceOutboundBotId,
        providerIds: input.providerIds.flatMap(csv)
      }
      yield* organisations.upsertNumber(row)
      yield* print(input.json, view(row), () =>
        `Added number ${row.sid} ${row.phoneNumber} (${row.friendlyName}; ${capabilityList(row)}) to ${row.orgId}`)
    })
).pipe(Command.withDescription("Add (or update, by --sid) a sender number"))

const list = listCommand({
  description: "List an organisation's sender numbers",
  load: (orgId) => Effect.flatMap(Organisations.Organisations, (organisations) => organisations.listNumbers(orgId)),
  view,
  empty: (orgId) => `No numbers for ${orgId}: add one with \`parley numbers add --org ${orgId} --phone E164 --name NAME\`.`,
  columns: ["SID", "PHONE", "NAME", "CAPABILITIES", "VOICE BOT"],
  cells: (n) => [n.sid, n.phoneNumber, n.friendlyName, capabilityList(n), orNone(n.voiceOutboundBotId)]
})

export const numbers = Command.make("numbers").pipe(
  Command.withDescription("Sender numbers"),
  Command.withSubcommands([add, list])
)
