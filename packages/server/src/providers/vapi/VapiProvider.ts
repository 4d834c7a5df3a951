/**
 * Vapi as a provider of AI calls: its settings, its client for the dispatcher (create a call from the
 * number's Vapi id with the bot's assistant; list the calls an attempt with an unknown outcome may have
 * made; read a call again), and its server-message route.
 */
import { Organisations, ProviderReports, type Providers } from "@parley/core/domain"
import { Effect, Option } from "effect"
import type { ServerSettings } from "../../config/ServerConfig.js"
import { defineProvider, type ProviderClient } from "../Provider.js"
import { API_BASE_FIELD } from "../ProviderSettings.js"
import { VAPI_EVENTS_PATH, vapiCallbackRoutes } from "./VapiCallbacks.js"
import * as Vapi from "./VapiClient.js"
import { checkVapiSettings, readVapiSettings, storeVapiSettings, VAPI_FIELDS, type VapiSettings } from "./VapiSettings.js"
import { callDetailsRecheck } from "./VapiReports.js"
import { vapiCallStatus } from "./VapiStatuses.js"

/** An organisation's numbers and bots, for their Vapi ids. */
interface Directory {
  readonly numbers: ReadonlyArray<Organisations.NumberRow>
  readonly bots: ReadonlyArray<Organisations.BotRow>
}

const callChange = (call: Vapi.VapiCall, now: number, recheckMs: number): Providers.Change => {
  const status = (call.status === null ? null : vapiCallStatus(call.status)) ?? "Queued"
  return {
    status,
    workAt: ProviderReports.isFinal("ai_call", status) ? null : now + recheckMs,
    sid: call.id,
    ...(call.status === null ? {} : { providerStatus: call.status })
  }
}

/** How a number's id at one provider is named among its ids: `vapi:<id>`. */
export const VAPI_ID_PREFIX = "vapi:"

/**
 * The number's Vapi phone number id among its provider ids: the one named `vapi:<id>`; else, for an id
 * given bare (before ids were named), the number's only bare id — none when it has several, rather than a
 * guess at which is Vapi's from another provider's id format.
 */
export const vapiNumberId = (providerIds: ReadonlyArray<string>): string | undefined => {
  const named = providerIds.find((id) => id.startsWith(VAPI_ID_PREFIX))
  if (named !== undefined) return named.slice(VAPI_ID_PREFIX.length) || undefined
  const bare = providerIds.filter((id) => !/^[a-z]+:/.test(id))
  return bare.length === 1 ? bare[0] : undefined
}

const vapiClient = (settings: VapiSettings, directory: Directory, config: ServerSettings): ProviderClient => {
  const phoneNumberId = (action: Providers.Handoff) =>
    vapiNumberId(directory.numbers.find((n) => n.phoneNumber === action.line)?.providerIds ?? [])
  const assistantId = (action: Providers.Handoff) => directory.bots.find((b) => b.id === action.botId)?.providerId ?? undefined
  return {
    cannotSend: (action) => {
      if (phoneNumberId(action) === undefined) {
        const number = directory.numbers.find((n) => n.phoneNumber === action.line)
        return `The number ${action.line} has no Vapi phone number id: add it with ` +
          `\`parley numbers add --org ${action.orgId} --sid ${number?.sid ?? "SID"} … --provider-id ${VAPI_ID_PREFIX}<Vapi phone number id>\`.`
      }
      if (assistantId(action) === undefined) {
        return `The bot ${action.botId ?? ""} has no Vapi assistant id: add it with ` +
          `\`parley bots add --org ${action.orgId} --id ${action.botId ?? "BOT"} … --provider-id <Vapi assistant id>\`.`
      }
      return null
    },
    candidates: (action, since, now) =>
      Effect.map(
        Vapi.findCalls(settings, { phoneNumberId: phoneNumberId(action) ?? "", customerNumber: action.counterpart, since }),
        (found) =>
          found.map((f) => ({
            id: f.call.id,
            owner: f.parleyActionId,
            change: callChange(f.call, now, config.providerRecheckMs)
          }))
      ),
    send: (action, now) =>
      Effect.map(
        Vapi.createCall(settings, {
          assistantId: assistantId(action) ?? "",
          phoneNumberId: phoneNumberId(action) ?? "",
          customerNumber: action.counterpart,
          variableValues: {
            mode: action.mode ?? "follow_script",
            ...(action.purposeMessage === null ? {} : { purposeMessage: action.purposeMessage })
          },
          metadata: { parleyActionId: action.id, parleyOrgId: action.orgId }
        }),
        (call) => callChange(call, now, config.providerRecheckMs)
      ),
    recheck: (_row, sid) => Effect.map(Vapi.getCall(settings, sid), Option.flatMap(callDetailsRecheck))
  }
}

export const vapiProvider = defineProvider({
  name: "vapi",
  label: "Vapi",
  kind: "ai_call",
  serves: "AI calls",
  defaultApiBase: Vapi.VAPI_API_BASE,
  fields: [...VAPI_FIELDS, API_BASE_FIELD],
  check: checkVapiSettings,
  store: storeVapiSettings,
  read: readVapiSettings,
  client: (settings, { config, orgId }) =>
    Effect.gen(function*() {
      const organisations = yield* Organisations.Organisations
      const directory = { numbers: yield* organisations.listNumbers(orgId), bots: yield* organisations.listBots(orgId) }
      return vapiClient(settings, directory, config)
    }),
  routes: vapiCallbackRoutes,
  setup: ({ orgId, publicBase: base }) => [
    `Vapi server URL: ${base}${VAPI_EVENTS_PATH}?org=${encodeURIComponent(orgId)}`
  ]
})
