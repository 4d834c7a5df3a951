/**
 * What every provider's callback routes share (each provider's routes live in its folder:
 * `providers/<name>/…Callbacks.ts`, listed in Registry.ts):
 * - a callback is trusted only once verified: every callback that cannot be
 *   (no organisation, no account, a wrong or stale signature) gets the same
 *   401, so the answers tell a stranger nothing about which organisations use
 *   which provider;
 * - before the body is read (PlainRoute.admit, asked by the request pipeline)
 *   and before any database work, CallbackGate bounds what callbacks may cost
 *   per source address and per organisation;
 * - a verified report moves only an action that was handed to that provider,
 *   and only under the provider id recorded for it (or, before the provider's
 *   answer was recorded, the id the report brings); it then goes through
 *   ProviderReports: applied only forward (duplicates and late reports change
 *   nothing), with its event in the same transaction. A report that changes
 *   nothing is still a success (the provider must not retry it).
 */
import { HttpServerResponse } from "@effect/platform"
import { CrmUnavailable, InvalidRequest, RateLimited, SetupUnavailable, Unauthorized } from "@parley/core/internal"
import { Effect, Predicate } from "effect"
import { refusal } from "../http/ErrorResponses.js"
import type { Handoff } from "../store/SqlProviderHandoffs.js"
import type { Admission } from "./CallbackGate.js"

export const done = () => HttpServerResponse.empty({ status: 204 })

export const queryOf = (url: string) => new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "")

/** The one answer to a callback Parley cannot verify, whatever the reason. */
export const unverified = () => refusal(new Unauthorized({ message: "The callback could not be verified." }))

/**
 * Why CallbackGate refused a callback, made once: under a flood most callbacks get one of these, and an
 * error made per refusal (with its stack) would be most of what a refusal costs.
 */
const NOT_ADMITTED: Record<Exclude<Admission, "admitted">, RateLimited> = {
  source_limited: new RateLimited({ message: "Too many callbacks from this address; retry shortly.", retryAfterSeconds: 1 }),
  organisation_limited: new RateLimited({
    message: "Too many callbacks for this organisation; retry shortly.",
    retryAfterSeconds: 1
  })
}

/** The gate's answer as the request pipeline asks for it before reading the body (PlainRoute.admit): null to go on. */
export const admissionError = (admission: Admission): RateLimited | null =>
  admission === "admitted" ? null : NOT_ADMITTED[admission]

/** A callback refused by CallbackGate once its body was read (an organisation named only there). */
export const notAdmitted = (admission: Exclude<Admission, "admitted">) => refusal(NOT_ADMITTED[admission])

export const callbacksBusy = () =>
  refusal(new SetupUnavailable({ message: "Parley is busy with other callbacks; retry shortly." }))


/** Storage and CRM outages ask the provider to retry (503, 502); anything else the callback got wrong is a 400. */
export const answerFailure = (error: unknown) =>
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

export const ignored = (provider: string, actionId: string, reason: string) =>
  Effect.annotateLogs(Effect.logWarning("provider report ignored"), { provider, action: actionId, reason })

