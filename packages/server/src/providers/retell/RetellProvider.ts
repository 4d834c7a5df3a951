/**
 * Retell AI as a provider of AI calls: its settings (the API key, which also signs its webhooks), its
 * client for the dispatcher (create a phone call from the action's number with the bot's agent; list
 * every call between the two numbers when an attempt's outcome is unknown; read a call again), and its
 * webhook route, whose URL `providers show` prints for the agent's webhook setting. A Retell number is
 * its E.164 number: numbers need no provider id here.
 */
import { Organisations, ProviderReports, type Providers } from "@parley/core/domain"
import { Effect, Option } from "effect"
import type { ServerSettings } from "../../config/ServerConfig.js"
import { defineProvider, type ProviderClient, type Recheck } from "../Provider.js"
import { API_BASE_FIELD } from "../ProviderSettings.js"
import { RETELL, RETELL_EVENTS_PATH, retellCallbackRoutes } from "./RetellCallbacks.js"
import * as Retell from "./RetellClient.js"
import { callDetailsReport } from "./RetellReports.js"
import { checkRetellSettings, readRetellSettings, RETELL_FIELDS, type RetellSettings, storeRetellSettings } from "./RetellSettings.js"
import { retellCallStatus } from "./RetellStatuses.js"

/** What a call Retell answered with (or listed) does to the action; how it ended is the webhooks' or a recheck's. */
const callChange = (call: Retell.RetellCall, now: number, recheckMs: number): Providers.Change => {
  const status = (call.status === null ? null : retellCallStatus(call.status)) ?? "Queued"
  return {
    status,
    workAt: ProviderReports.isFinal("ai_call", status) ? null : now + recheckMs,
    sid: call.id,
    ...(call.status === null ? {} : { providerStatus: call.status })
  }
}

const recheckOf = (call: Retell.RetellCallDetails): Option.Option<Recheck> =>
  Option.map(Option.fromNullable(callDetailsReport(call)), ({ sid: _sid, ...report }) => report)

const retellClient = (
  settings: RetellSettings,
  bots: ReadonlyArray<Organisations.BotRow>,
  config: ServerSettings
): ProviderClient => {
  const agentId = (action: Providers.Handoff) => bots.find((b) => b.id === action.botId)?.providerId ?? undefined
  return {
    cannotSend: (action) =>
      agentId(action) === undefined
        ? `The bot ${action.botId ?? ""} has no Retell agent id: add it with ` +
          `\`parley bots add --org ${action.orgId} --id ${action.botId ?? "BOT"} … --provider-id <Retell agent id>\`.`
        : null,
    candidates: (action, since, now) =>
      Effect.map(
        Retell.findCalls(settings, { fromNumber: action.line, toNumber: action.counterpart, since }),
        (found) =>
          found.map((f) => ({
            id: f.call.id,
            owner: f.parleyActionId,
            change: callChange(f.call, now, config.providerRecheckMs)
          }))
      ),
    send: (action, now) =>
      Effect.map(
        Retell.createPhoneCall(settings, {
          agentId: agentId(action) ?? "",
          fromNumber: action.line,
          toNumber: action.counterpart,
          dynamicVariables: {
            mode: action.mode ?? "follow_script",
            ...(action.purposeMessage === null ? {} : { purposeMessage: action.purposeMessage })
          },
          metadata: { parleyActionId: action.id, parleyOrgId: action.orgId }
        }),
        (call) => callChange(call, now, config.providerRecheckMs)
      ),
    recheck: (_row, sid) => Effect.map(Retell.getCall(settings, sid), Option.flatMap(recheckOf))
  }
}

export const retellProvider = defineProvider({
  name: RETELL,
  label: "Retell",
  kind: "ai_call",
  serves: "AI calls",
  defaultApiBase: Retell.RETELL_API_BASE,
  fields: [...RETELL_FIELDS, API_BASE_FIELD],
  check: checkRetellSettings,
  store: storeRetellSettings,
  read: readRetellSettings,
  client: (settings, { config, orgId }) =>
    Effect.map(
      Effect.flatMap(Organisations.Organisations, (organisations) => organisations.listBots(orgId)),
      (bots) => retellClient(settings, bots, config)
    ),
  routes: retellCallbackRoutes,
  setup: ({ orgId, publicBase }) => [
    `Retell webhook URL (paste it into each Retell agent's webhook setting): ` +
    `${publicBase}${RETELL_EVENTS_PATH}?org=${encodeURIComponent(orgId)}`
  ]
})
