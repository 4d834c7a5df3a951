/**
 * Dispatch over the ports: the core's own dispatcher, for hosts that embed
 * the engine. The server runs the same steps batched over SQL, with leases
 * for several replicas and a journal of attempts (its dispatch/Dispatcher),
 * over the same rules (DispatchRules) and the same provider port (Providers).
 * Each run works what is due, once each:
 * - a live action still Queued meets the organisation's live rules
 *   (DispatchRules): held outside its sending hours or the recipient-local
 *   hours (it stays Queued and is looked at again on a later run), failed if AI calls were turned off or its
 *   recipient is no longer among the destinations the organisation allows or
 *   has opted out of the action's channel since it was accepted (Consent);
 *   then its allowance: one unit taken atomically (a text its SMS segments),
 *   or failed when none is left; then its provider (the organisation's, or
 *   the simulator: `Providers`) is handed it, and the answer is applied as the
 *   provider's first report (ProviderReports);
 * - an action a provider has whose next look is due is rechecked with it
 *   (the simulator's next step, or a real provider's status in case its
 *   reports were lost), and what moved is applied as a report.
 * What an answer does is planned as the server's dispatcher plans it
 * (DispatchPlan): the same refusals, the same rule for looking again. This
 * dispatcher makes one attempt per action, though: it keeps no journal to
 * reconcile an unknown outcome with, so it never retries one that may have
 * been sent, and a failed attempt fails the action.
 * A due action can never be cancelled (cancellation needs it more than 30
 * seconds ahead), so dispatch and cancellation do not race.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { type Action, ActionStore } from "../ports/ActionStore.js"
import { OptOuts } from "../ports/OptOuts.js"
import { Organisations } from "../ports/Organisations.js"
import { type Change, type ProviderSession, Providers } from "../ports/Providers.js"
import type { StorageError } from "../ports/StorageError.js"
import { periodOf } from "./AllowancePeriods.js"
import { channelOf, Consent } from "./Consent.js"
import * as DispatchPlan from "./DispatchPlan.js"
import { ALLOWANCE_FAILURE, decide, decideConsent, decideDestination, decideRecipientHours, isKeywordReply } from "./DispatchRules.js"
import { isFinal, movesForward, ProviderReports } from "./ProviderReports.js"
import { allowanceUnits } from "./Segments.js"

/** Actions worked per run; a host runs again at once when a run was full. */
export const RUN_SIZE = 100

export interface DispatchService {
  /** Works what is due now (live actions to send, actions due a look), once each; answers how many it worked. */
  readonly runDue: Effect.Effect<number, StorageError>
}

export class Dispatch extends Context.Tag("@parley/core/Dispatch")<Dispatch, DispatchService>() {}

const isProviderFailure = <E extends { readonly _tag: string }>(error: E): error is Exclude<E, StorageError> =>
  error._tag !== "StorageError"

export const layer: Layer.Layer<Dispatch, never, ActionStore | Organisations | Providers | ProviderReports | OptOuts | Consent> =
  Layer.effect(
    Dispatch,
    Effect.gen(function*() {
      const store = yield* ActionStore
      const organisations = yield* Organisations
      const providers = yield* Providers
      const reports = yield* ProviderReports
      const optOuts = yield* OptOuts
      const consent = yield* Consent

      /** Applies a provider's change to the action as that provider's report. */
      const apply = (action: Action, change: Change) =>
        reports.report({
          orgId: action.orgId,
          actionId: action.id,
          kind: action.kind,
          status: change.status,
          providerStatus: change.providerStatus ?? change.status.toLowerCase(),
          sid: change.sid,
          errorMessage: change.errorMessage,
          body: change.body,
          audioFileId: change.audioFileId,
          recheckAt: change.workAt ?? undefined
        })

      const fail = (action: Action, reason: string) =>
        apply(action, { status: "Failed", workAt: null, providerStatus: "failed", errorMessage: reason })

      /** Hands the action to the organisation's provider for its kind and applies the answer. */
      const submit = (session: ProviderSession, action: Action, now: number) =>
        Effect.gen(function*() {
          const provider = yield* session.current(action.orgId, action.kind)
          const refused = provider.client.cannotSend(action)
          if (refused !== null) return yield* fail(action, refused)
          const change = yield* provider.client.send(action, now).pipe(
            Effect.catchIf(isProviderFailure, (error) =>
              Effect.as(
                // The carrier's "unsubscribed" refusal is the recipient's STOP given there: keep it too.
                error.reason === "unsubscribed"
                  ? consent.fromCarrier(action.orgId, action.counterpart, {
                    actionId: action.id,
                    channel: channelOf(action.kind, action.type),
                    message: `${error.code ?? ""} ${error.message}`.trim(),
                    at: new Date(now).toISOString()
                  })
                  : Effect.void,
                DispatchPlan.refused(provider, action.orgId, error) ?? DispatchPlan.gaveUp(provider, error, 1)
              ))
          )
          yield* apply(action, change)
        })

      const work = (session: ProviderSession, action: Action, now: number) =>
        Effect.gen(function*() {
          const organisation = yield* organisations.get(action.orgId)
          if (organisation._tag === "None") return yield* fail(action, "The organisation no longer exists.")
          // A keyword's answer goes to a number that has just written (and may just have opted out): the
          // sending hours, its consent and the allowance do not apply to it (isKeywordReply).
          const reply = isKeywordReply(action)
          const decision = decide(organisation.value, action.kind, now)
          if (decision._tag === "Hold" && !reply) return
          if (decision._tag === "Fail") return yield* fail(action, decision.reason)
          const destination = decideDestination(organisation.value, action.line, action.counterpart)
          if (destination._tag === "Fail") return yield* fail(action, destination.reason)
          if (!reply && decideRecipientHours(organisation.value, action.counterpart, now)._tag === "Hold") return
          if (!reply) {
            const entry = Option.getOrUndefined(yield* optOuts.find(action.orgId, action.counterpart))
            const consent = decideConsent(entry, action.kind, action.type)
            if (consent._tag === "Fail") return yield* fail(action, consent.reason)
            const units = action.kind === "message" ? allowanceUnits(action.type, action.body) : 1
            const period = periodOf(now, organisation.value.timezone)
            if (!(yield* organisations.takeAllowance(action.orgId, action.kind === "message" ? "sms" : "call", units, period))) {
              return yield* fail(action, ALLOWANCE_FAILURE[action.kind])
            }
          }
          yield* submit(session, action, now)
        })

      /**
       * Looks again at an action its provider has: what moved is applied, and the next look is one interval
       * later while the action is not final. This dispatcher keeps no journal of which provider had the
       * action: it asks the organisation's current one for the kind.
       */
      const followUp = (session: ProviderSession, action: Action, now: number) =>
        Effect.gen(function*() {
          const provider = yield* session.current(action.orgId, action.kind)
          const found = action.sid === null ? Option.none() : yield* provider.client.recheck(action, action.sid, now).pipe(
            Effect.catchIf(isProviderFailure, () => Effect.succeed(Option.none()))
          )
          // No journal here: looks go on while the action is not final (the simulator's steps end it).
          if (Option.isSome(found) && movesForward(action.kind, action.status, found.value.status)) {
            return yield* apply(action, { ...found.value, workAt: now + provider.client.lookAgainMs })
          }
          const next = DispatchPlan.lookAgainAt(provider.client.lookAgainMs, action.dueAt, now, "nothing new")
          yield* store.lookAgainAt(action.orgId, action.id, isFinal(action.kind, action.status) ? null : next)
        })

      return Dispatch.of({
        runDue: Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const session = yield* providers.session
          const due = yield* store.dueActions(now, RUN_SIZE)
          for (const action of due) yield* work(session, action, now)
          const followUps = yield* store.followUps(now, RUN_SIZE)
          for (const action of followUps) yield* followUp(session, action, now)
          return due.length + followUps.length
        }).pipe(Effect.withSpan("Dispatch.runDue"))
      })
    })
  )
