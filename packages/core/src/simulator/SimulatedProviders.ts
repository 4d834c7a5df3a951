/**
 * The simulated carrier and AI-call provider as adapters of the core's ports,
 * for hosts that embed the engine: they answer a send as the Simulation says,
 * then report each later step through ProviderReports after the step delay,
 * as Twilio's and Vapi's callbacks do — the same path as a real provider.
 * A repeated action id answers its first receipt and reports nothing again.
 */
import { Context, Effect, FiberSet, Layer, Ref } from "effect"
import type { CallStatus, MessageStatus } from "../contract/Statuses.js"
import { ProviderReports } from "../domain/ProviderReports.js"
import { callStartOutcome, nextCallStep, nextTextStep, textSendOutcome, transcript } from "../domain/Simulation.js"
import { AiCallProvider, type CallReceipt } from "../ports/AiCallProvider.js"
import { Carrier, type CarrierReceipt } from "../ports/Carrier.js"

/** The delay between two simulated steps, as the server's PARLEY_SIM_STEP_MS. */
export class SimulatorStep extends Context.Tag("@parley/core/SimulatorStep")<SimulatorStep, { readonly millis: number }>() {
  static readonly layer = (millis: number) => Layer.succeed(SimulatorStep, { millis })
}

const textSid = (actionId: string) => `SM${actionId.padStart(32, "0")}`
const callSid = (actionId: string) => `CA${actionId.padStart(32, "0")}`

export const layer: Layer.Layer<Carrier | AiCallProvider, never, ProviderReports | SimulatorStep> = Layer.scopedContext(
  Effect.gen(function*() {
    const reports = yield* ProviderReports
    const { millis } = yield* SimulatorStep
    const running = yield* FiberSet.make()
    const texts = yield* Ref.make(new Map<string, CarrierReceipt>())
    const calls = yield* Ref.make(new Map<string, CallReceipt>())

    /** Reports the text's next steps, one step delay apart, until it is final. */
    const followText = (orgId: string, actionId: string, to: string, from: MessageStatus): Effect.Effect<void> =>
      Effect.gen(function*() {
        let current = from
        while (true) {
          const next = nextTextStep(current, to)
          if (next === null) return
          yield* Effect.sleep(millis)
          yield* Effect.ignore(reports.report({
            orgId,
            actionId,
            kind: "message",
            status: next.status,
            providerStatus: next.providerStatus,
            errorMessage: next.errorMessage
          }))
          current = next.status
        }
      })

    const followCall = (
      call: { orgId: string; actionId: string; to: string; botId: string; mode: "follow_script" | "deliver_specific_message"; purposeMessage: string | null },
      from: CallStatus
    ): Effect.Effect<void> =>
      Effect.gen(function*() {
        let current = from
        while (true) {
          const next = nextCallStep(current, call.to)
          if (next === null) return
          yield* Effect.sleep(millis)
          yield* Effect.ignore(reports.report({
            orgId: call.orgId,
            actionId: call.actionId,
            kind: "ai_call",
            status: next.status,
            providerStatus: next.providerStatus,
            errorMessage: next.errorMessage,
            ...(next.status === "Completed"
              ? {
                body: transcript({ botName: call.botId, mode: call.mode, purposeMessage: call.purposeMessage, to: call.to }),
                audioFileId: `AF${call.actionId.padStart(32, "0")}`
              }
              : {})
          }))
          current = next.status
        }
      })

    const carrier = Carrier.of({
      send: (text) =>
        Effect.gen(function*() {
          const known = (yield* Ref.get(texts)).get(text.actionId)
          if (known !== undefined) return known
          const outcome = textSendOutcome(text.to)
          const receipt: CarrierReceipt = { sid: textSid(text.actionId), ...outcome }
          yield* Ref.update(texts, (m) => new Map(m).set(text.actionId, receipt))
          yield* FiberSet.run(running, followText(text.orgId, text.actionId, text.to, outcome.status))
          return receipt
        })
    })
    const provider = AiCallProvider.of({
      start: (call) =>
        Effect.gen(function*() {
          const known = (yield* Ref.get(calls)).get(call.actionId)
          if (known !== undefined) return known
          const outcome = callStartOutcome(call.to)
          const receipt: CallReceipt = { sid: callSid(call.actionId), ...outcome }
          yield* Ref.update(calls, (m) => new Map(m).set(call.actionId, receipt))
          yield* FiberSet.run(running, followCall({ ...call }, outcome.status))
          return receipt
        })
    })
    return Context.make(Carrier, carrier).pipe(Context.add(AiCallProvider, provider))
  })
)
