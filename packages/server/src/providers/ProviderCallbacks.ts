/**
 * What real providers report after a send, as HTTP callbacks:
 * - `POST /providers/twilio/status`: Twilio's message status callbacks (form
 *   fields `MessageSid`, `MessageStatus`, `ErrorCode`…), signed with the
 *   organisation's auth token (`X-Twilio-Signature` over the public URL and
 *   the sorted fields). The organisation and action ride in the URL Parley
 *   gave Twilio, which the signature covers.
 * - `POST /providers/vapi/events`: Vapi's server messages (`status-update`,
 *   `end-of-call-report`), authenticated with the organisation's webhook
 *   secret; the action is the one Vapi's call id was recorded on, else the
 *   one named in the call's metadata.
 *
 * A callback is trusted only once verified: every callback that cannot be
 * (no organisation, no account, a wrong or stale signature) gets the same 401,
 * so the answers tell a stranger nothing about which organisations use which
 * provider. Before any database work, CallbackGate bounds what callbacks may
 * cost per source address and per organisation.
 *
 * A verified report moves only an action that was handed to that provider,
 * and only under the provider id recorded for it (or, before the provider's
 * answer was recorded, the id the report brings). It then goes through
 * ProviderReports: applied only forward (duplicates and late reports change
 * nothing), with its event in the same transaction. A report that changes
 * nothing is still a success (the provider must not retry it).
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  CrmUnavailable,
  InvalidRequest,
  NotFound,
  ProviderReports,
  RateLimited,
  SetupUnavailable,
  Unauthorized
} from "@parley/core/internal"
import { Clock, Effect, Either, Option, Predicate } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { refusal } from "../http/ErrorResponses.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
import {
  ProviderAccounts,
  type TwilioAccountSettings,
  type VapiAccountSettings
} from "../store/SqlProviderAccounts.js"
import { type Handoff, ProviderHandoffs } from "../store/SqlProviderHandoffs.js"
import { type Admission, CallbackGate, KEY_CACHE_MS, TtlCache } from "./CallbackGate.js"
import { requestUrl, TWILIO_STATUS_PATH, VAPI_EVENTS_PATH } from "./CallbackUrls.js"
import * as Twilio from "./twilio/TwilioClient.js"
import { twilioMessageStatus } from "./twilio/TwilioStatuses.js"
import * as Vapi from "./vapi/VapiClient.js"
import { callMetadata, toCallReport } from "./vapi/VapiReports.js"

const done = () => HttpServerResponse.empty({ status: 204 })

const queryOf = (url: string) => new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "")

/** Twilio sends only the code; the text says where it is explained. */
const twilioError = (code: string): string => `${code}: see https://www.twilio.com/docs/api/errors/${code}`

/** The one answer to a callback Parley cannot verify, whatever the reason. */
export const unverified = () => refusal(new Unauthorized({ message: "The callback could not be verified." }))

/** A callback refused by CallbackGate before any work. */
export const notAdmitted = (admission: Exclude<Admission, "admitted">) =>
  refusal(new RateLimited({
    message: admission === "source_limited"
      ? "Too many callbacks from this address; retry shortly."
      : "Too many callbacks for this organisation; retry shortly.",
    retryAfterSeconds: 1
  }))

export const callbacksBusy = () =>
  refusal(new SetupUnavailable({ message: "Parley is busy with other callbacks; retry shortly." }))

/** Where a callback came from, for its bucket. */
export const sourceOf = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

/** Storage and CRM outages ask the provider to retry (503, 502); anything else the callback got wrong is a 400. */
const answerFailure = (error: unknown) =>
  Predicate.isTagged(error, "StorageError")
    ? refusal(new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." }))
    : Predicate.isTagged(error, "CrmError")
    ? refusal(new CrmUnavailable({ message: "The CRM did not answer; retry shortly." }))
    : refusal(new InvalidRequest({ message: "The callback could not be read." }))

/**
 * Whether a verified report may move this action: it was handed to this provider, and the provider id
 * the report names is the one recorded (or none is recorded yet: the provider's answer is still on its way).
 */
export const reportMayApply = (handoff: Handoff, provider: string, sid: string): boolean =>
  handoff.provider === provider && sid !== "" && (handoff.sid === null || handoff.sid === sid)

const ignored = (provider: string, actionId: string, reason: string) =>
  Effect.annotateLogs(Effect.logWarning("provider report ignored"), { provider, action: actionId, reason })

export const providerCallbackRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const accounts = yield* ProviderAccounts
  const handoffs = yield* ProviderHandoffs
  const reports = yield* ProviderReports.ProviderReports
  const gate = yield* CallbackGate
  const twilioKeys = new TtlCache<Option.Option<TwilioAccountSettings>>(KEY_CACHE_MS)
  const vapiKeys = new TtlCache<Option.Option<VapiAccountSettings>>(KEY_CACHE_MS)

  const twilioStatus = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = queryOf(request.url)
    const orgId = query.get("org") ?? ""
    const actionId = query.get("action") ?? ""
    const now = yield* Clock.currentTimeMillis
    const admission = gate.admit(sourceOf(request), orgId, now)
    if (admission !== "admitted") return yield* notAdmitted(admission)
    if (orgId === "") return yield* unverified()
    const params = (yield* request.urlParamsBody).map(([k, v]) => [k, v] as const)
    const url = requestUrl(config, request.headers.host, request.url)
    const work = Effect.gen(function*() {
      const account = yield* twilioKeys.get(orgId, now, accounts.twilio(orgId))
      if (
        Option.isNone(account) ||
        !Twilio.verifyTwilioSignature(account.value.authToken, url, params, request.headers["x-twilio-signature"])
      ) return yield* unverified()
      const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
      const raw = field("MessageStatus") || field("SmsStatus")
      const status = twilioMessageStatus(raw)
      if (status === null) return done()
      const handoff = yield* handoffs.byAction(orgId, actionId)
      if (Option.isNone(handoff) || handoff.value.kind !== "message") {
        return yield* refusal(new NotFound({ message: `No message ${actionId}.` }))
      }
      const sid = field("MessageSid") || field("SmsSid")
      if (!reportMayApply(handoff.value, "twilio", sid)) {
        yield* ignored("twilio", actionId, "not handed to Twilio under this MessageSid")
        return done()
      }
      const errorCode = field("ErrorCode")
      yield* reports.report({
        orgId,
        actionId,
        kind: "message",
        status,
        providerStatus: raw,
        sid,
        errorMessage: errorCode === "" || errorCode === "0" ? undefined : twilioError(errorCode),
        recheckAt: now + config.providerRecheckMs
      })
      return done()
    })
    const outcome = yield* gate.run(work)
    return outcome._tag === "Busy" ? yield* callbacksBusy() : outcome.value
  }).pipe(Effect.catchAll(answerFailure))

  const vapiEvents = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* request.text
    const json = yield* Effect.try(() => JSON.parse(raw) as unknown)
    const decoded = Vapi.decodeServerMessage(json)
    if (Either.isLeft(decoded)) return yield* refusal(new InvalidRequest({ message: "Not a Vapi server message." }))
    const message = decoded.right
    const metadata = callMetadata(message)
    const orgId = queryOf(request.url).get("org") ?? metadata["parleyOrgId"] ?? ""
    const now = yield* Clock.currentTimeMillis
    const admission = gate.admit(sourceOf(request), orgId, now)
    if (admission !== "admitted") return yield* notAdmitted(admission)
    if (orgId === "") return yield* unverified()
    const signed: Vapi.VapiSignedRequest = {
      headers: request.headers,
      rawBody: raw,
      method: request.method,
      url: requestUrl(config, request.headers.host, request.url),
      now
    }
    const work = Effect.gen(function*() {
      const account = yield* vapiKeys.get(orgId, now, accounts.vapi(orgId))
      if (Option.isNone(account) || !Vapi.verifyVapiSecret(account.value.webhookSecret, signed, account.value)) {
        return yield* unverified()
      }
      const report = toCallReport(message)
      if (report === null) return HttpServerResponse.unsafeJson({})
      // The call id Parley recorded when Vapi answered comes first: a call Vapi reports without Parley's
      // metadata is still found. The metadata serves for a report that beats Vapi's answer.
      const bySid = yield* handoffs.bySid(orgId, "ai_call", report.sid)
      const actionId = metadata["parleyActionId"] ?? ""
      const handoff = Option.isSome(bySid) ? bySid : yield* handoffs.byAction(orgId, actionId)
      if (Option.isNone(handoff) || handoff.value.kind !== "ai_call") {
        return yield* refusal(new NotFound({ message: `No AI call for Vapi call ${report.sid}.` }))
      }
      if (!reportMayApply(handoff.value, "vapi", report.sid)) {
        yield* ignored("vapi", handoff.value.actionId, "not handed to Vapi under this call id")
        return HttpServerResponse.unsafeJson({})
      }
      yield* reports.report({
        orgId,
        actionId: handoff.value.actionId,
        kind: "ai_call",
        ...report,
        recheckAt: now + config.providerRecheckMs
      })
      return HttpServerResponse.unsafeJson({})
    })
    const outcome = yield* gate.run(work)
    return outcome._tag === "Busy" ? yield* callbacksBusy() : outcome.value
  }).pipe(Effect.catchAll(answerFailure))

  return [
    { method: "POST", path: TWILIO_STATUS_PATH, body: "form", handler: twilioStatus },
    { method: "POST", path: VAPI_EVENTS_PATH, body: "json", handler: vapiEvents }
  ] satisfies ReadonlyArray<PlainRoute>
})
