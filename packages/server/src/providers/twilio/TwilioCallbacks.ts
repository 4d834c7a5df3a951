/**
 * Twilio's message status callbacks, `POST /providers/twilio/status`: form
 * fields `MessageSid`, `MessageStatus`, `ErrorCode`…, signed with the
 * organisation's auth token (`X-Twilio-Signature` over the public URL and the
 * sorted fields). The organisation and action ride in the URL Parley gave
 * Twilio, which the signature covers. What every callback route shares is in
 * ProviderCallbacks.
 */
import { HttpServerRequest } from "@effect/platform"
import { NotFound, ProviderReports } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { refusal } from "../../http/ErrorResponses.js"
import type { PlainRoute } from "../../http/PlainRoutes.js"
import { ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import { ProviderHandoffs } from "../../store/SqlProviderHandoffs.js"
// Actions these reports finish are counted under their provider (parley_actions_finished_total).
import { forProvider } from "../../observability/Metrics.js"
import { CallbackGate, KEY_CACHE_MS, TtlCache } from "../CallbackGate.js"
import { requestUrl } from "../CallbackUrls.js"
import {
  admissionError,
  answerFailure,
  callbacksBusy,
  done,
  ignored,
  queryOf,
  reportMayApply,
  unverified
} from "../ProviderCallbacks.js"
import * as Twilio from "./TwilioClient.js"
import { readTwilioSettings, type TwilioSettings } from "./TwilioSettings.js"
import { twilioMessageStatus } from "./TwilioStatuses.js"

export const TWILIO_STATUS_PATH = "/providers/twilio/status"

/** Twilio sends only the code; the text says where it is explained. */
const twilioError = (code: string): string => `${code}: see https://www.twilio.com/docs/api/errors/${code}`

export const twilioCallbackRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const accounts = yield* ProviderAccounts
  const handoffs = yield* ProviderHandoffs
  const reports = yield* ProviderReports.ProviderReports
  const gate = yield* CallbackGate
  const twilioKeys = new TtlCache<Option.Option<TwilioSettings>>(KEY_CACHE_MS)

  const twilioStatus = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = queryOf(request.url)
    const orgId = query.get("org") ?? ""
    const actionId = query.get("action") ?? ""
    const now = yield* Clock.currentTimeMillis
    if (orgId === "") return yield* unverified()
    const params = (yield* request.urlParamsBody).map(([k, v]) => [k, v] as const)
    const url = requestUrl(config, request.headers.host, request.url)
    const work = Effect.gen(function*() {
      const account = yield* twilioKeys.get(orgId, now, Effect.map(accounts.find(orgId, "twilio"), Option.map(readTwilioSettings)))
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
  }).pipe(Effect.catchAll(answerFailure), forProvider("twilio"))

  /** The gate, before the body is read: the organisation rides in the URL. */
  const admit = (source: string, url: string, now: number) =>
    admissionError(gate.admit(source, queryOf(url).get("org") ?? "", now))

  return [
    { method: "POST", path: TWILIO_STATUS_PATH, body: "form", handler: twilioStatus, admit, unverified: gate.unverified }
  ] satisfies ReadonlyArray<PlainRoute>
})
