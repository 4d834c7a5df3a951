/**
 * Retell's webhooks, `POST /providers/retell/events?org=ORG` (the URL `providers show` tells the
 * administrator to paste into the agent's webhook setting; Retell sets it per agent, not per call):
 * `call_started`, `call_ended`, `call_analyzed`, signed with the organisation's API key
 * (RetellWebhooks.verifyRetellSignature). Without `org` in the URL, the organisation is the one the
 * call's metadata names (`parleyOrgId`). The action is the one Retell's call id was recorded on, else the
 * one the metadata names. What every callback route shares is in ProviderCallbacks.
 */
import { HttpServerRequest } from "@effect/platform"
import { InvalidRequest, NotFound, ProviderReports } from "@parley/core/internal"
import { Clock, Effect, Either, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { refusal } from "../../http/ErrorResponses.js"
import type { PlainRoute } from "../../http/PlainRoutes.js"
// Actions these reports finish are counted under their provider (parley_actions_finished_total).
import { forProvider } from "../../observability/Metrics.js"
import { ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import { ProviderHandoffs } from "../../store/SqlProviderHandoffs.js"
import { CallbackGate, KEY_CACHE_MS, TtlCache } from "../CallbackGate.js"
import {
  admissionError,
  answerFailure,
  callbacksBusy,
  done,
  ignored,
  notAdmitted,
  queryOf,
  reportMayApply,
  unverified
} from "../ProviderCallbacks.js"
import { parseJson } from "../ProviderExchange.js"
import { callMetadata, toCallReport } from "./RetellReports.js"
import { readRetellSettings, type RetellSettings } from "./RetellSettings.js"
import { decodeRetellWebhook, verifyRetellSignature } from "./RetellWebhooks.js"

export const RETELL = "retell"
export const RETELL_EVENTS_PATH = "/providers/retell/events"

export const retellCallbackRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const accounts = yield* ProviderAccounts
  const handoffs = yield* ProviderHandoffs
  const reports = yield* ProviderReports.ProviderReports
  const gate = yield* CallbackGate
  const keys = new TtlCache<Option.Option<RetellSettings>>(KEY_CACHE_MS)

  const events = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* request.text
    const decoded = decodeRetellWebhook(parseJson(raw))
    if (Either.isLeft(decoded)) return yield* refusal(new InvalidRequest({ message: "Not a Retell webhook." }))
    const webhook = decoded.right
    const metadata = callMetadata(webhook)
    const inUrl = queryOf(request.url).get("org")
    const orgId = inUrl ?? metadata["parleyOrgId"] ?? ""
    const now = yield* Clock.currentTimeMillis
    // The source (and an organisation in the URL) passed the gate before the body was read (admit below).
    if (inUrl === null) {
      const admission = gate.admitOrganisation(orgId, now)
      if (admission !== "admitted") return yield* notAdmitted(admission)
    }
    if (orgId === "") return yield* unverified()
    const work = Effect.gen(function*() {
      const account = yield* keys.get(orgId, now, Effect.map(accounts.find(orgId, RETELL), Option.map(readRetellSettings)))
      if (Option.isNone(account) || !verifyRetellSignature(account.value.apiKey, { headers: request.headers, rawBody: raw, now })) {
        return yield* unverified()
      }
      const report = toCallReport(webhook)
      if (report === null) return done()
      // The call id Parley recorded when Retell answered comes first; the metadata serves for a webhook
      // that beats Retell's answer.
      const bySid = yield* handoffs.bySid(orgId, "ai_call", report.sid)
      const handoff = Option.isSome(bySid) ? bySid : yield* handoffs.byAction(orgId, metadata["parleyActionId"] ?? "")
      if (Option.isNone(handoff) || handoff.value.kind !== "ai_call") {
        return yield* refusal(new NotFound({ message: `No AI call for Retell call ${report.sid}.` }))
      }
      if (!reportMayApply(handoff.value, RETELL, report.sid)) {
        yield* ignored(RETELL, handoff.value.actionId, "not handed to Retell under this call id")
        return done()
      }
      yield* reports.report({
        orgId,
        actionId: handoff.value.actionId,
        kind: "ai_call",
        ...report,
        recheckAt: now + config.providerRecheckMs
      })
      return done()
    })
    const outcome = yield* gate.run(work)
    return outcome._tag === "Busy" ? yield* callbacksBusy() : outcome.value
  }).pipe(Effect.catchAll(answerFailure), forProvider(RETELL))

  /** The gate, before the body is read: the source, and the organisation when the URL names it. */
  const admit = (source: string, url: string, now: number) =>
    admissionError(gate.admit(source, queryOf(url).get("org"), now))

  return [
    { method: "POST", path: RETELL_EVENTS_PATH, body: "json", handler: events, admit, unverified: gate.unverified }
  ] satisfies ReadonlyArray<PlainRoute>
})
