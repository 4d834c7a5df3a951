/**
 * What every provider's callback routes share (each provider's routes live in its folder:
 * `providers/<name>/…Callbacks.ts`, listed in Registry.ts). A provider brings only what is its own — how
 * its body reads, how it is verified, what it reports — to `callbackRoute`, which does the rest the same
 * way for all:
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
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { RecordStatus } from "@parley/core"
import {
  type ActionStore,
  CrmUnavailable,
  InvalidRequest,
  NotFound,
  ProviderReports,
  RateLimited,
  SetupUnavailable,
  Unauthorized
} from "@parley/core/internal"
import { Clock, Effect, Option, Predicate } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { ServerConfig } from "../config/ServerConfig.js"
import { refusal } from "../http/ErrorResponses.js"
import type { BodyKind } from "../http/BodyRules.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
// Actions these reports finish are counted under their provider (parley_actions_finished_total).
import { forProvider } from "../observability/Metrics.js"
import { ProviderAccounts } from "../store/SqlProviderAccounts.js"
import { type Handoff, ProviderHandoffs } from "../store/SqlProviderHandoffs.js"
import { type Admission, CallbackGate, KEY_CACHE_MS, TtlCache } from "./CallbackGate.js"
import { requestUrl } from "./CallbackUrls.js"
import type { StoredSettings } from "./Provider.js"

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

/**
 * What the pipeline answers instead of a 401 once the gate charged the source for it (PlainRoute.unverified):
 * the 429 when the source is past its budget.
 */
export const chargeUnverified =
  (gate: { readonly unverified: (source: string, now: number) => boolean }) =>
  (source: string, now: number): RateLimited | null => gate.unverified(source, now) ? NOT_ADMITTED.source_limited : null

/** Whether a request carries one of `names` (a provider's signature headers) before its body is read. */
export const carriesAny = (headers: IncomingHttpHeaders, names: ReadonlyArray<string>): boolean =>
  names.some((name) => headers[name] !== undefined)

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


/** What a verified callback says about its action: what ProviderReports.report takes, less the action. */
export interface CallbackReport {
  readonly status: RecordStatus
  readonly providerStatus: string
  /** The provider's id for the action (its message or call). */
  readonly sid: string
  readonly errorMessage?: string | undefined
  readonly body?: string | undefined
  readonly audioFileId?: string | undefined
  /** Ended without being placed, for a reason that passes: placed again (ProviderHandoffs.placeAgain). */
  readonly notPlaced?: boolean | undefined
}

/** A report, with the action the callback names: in the signed URL Parley gave, or in Parley's metadata. */
export interface NamedReport {
  readonly report: CallbackReport
  /** "" when the callback names none. */
  readonly actionId: string
}

/**
 * For a provider that carries Parley's metadata on its calls (`parleyOrgId`, `parleyActionId`, put there
 * when Parley starts the call): the organisation and the action a callback names, with its report.
 */
export const namedInMetadata = <Body>(
  metadataOf: (body: Body) => Readonly<Record<string, string>>,
  reportOf: (body: Body) => CallbackReport | null
) => ({
  organisationIn: (body: Body): string => metadataOf(body)["parleyOrgId"] ?? "",
  report: (body: Body): NamedReport | null => {
    const report = reportOf(body)
    return report === null ? null : { report, actionId: metadataOf(body)["parleyActionId"] ?? "" }
  }
})

/** A callback whose body was read, as a provider's verification sees it. */
export interface ReceivedCallback<Body> {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly body: Body
  /** The URL the provider called, as it saw it (behind a proxy too): what URL signatures cover. */
  readonly url: string
  readonly now: number
}

/** What a provider's callback route is made of besides what every route shares. */
export interface CallbackRouteSpec<Settings, Body, E> {
  /** The provider's name: its accounts row, the journal, the metrics label, the logs. */
  readonly provider: string
  readonly path: string
  readonly bodyKind: BodyKind
  /**
   * The headers (lower case) that carry the provider's signature or secret: a callback bearing one is
   * verified even when its address is past its budget (CallbackGate.admit).
   */
  readonly signatureHeaders: ReadonlyArray<string>
  readonly kind: ActionStore.ActionKind
  readonly settings: (stored: StoredSettings) => Settings
  /** The body as the provider's message; fails with InvalidRequest (its message answered) when it is not one. */
  readonly read: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Body, E | InvalidRequest>
  /**
   * The organisation the body names, for a callback whose URL names none; absent when the URL Parley gives
   * the provider always names it (a callback without one is then refused before its body is read).
   */
  readonly organisationIn?: (body: Body) => string
  /** Whether the callback comes from the organisation's account at the provider. */
  readonly verify: (settings: Settings, callback: ReceivedCallback<Body>) => boolean
  /** What the callback reports; null when it says nothing about a status (it is then only acknowledged). */
  readonly report: (body: Body, query: URLSearchParams) => NamedReport | null
  /**
   * Whether the provider's id finds the action before the action the callback names: a provider that
   * names the action only in metadata it may leave out (an AI call reported without it) is still followed.
   */
  readonly findsBySid: boolean
  /** The 404 for a report whose action cannot be found, in the provider's terms. */
  readonly unknownAction: (named: NamedReport) => string
  /** Why a report about an action not handed to this provider under this id is ignored, in its terms. */
  readonly notHandedOver: string
  /** The answer the provider expects to a callback taken. */
  readonly answer: () => HttpServerResponse.HttpServerResponse
}

/**
 * A provider's callback route: the gate, the organisation, the account's key (cached KEY_CACHE_MS), the
 * verification, then the report moving the action it concerns — if it was handed to this provider under
 * this id. A body that is not the provider's message is refused with the provider's words; storage and
 * CRM outages and anything else are answered by `answerFailure`.
 */
export const callbackRoute = <Settings, Body, E>(spec: CallbackRouteSpec<Settings, Body, E>) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const accounts = yield* ProviderAccounts
    const handoffs = yield* ProviderHandoffs
    const reports = yield* ProviderReports.ProviderReports
    const gate = yield* CallbackGate
    const keys = new TtlCache<Option.Option<Settings>>(KEY_CACHE_MS)
    const organisationIn = spec.organisationIn

    /** The action a verified report concerns (see `findsBySid`). */
    const handoffOf = (orgId: string, named: NamedReport) =>
      spec.findsBySid
        ? Effect.flatMap(
          handoffs.bySid(orgId, spec.kind, named.report.sid),
          (bySid) => Option.isSome(bySid) ? Effect.succeed(bySid) : handoffs.byAction(orgId, named.actionId)
        )
        : handoffs.byAction(orgId, named.actionId)

    const apply = (orgId: string, named: NamedReport, now: number) =>
      Effect.gen(function*() {
        const handoff = yield* handoffOf(orgId, named)
        if (Option.isNone(handoff) || handoff.value.kind !== spec.kind) {
          return yield* refusal(new NotFound({ message: spec.unknownAction(named) }))
        }
        if (!reportMayApply(handoff.value, spec.provider, named.report.sid)) {
          yield* ignored(spec.provider, handoff.value.actionId, spec.notHandedOver)
          return spec.answer()
        }
        const { notPlaced, ...report } = named.report
        // Ended without being placed, for a reason that passes: placed again while attempts are left. Before
        // the provider's answer is recorded it cannot be yet: the recheck after the answer reads it again.
        if (notPlaced === true && (yield* handoffs.placeAgain(orgId, handoff.value.actionId, report, now)) !== "exhausted") {
          return spec.answer()
        }
        yield* reports.report({
          orgId,
          actionId: handoff.value.actionId,
          kind: spec.kind,
          ...report,
          recheckAt: now + config.providerRecheckMs
        })
        return spec.answer()
      })

    const handler = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const query = queryOf(request.url)
      const inUrl = query.get("org")
      if (organisationIn === undefined && (inUrl ?? "") === "") return yield* unverified()
      const body = yield* spec.read(request)
      const now = yield* Clock.currentTimeMillis
      let orgId = inUrl ?? ""
      // The source (and an organisation in the URL) passed the gate before the body was read (admit below).
      if (inUrl === null && organisationIn !== undefined) {
        orgId = organisationIn(body)
        // A callback let on past its source's budget only to be verified takes nothing from the organisation
        // named in its body before it is (a forger's flood must not empty a genuine organisation's bucket).
        const source = Option.getOrElse(request.remoteAddress, () => "unknown")
        const admission = gate.overBudget(source, now) ? "admitted" : gate.admitOrganisation(orgId, now)
        if (admission !== "admitted") return yield* notAdmitted(admission)
      }
      if (orgId === "") return yield* unverified()
      const callback: ReceivedCallback<Body> = {
        request,
        body,
        url: requestUrl(config, request.headers.host, request.url),
        now
      }
      const work = Effect.gen(function*() {
        const settings = yield* keys.get(
          orgId,
          now,
          Effect.map(accounts.find(orgId, spec.provider), Option.map(spec.settings))
        )
        if (Option.isNone(settings) || !spec.verify(settings.value, callback)) return yield* unverified()
        const named = spec.report(body, query)
        return named === null ? spec.answer() : yield* apply(orgId, named, now)
      })
      const outcome = yield* gate.run(work)
      return outcome._tag === "Busy" ? yield* callbacksBusy() : outcome.value
    }).pipe(
      Effect.catchAll((error) => error instanceof InvalidRequest ? refusal(error) : answerFailure(error)),
      forProvider(spec.provider)
    )

    /**
     * The gate, before the body is read: the source, and the organisation when the URL names it (a route
     * whose URL always names one counts a callback without it under "").
     */
    const admit = (source: string, url: string, now: number, headers: IncomingHttpHeaders) => {
      const inUrl = queryOf(url).get("org")
      const orgId = organisationIn === undefined ? inUrl ?? "" : inUrl
      return admissionError(gate.admit(source, orgId, now, carriesAny(headers, spec.signatureHeaders)))
    }

    return [
      { method: "POST", path: spec.path, body: spec.bodyKind, handler, admit, unverified: chargeUnverified(gate) }
    ] satisfies ReadonlyArray<PlainRoute>
  })
