/**
 * Retell's webhooks, `POST /providers/retell/events?org=ORG` (the URL `providers show` tells the
 * administrator to paste into the agent's webhook setting; Retell sets it per agent, not per call):
 * `call_started`, `call_ended`, `call_analyzed`, signed with the organisation's API key
 * (RetellWebhooks.verifyRetellSignature). Without `org` in the URL, the organisation is the one the
 * call's metadata names (`parleyOrgId`). The action is the one Retell's call id was recorded on, else the
 * one the metadata names. What every callback route shares is in ProviderCallbacks.
 */
import { InvalidRequest } from "@parley/core/internal"
import { Effect, Either } from "effect"
import { callbackRoute, done, namedInMetadata } from "../ProviderCallbacks.js"
import { parseJson } from "../ProviderExchange.js"
import { callMetadata, toCallReport } from "./RetellReports.js"
import { readRetellSettings } from "./RetellSettings.js"
import { decodeRetellWebhook, RETELL_SIGNATURE_HEADER, type RetellWebhook, verifyRetellSignature } from "./RetellWebhooks.js"

export const RETELL = "retell"
export const RETELL_EVENTS_PATH = "/providers/retell/events"

/** A webhook as read: the raw body is what its signature covers. */
interface RetellCallback {
  readonly raw: string
  readonly webhook: RetellWebhook
}

export const retellCallbackRoutes = callbackRoute({
  provider: RETELL,
  path: RETELL_EVENTS_PATH,
  bodyKind: "json",
  signatureHeaders: [RETELL_SIGNATURE_HEADER],
  kind: "ai_call",
  settings: readRetellSettings,
  read: (request) =>
    Effect.flatMap(request.text, (raw) => {
      const decoded = decodeRetellWebhook(parseJson(raw))
      return Either.isLeft(decoded)
        ? Effect.fail(new InvalidRequest({ message: "Not a Retell webhook." }))
        : Effect.succeed({ raw, webhook: decoded.right } satisfies RetellCallback)
    }),
  ...namedInMetadata((callback: RetellCallback) => callMetadata(callback.webhook), (callback) => toCallReport(callback.webhook)),
  verify: (settings, { body, now, request }) =>
    verifyRetellSignature(settings.apiKey, { headers: request.headers, rawBody: body.raw, now }),
  // The call id Parley recorded when Retell answered comes first; the metadata serves for a webhook that
  // beats Retell's answer.
  findsBySid: true,
  unknownAction: ({ report }) => `No AI call for Retell call ${report.sid}.`,
  notHandedOver: "not handed to Retell under this call id",
  answer: done
})
