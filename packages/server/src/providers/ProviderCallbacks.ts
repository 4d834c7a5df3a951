/**
 * What real providers report after a send, as HTTP callbacks:
 * - `POST /providers/twilio/status`: Twilio's message status callbacks (form
 *   fields `MessageSid`, `MessageStatus`, `ErrorCode`…), signed with the
 *   organisation's auth token (`X-Twilio-Signature` over the public URL and
 *   the sorted fields). The organisation and action ride in the URL Parley
 *   gave Twilio, which the signature covers.
 * - `POST /providers/vapi/events`: Vapi's server messages (`status-update`,
 *   `end-of-call-report`), carrying the organisation's webhook secret; the
 *   action is the one named in the call's metadata.
 * Each report goes through ProviderReports: mapped onto Parley's statuses,
 * applied only forward (duplicates and late reports change nothing), with
 * its event in the same transaction. Refusals use the error shape of
 * /api/v1; a report that changes nothing is still a success (the provider
 * must not retry it).
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  CrmUnavailable,
  InvalidRequest,
  NotFound,
  ProviderReports,
  SetupUnavailable,
  Unauthorized
} from "@parley/core/internal"
import { Clock, Effect, Either, Option, Predicate } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { refusal } from "../http/ErrorResponses.js"
// Actions these reports finish are counted under their provider (parley_actions_finished_total).
import { forProvider } from "../observability/Metrics.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
import { ProviderAccounts } from "../store/SqlProviderAccounts.js"
import { requestUrl, TWILIO_STATUS_PATH, VAPI_EVENTS_PATH } from "./CallbackUrls.js"
import * as Twilio from "./twilio/TwilioClient.js"
import * as Vapi from "./vapi/VapiClient.js"
import { callMetadata, toCallReport } from "./vapi/VapiReports.js"

const done = () => HttpServerResponse.empty({ status: 204 })

const queryOf = (url: string) => new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "")

/** Twilio sends only the code; the text says where it is explained. */
const twilioError = (code: string): string => `${code}: see https://www.twilio.com/docs/api/errors/${code}`

/** Storage and CRM outages ask the provider to retry (503, 502); anything else the callback got wrong is a 400. */
const answerFailure = (error: unknown) =>
  Predicate.isTagged(error, "StorageError")
    ? refusal(new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." }))
    : Predicate.isTagged(error, "CrmError")
    ? refusal(new CrmUnavailable({ message: "The CRM did not answer; retry shortly." }))
    : refusal(new InvalidRequest({ message: "The callback could not be read." }))

export const providerCallbackRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const accounts = yield* ProviderAccounts
  const reports = yield* ProviderReports.ProviderReports

  const twilioStatus = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = queryOf(request.url)
    const orgId = query.get("org") ?? ""
    const actionId = query.get("action") ?? ""
    const account = orgId === "" ? Option.none() : yield* accounts.twilio(orgId)
    if (Option.isNone(account)) {
      return yield* refusal(new NotFound({ message: "No Twilio account is connected for this callback." }))
    }
    const params = (yield* request.urlParamsBody).map(([k, v]) => [k, v] as const)
    const url = requestUrl(config, request.headers.host, request.url)
    if (!Twilio.verifyTwilioSignature(account.value.authToken, url, params, request.headers["x-twilio-signature"])) {
      return yield* refusal(new Unauthorized({ message: "X-Twilio-Signature does not match." }))
    }
    const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
    const raw = field("MessageStatus") || field("SmsStatus")
    const status = ProviderReports.twilioMessageStatus(raw)
    if (status === null || !/^\d+$/.test(actionId)) return done()
    const errorCode = field("ErrorCode")
    const outcome = yield* reports.report({
      orgId,
      actionId,
      kind: "message",
      status,
      providerStatus: raw,
      sid: field("MessageSid") || undefined,
      errorMessage: errorCode === "" || errorCode === "0" ? undefined : twilioError(errorCode),
      recheckAt: (yield* Clock.currentTimeMillis) + config.providerRecheckMs
    })
    if (outcome._tag === "NotFound") return yield* refusal(new NotFound({ message: `No message ${actionId}.` }))
    return done()
  }).pipe(Effect.catchAll(answerFailure), forProvider("twilio"))

  const vapiEvents = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* request.text
    const json = yield* Effect.try(() => JSON.parse(raw) as unknown)
    const decoded = Vapi.decodeServerMessage(json)
    if (Either.isLeft(decoded)) return yield* refusal(new InvalidRequest({ message: "Not a Vapi server message." }))
    const message = decoded.right
    const metadata = callMetadata(message)
    const orgId = queryOf(request.url).get("org") ?? metadata["parleyOrgId"] ?? ""
    const account = orgId === "" ? Option.none() : yield* accounts.vapi(orgId)
    if (Option.isNone(account)) {
      return yield* refusal(new NotFound({ message: "No Vapi account is connected for this organisation." }))
    }
    if (!Vapi.verifyVapiSecret(account.value.webhookSecret, request.headers, raw)) {
      return yield* refusal(new Unauthorized({ message: "The Vapi secret does not match." }))
    }
    const actionId = metadata["parleyActionId"] ?? ""
    const report = toCallReport(message)
    if (report === null || !/^\d+$/.test(actionId)) return HttpServerResponse.unsafeJson({})
    const outcome = yield* reports.report({
      orgId,
      actionId,
      kind: "ai_call",
      ...report,
      recheckAt: (yield* Clock.currentTimeMillis) + config.providerRecheckMs
    })
    if (outcome._tag === "NotFound") return yield* refusal(new NotFound({ message: `No AI call ${actionId}.` }))
    return HttpServerResponse.unsafeJson({})
  }).pipe(Effect.catchAll(answerFailure), forProvider("vapi"))

  return [
    { method: "POST", path: TWILIO_STATUS_PATH, body: "form", handler: twilioStatus },
    { method: "POST", path: VAPI_EVENTS_PATH, body: "json", handler: vapiEvents }
  ] satisfies ReadonlyArray<PlainRoute>
})
