/**
 * Vapi as a provider of AI calls: its settings, its client for the dispatcher (create a call from the
 * number's Vapi id with the bot's assistant; list the calls an attempt with an unknown outcome may have
 * made; read a call again), and its server-message route.
 */
import { Organisations, ProviderReports } from "@parley/core/domain"
import { Effect, Option } from "effect"
import type { ServerSettings } from "../../config/ServerConfig.js"
import type { Change, ClaimedRow } from "../../dispatch/ClaimedAction.js"
import { defineProvider, type ProviderClient, type Recheck } from "../Provider.js"
import { API_BASE_FIELD } from "../ProviderSettings.js"
import { VAPI_EVENTS_PATH, vapiCallbackRoutes } from "./VapiCallbacks.js"
import * as Vapi from "./VapiClient.js"
import { checkVapiSettings, readVapiSettings, storeVapiSettings, VAPI_FIELDS, type VapiSettings } from "./VapiSettings.js"
import { vapiCallStatus, vapiEnding } from "./VapiStatuses.js"

/** An organisation's numbers and bots, for their Vapi ids. */
interface Directory {
  readonly numbers: ReadonlyArray<Organisations.NumberRow>
  readonly bots: ReadonlyArray<Organisations.BotRow>
}

const callChange = (call: Vapi.VapiCall, now: number, recheckMs: number): Change => {
  const status = (call.status === null ? null : vapiCallStatus(call.status)) ?? "Queued"
  return {
    status,
    workAt: ProviderReports.isFinal("ai_call", status) ? null : now + recheckMs,
    sid: call.id,
    ...(call.status === null ? {} : { providerStatus: call.status })
  }
}

/** What a call read again says; None while it says nothing Parley's list has a status for. */
const recheckOf = (call: Vapi.VapiCallDetails): Option.Option<Recheck> => {
  const ending = call.status === "ended" || (call.status === null && call.endedReason !== null)
    ? vapiEnding(call.endedReason ?? "")
    : null
  const status = ending?.status ?? (call.status === null ? null : vapiCallStatus(call.status))
  if (status === null) return Option.none()
  const raw = call.endedReason ?? call.status ?? ""
  return Option.some(
    status === "Completed"
      ? {
        status,
        providerStatus: raw,
        body: call.transcript ?? "",
        ...(call.recordingUrl === null ? {} : { audioFileId: call.recordingUrl })
      }
      : ProviderReports.isFinal("ai_call", status)
      ? { status, providerStatus: raw, errorMessage: ending?.errorMessage ?? raw }
      : { status, providerStatus: raw }
  )
}

const vapiClient = (settings: VapiSettings, directory: Directory, config: ServerSettings): ProviderClient => {
  const phoneNumberId = (row: ClaimedRow) =>
    directory.numbers.find((n) => n.phoneNumber === row.line)?.providerIds?.find((p) => !p.startsWith("PN"))
  const assistantId = (row: ClaimedRow) => directory.bots.find((b) => b.id === row.bot_id)?.providerId ?? undefined
  return {
    cannotSend: (row) => {
      if (phoneNumberId(row) === undefined) {
        const number = directory.numbers.find((n) => n.phoneNumber === row.line)
        return `The number ${row.line} has no Vapi phone number id: add it with ` +
          `\`parley numbers add --org ${row.org_id} --sid ${number?.sid ?? "SID"} … --provider-id <Vapi phone number id>\`.`
      }
      if (assistantId(row) === undefined) {
        return `The bot ${row.bot_id ?? ""} has no Vapi assistant id: add it with ` +
          `\`parley bots add --org ${row.org_id} --id ${row.bot_id ?? "BOT"} … --provider-id <Vapi assistant id>\`.`
      }
      return null
    },
    candidates: (row, since, now) =>
      Effect.map(
        Vapi.findCalls(settings, { phoneNumberId: phoneNumberId(row) ?? "", customerNumber: row.counterpart, since }),
        (found) =>
          found.map((f) => ({
            id: f.call.id,
            owner: f.parleyActionId,
            change: callChange(f.call, now, config.providerRecheckMs)
          }))
      ),
    send: (row, now) =>
      Effect.map(
        Vapi.createCall(settings, {
          assistantId: assistantId(row) ?? "",
          phoneNumberId: phoneNumberId(row) ?? "",
          customerNumber: row.counterpart,
          variableValues: {
            mode: row.mode ?? "follow_script",
            ...(row.purpose_message === null ? {} : { purposeMessage: row.purpose_message })
          },
          metadata: { parleyActionId: String(row.id), parleyOrgId: row.org_id }
        }),
        (call) => callChange(call, now, config.providerRecheckMs)
      ),
    recheck: (_row, sid) => Effect.map(Vapi.getCall(settings, sid), Option.flatMap(recheckOf))
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
