/**
 * The organisation's resources as a key sees them: sender numbers, bots and
 * templates, narrowed by the key's restrictions; and the resolution of a
 * `fromNumberSid` or `botId` named in a request:
 * - not the organisation's (or an inactive bot): 400 naming the field;
 * - the organisation's but outside the key's restrictions: 403 RESOURCE_DENIED;
 * - without the needed capability: 400 saying so.
 */
import { Context, Effect, Layer } from "effect"
import { CrmPermissionDenied, InvalidRequest, ResourceDenied } from "../contract/Errors.js"
import { Bot, SenderNumber, Template } from "../contract/Resources.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { type BotRow, type NumberRow, Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import type { CallerInfo } from "./Caller.js"

export const MAX_TEMPLATES = 200

export type NumberCapability = "sms" | "voice" | "whatsApp"

const CAPABILITY_TEXT: Record<NumberCapability, string> = {
  sms: "cannot send SMS",
  voice: "cannot place voice calls",
  whatsApp: "is not connected to WhatsApp"
}

const allowed = (restriction: ReadonlyArray<string>, id: string) => restriction.length === 0 || restriction.includes(id)

const isListedBot = (bot: BotRow) => bot.active && bot.direction === "outbound"

export interface DirectoryService {
  readonly numbers: (caller: CallerInfo) => Effect.Effect<ReadonlyArray<SenderNumber>, StorageError>
  /** The numbers the key may use, as rows (for line filters). */
  readonly permittedNumbers: (caller: CallerInfo) => Effect.Effect<ReadonlyArray<NumberRow>, StorageError>
  readonly bots: (caller: CallerInfo) => Effect.Effect<ReadonlyArray<Bot>, StorageError>
  readonly templates: (
    caller: CallerInfo
  ) => Effect.Effect<ReadonlyArray<Template>, CrmPermissionDenied | CrmError | StorageError>
  readonly resolveNumber: (
    caller: CallerInfo,
    sid: string,
    capability: NumberCapability
  ) => Effect.Effect<NumberRow, InvalidRequest | ResourceDenied | StorageError>
  readonly resolveBot: (
    caller: CallerInfo,
    botId: string
  ) => Effect.Effect<BotRow, InvalidRequest | ResourceDenied | StorageError>
}

export class Directory extends Context.Tag("@parley/core/Directory")<Directory, DirectoryService>() {}

export const layer: Layer.Layer<Directory, never, Organisations | Crm> = Layer.effect(
  Directory,
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    const permittedNumbers = (caller: CallerInfo) =>
      Effect.map(organisations.listNumbers(caller.orgId), (rows) => rows.filter((n) => allowed(caller.numberSids, n.sid)))
    return Directory.of({
      permittedNumbers,
      // Built from typed store rows; the response encoder validates them on the way out, so checking
      // them here as well only doubled the work (`disableValidation`).
      numbers: (caller) =>
        Effect.map(permittedNumbers(caller), (rows) =>
          rows.map((n) =>
            SenderNumber.make({
              sid: n.sid,
              phoneNumber: n.phoneNumber,
              friendlyName: n.friendlyName,
              capabilities: { sms: n.sms, voice: n.voice, whatsapp: n.whatsApp },
              voiceOutboundBotId: n.voiceOutboundBotId
            }, { disableValidation: true })
          )),
      bots: (caller) =>
        Effect.map(organisations.listBots(caller.orgId), (rows) =>
          rows
            .filter((b) => isListedBot(b) && allowed(caller.botIds, b.id))
            .map((b) => Bot.make({ id: b.id, name: b.name, description: b.description }, { disableValidation: true }))),
      templates: Effect.fnUntraced(function*(caller) {
        if (!caller.account.permissions.templates) {
          return yield* new CrmPermissionDenied({
            message: `The connected CRM account (${caller.account.name}) may not read message templates.`
          })
        }
        const rows = yield* crm.listTemplates(caller.orgId, MAX_TEMPLATES)
        return rows.map((t) =>
          Template.make({ id: t.id, crmId: t.crmId, recordType: t.recordType, name: t.name, body: t.body })
        )
      }),
      resolveNumber: Effect.fnUntraced(function*(caller, sid, capability) {
        const number = (yield* organisations.listNumbers(caller.orgId)).find((n) => n.sid === sid)
        if (number === undefined) {
          return yield* new InvalidRequest({ message: `fromNumberSid: no sender number ${sid} in this organisation.` })
        }
        if (!allowed(caller.numberSids, sid)) {
          return yield* new ResourceDenied({ message: `fromNumberSid: this API key may not use number ${sid}.` })
        }
        if (!number[capability]) {
          return yield* new InvalidRequest({
            message: `fromNumberSid: number ${sid} ${CAPABILITY_TEXT[capability]}.`
          })
        }
        return number
      }),
      resolveBot: Effect.fnUntraced(function*(caller, botId) {
        const bot = (yield* organisations.listBots(caller.orgId)).find((b) => b.id === botId)
        if (bot === undefined || !isListedBot(bot)) {
          return yield* new InvalidRequest({ message: `botId: no active outbound bot ${botId} in this organisation.` })
        }
        if (!allowed(caller.botIds, botId)) {
          return yield* new ResourceDenied({ message: `botId: this API key may not use bot ${botId}.` })
        }
        return bot
      })
    })
  })
)
