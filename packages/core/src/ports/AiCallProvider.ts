/**
 * Port: the AI-call provider that places outbound bot calls. The action id is
 * the provider idempotency key. Provider statuses map onto CallStatus.
 */
import { Context, Data, Effect, Layer, Ref } from "effect"
import type { CallMode } from "../contract/Primitives.js"
import type { CallStatus } from "../contract/Statuses.js"

export class AiCallError extends Data.TaggedError("AiCallError")<{ readonly message: string }> {}

export interface OutboundCall {
  readonly actionId: string
  readonly orgId: string
  readonly from: string
  readonly to: string
  readonly botId: string
  readonly mode: CallMode
  readonly purposeMessage: string | null
}

export interface CallReceipt {
  readonly sid: string
  readonly status: CallStatus
  readonly providerStatus: string
  /** Why the call could not start, when it failed at once. */
  readonly errorMessage?: string | null | undefined
}

export interface AiCallProviderService {
  readonly start: (call: OutboundCall) => Effect.Effect<CallReceipt, AiCallError>
}

export class AiCallProvider extends Context.Tag("@parley/core/ports/AiCallProvider")<
  AiCallProvider,
  AiCallProviderService
>() {}

export const layerMemory: Layer.Layer<AiCallProvider> = Layer.effect(
  AiCallProvider,
  Effect.gen(function*() {
    const started = yield* Ref.make(new Map<string, CallReceipt>())
    return AiCallProvider.of({
      start: (call) =>
        Ref.modify(started, (m): [CallReceipt, Map<string, CallReceipt>] => {
          const previous = m.get(call.actionId)
          if (previous !== undefined) return [previous, m]
          const receipt: CallReceipt = {
            sid: `CA${call.actionId.padStart(32, "0")}`,
            status: "Ringing",
            providerStatus: "ringing"
          }
          return [receipt, new Map(m).set(call.actionId, receipt)]
        })
    })
  })
)
