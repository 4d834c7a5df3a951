/**
 * Vapi's server messages, `POST /providers/vapi/events?org=ORG`
 * (`status-update`, `end-of-call-report`), authenticated with the
 * organisation's webhook secret in any of Vapi's credential modes
 * (VapiClient.verifyVapiSecret); the action is the one Vapi's call id was
 * recorded on, else the one named in the call's metadata. What every callback
 * route shares is in ProviderCallbacks.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { InvalidRequest, NotFound, ProviderReports } from "@parley/core/internal"
import { Clock, Effect, Either, Option } from "effect"
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
  ignored,
  notAdmitted,
  queryOf,
  reportMayApply,
  unverified
} from "../ProviderCallbacks.js"
import * as Vapi from "./VapiClient.js"
import { callMetadata, toCallReport } from "./VapiReports.js"
import { readVapiSettings, type VapiSettings } from "./VapiSettings.js"

export const VAPI_EVENTS_PATH = "/providers/vapi/events"

export const vapiCallbackRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const accounts = yield* ProviderAccounts
  const handoffs = yield* ProviderHandoffs
  const reports = yield* ProviderReports.ProviderReports
  const gate = yield* CallbackGate
  const vapiKeys = new TtlCache<Option.Option<VapiSettings>>(KEY_CACHE_MS)

  const vapiEvents = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* request.text
    const json = yield* Effect.try(() => JSON.parse(raw) as unknown)
    const decoded = Vapi.decodeServerMessage(json)
    if (Either.isLeft(decoded)) return yield* refusal(new InvalidRequest({ message: "Not a Vapi server message." }))
    const message = decoded.right
    const metadata = callMetadata(message)
    const inUrl = queryOf(request.url).get("org")
    const orgId = inUrl ?? metadata["parleyOrgId"] ?? ""
    const now = yield* Clock.currentTimeMillis
    // The source (and an organisation in the URL) passed the gate before the body was read (admit below).
    if (inUrl === null) {
      const admission = gate.admitOrganisation(orgId, now)
      if (admission !== "admitted") return yield* notAdmitted(admission)
    }
    if (orgId === "") return yield* unverified()
    const signed: Vapi.VapiSignedRequest = {
      headers: request.headers,
      rawBody: raw,
      method: request.method,
      url: requestUrl(config, request.headers.host, request.url),
      now
    }
    const work = Effect.gen(function*() {
      const account = yield* vapiKeys.get(orgId, now, Effect.map(accounts.find(orgId, "vapi"), Option.map(readVapiSettings)))
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
  }).pipe(Effect.catchAll(answerFailure), forProvider("vapi"))

  /** The gate, before the body is read: the source, and the organisation when the URL names it. */
  const admit = (source: string, url: string, now: number) =>
    admissionError(gate.admit(source, queryOf(url).get("org"), now))

  return [
    { method: "POST", path: VAPI_EVENTS_PATH, body: "json", handler: vapiEvents, admit, unverified: gate.unverified }
  ] satisfies ReadonlyArray<PlainRoute>
})
