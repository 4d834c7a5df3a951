/**
 * Twilio as Parley's provider for texts and WhatsApp: its settings, its client for the dispatcher (send a
 * message; list the messages an attempt with an unknown outcome may have sent; read a message again),
 * and its callback routes (status callbacks, inbound messages).
 */
import { ProviderReports, type Providers } from "@parley/core/domain"
import { Effect, Option } from "effect"
import type { ServerSettings } from "../../config/ServerConfig.js"
import { publicBase } from "../CallbackUrls.js"
import { defineProvider, type ProviderClient } from "../Provider.js"
import { API_BASE_FIELD } from "../ProviderSettings.js"
import { TWILIO_STATUS_PATH, twilioCallbackRoutes } from "./TwilioCallbacks.js"
import * as Twilio from "./TwilioClient.js"
import { twilioInboundRoutes } from "./TwilioInbound.js"
import { checkTwilioSettings, readTwilioSettings, storeTwilioSettings, TWILIO_FIELDS, type TwilioSettings } from "./TwilioSettings.js"
import { twilioMessageStatus } from "./TwilioStatuses.js"

/** Where Twilio reports a text's statuses; the organisation and action ride in the signed URL. */
const statusCallback = (config: ServerSettings, orgId: string, actionId: string): string =>
  `${publicBase(config)}${TWILIO_STATUS_PATH}?org=${encodeURIComponent(orgId)}&action=${encodeURIComponent(actionId)}`

const address = (action: Providers.Handoff, number: string) => action.type === "WhatsApp" ? `whatsapp:${number}` : number

/** What a message Twilio answered with does to the action. */
const textChange = (message: Twilio.TwilioMessage, now: number, recheckMs: number): Providers.Change => {
  const status = twilioMessageStatus(message.status) ?? "Sending"
  return {
    status,
    workAt: ProviderReports.isFinal("message", status) ? null : now + recheckMs,
    // Twilio's schema lets an answer omit the sid: the status callbacks carry it.
    ...(message.sid === null ? {} : { sid: message.sid }),
    providerStatus: message.status,
    // A text's time is when it was sent.
    at: new Date(now).toISOString(),
    ...(status === "Failed" || status === "Undelivered"
      ? { errorMessage: `${message.errorCode ?? ""}${message.errorCode === null ? "" : ": "}${message.errorMessage ?? message.status}` }
      : {})
  }
}

const twilioClient = (settings: TwilioSettings, config: ServerSettings): ProviderClient => {
  // Through a Messaging Service, From still names the action's number: without it Twilio would pick any
  // number of the service's pool while the record names the chosen one.
  const sender = (action: Providers.Handoff) =>
    settings.messagingServiceSid !== undefined && action.type !== "WhatsApp"
      ? { messagingServiceSid: settings.messagingServiceSid, from: action.line }
      : { from: address(action, action.line) }
  return {
    cannotSend: () => null,
    candidates: (action, since, now) =>
      Effect.map(
        Twilio.findMessages(settings, {
          to: address(action, action.counterpart),
          ...sender(action),
          since,
          ...(action.whatsAppContentSid === null ? { body: action.body } : { contentSid: action.whatsAppContentSid })
        }),
        (found) =>
          found.flatMap((f) =>
            f.message.sid === null
              ? []
              : [{ id: f.message.sid, owner: null, change: textChange(f.message, now, config.providerRecheckMs) }]
          )
      ),
    send: (action, now) =>
      Effect.gen(function*() {
        const sent = yield* Twilio.sendMessage(settings, {
          to: address(action, action.counterpart),
          ...sender(action),
          ...(action.whatsAppContentSid === null
            ? { body: action.body }
            : {
              contentSid: action.whatsAppContentSid,
              ...(action.whatsAppContentVariables === null ? {} : { contentVariables: action.whatsAppContentVariables })
            }),
          statusCallback: statusCallback(config, action.orgId, action.id)
        })
        const change = textChange(sent, now, config.providerRecheckMs)
        if (action.whatsAppContentSid === null) return change
        // A content-template message records what the recipient saw — the template's text with its
        // variables (Twilio's Content API), or a placeholder naming both — not the text sent beside it.
        const variables = action.whatsAppContentVariables ?? {}
        const rendered = yield* Twilio.renderContent(settings, action.whatsAppContentSid, variables)
        const body = Option.getOrElse(rendered, () => Twilio.contentPlaceholder(action.whatsAppContentSid ?? "", variables))
        return { ...change, body } satisfies Providers.Change
      }),
    recheck: (action, sid, now) =>
      Effect.map(Twilio.fetchMessage(settings, sid), (found) =>
        Option.flatMap(found, (message) =>
          twilioMessageStatus(message.status) === null
            ? Option.none()
            : Option.some({ ...textChange(message, now, config.providerRecheckMs), at: action.at })))
  }
}

export const twilioProvider = defineProvider({
  name: "twilio",
  label: "Twilio",
  kind: "message",
  serves: "texts and WhatsApp",
  defaultApiBase: Twilio.TWILIO_API_BASE,
  fields: [...TWILIO_FIELDS, API_BASE_FIELD],
  check: checkTwilioSettings,
  store: storeTwilioSettings,
  read: readTwilioSettings,
  client: (settings, { config }) => Effect.succeed(twilioClient(settings, config)),
  routes: Effect.map(Effect.all([twilioInboundRoutes, twilioCallbackRoutes]), (lists) => lists.flat())
})
