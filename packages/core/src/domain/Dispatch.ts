/**
 * Dispatch over the ports: the core's own dispatcher, for hosts that embed
 * the engine (the server runs a batched SQL twin of it, with leases for
 * several replicas, over the same rules). Each due live action meets, in
 * order:
 * - the organisation's live rules (DispatchRules): held outside its sending
 *   hours (it stays Queued and is looked at again on a later run), failed if
 *   AI calls were turned off;
 * - its allowance: one unit taken atomically, or failed when none is left;
 * - its provider: the Carrier sends texts, the AiCallProvider starts calls
 *   (the action id is their idempotency key), and the answer is applied as a
 *   provider report (ProviderReports): from then on the provider's reports
 *   drive the action, the simulator's too.
 * A due action can never be cancelled (cancellation needs it more than 30
 * seconds ahead), so dispatch and cancellation do not race.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { AiCallProvider } from "../ports/AiCallProvider.js"
import { Carrier } from "../ports/Carrier.js"
import { type Action, ActionStore } from "../ports/ActionStore.js"
import { Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { periodOf } from "./AllowancePeriods.js"
import { ALLOWANCE_FAILURE, decide } from "./DispatchRules.js"
import { allowanceUnits } from "./Segments.js"
import { ProviderReports } from "./ProviderReports.js"

/** Actions worked per run; a host runs again at once when a run was full. */
export const RUN_SIZE = 100

export interface DispatchService {
  /** Works the live actions due now, once each; answers how many it worked. */
  readonly runDue: Effect.Effect<number, StorageError>
}

export class Dispatch extends Context.Tag("@parley/core/Dispatch")<Dispatch, DispatchService>() {}

export const layer: Layer.Layer<Dispatch, never, ActionStore | Organisations | Carrier | AiCallProvider | ProviderReports> =
  Layer.effect(
    Dispatch,
    Effect.gen(function*() {
      const store = yield* ActionStore
      const organisations = yield* Organisations
      const carrier = yield* Carrier
      const calls = yield* AiCallProvider
      const reports = yield* ProviderReports

      const fail = (action: Action, reason: string) =>
        reports.report({
          orgId: action.orgId,
          actionId: action.id,
          kind: action.kind,
          status: "Failed",
          providerStatus: "failed",
          errorMessage: reason
        })

      /** Hands the action to its provider and applies the answer as the provider's first report. */
      const submit = (action: Action) =>
        action.kind === "message"
          ? carrier.send({
            actionId: action.id,
            orgId: action.orgId,
            channel: action.type === "WhatsApp" ? "WhatsApp" : "SMS",
            from: action.line,
            to: action.counterpart,
            body: action.body,
            whatsAppContentSid: action.whatsAppContentSid,
            whatsAppContentVariables: action.whatsAppContentVariables
          }).pipe(
            Effect.flatMap((receipt) =>
              reports.report({
                orgId: action.orgId,
                actionId: action.id,
                kind: "message",
                status: receipt.status,
                providerStatus: receipt.providerStatus,
                sid: receipt.sid,
                errorMessage: receipt.errorMessage
              })
            ),
            Effect.catchTag("CarrierError", (error) => fail(action, error.message))
          )
          : calls.start({
            actionId: action.id,
            orgId: action.orgId,
            from: action.line,
            to: action.counterpart,
            botId: action.botId ?? "",
            mode: action.mode ?? "follow_script",
            purposeMessage: action.purposeMessage
          }).pipe(
            Effect.flatMap((receipt) =>
              reports.report({
                orgId: action.orgId,
                actionId: action.id,
                kind: "ai_call",
                status: receipt.status,
                providerStatus: receipt.providerStatus,
                sid: receipt.sid,
                errorMessage: receipt.errorMessage
              })
            ),
            Effect.catchTag("AiCallError", (error) => fail(action, error.message))
          )

      const work = (action: Action, now: number) =>
        Effect.gen(function*() {
          const organisation = yield* organisations.get(action.orgId)
          if (organisation._tag === "None") return yield* fail(action, "The organisation no longer exists.")
          const decision = decide(organisation.value, action.kind, now)
          if (decision._tag === "Hold") return
          if (decision._tag === "Fail") return yield* fail(action, decision.reason)
          const units = action.kind === "message" ? allowanceUnits(action.type, action.body) : 1
          const period = periodOf(now, organisation.value.timezone)
          if (!(yield* organisations.takeAllowance(action.orgId, action.kind === "message" ? "sms" : "call", units, period))) {
            return yield* fail(action, ALLOWANCE_FAILURE[action.kind])
          }
          yield* submit(action)
        })

      return Dispatch.of({
        runDue: Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const due = yield* store.dueActions(now, RUN_SIZE)
          for (const action of due) yield* work(action, now)
          return due.length
        }).pipe(Effect.withSpan("Dispatch.runDue"))
      })
    })
  )
