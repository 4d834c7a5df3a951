/**
 * Port: the messaging carrier that sends SMS and WhatsApp. The action id is
 * the carrier idempotency key, so a send retried after a crash is not sent
 * twice. Provider statuses are mapped onto Parley's MessageStatus; the raw
 * value is kept apart in `providerStatus`.
 */
import { Context, Data, Effect, Layer, Ref } from "effect"
import type { Channel } from "../contract/Primitives.js"
import type { MessageStatus } from "../contract/Statuses.js"

export class CarrierError extends Data.TaggedError("CarrierError")<{ readonly message: string }> {}

export interface OutboundText {
  readonly actionId: string
  readonly orgId: string
  readonly channel: Channel
  readonly from: string
  readonly to: string
  readonly body: string
  readonly whatsAppContentSid: string | null
  readonly whatsAppContentVariables: Readonly<Record<string, string>> | null
}

export interface CarrierReceipt {
  readonly sid: string
  readonly status: MessageStatus
  readonly providerStatus: string
  readonly errorMessage: string | null
}

export interface CarrierService {
  readonly send: (text: OutboundText) => Effect.Effect<CarrierReceipt, CarrierError>
}

export class Carrier extends Context.Tag("@parley/core/ports/Carrier")<Carrier, CarrierService>() {}

/** Records every send; a repeated action id answers the first receipt without sending again. */
export const layerMemory: Layer.Layer<Carrier> = Layer.effect(
  Carrier,
  Effect.gen(function*() {
    const sent = yield* Ref.make(new Map<string, CarrierReceipt>())
    return Carrier.of({
      send: (text) =>
        Ref.modify(sent, (m): [CarrierReceipt, Map<string, CarrierReceipt>] => {
          const previous = m.get(text.actionId)
          if (previous !== undefined) return [previous, m]
          const receipt: CarrierReceipt = {
            sid: `SM${text.actionId.padStart(32, "0")}`,
            status: "Sent",
            providerStatus: "sent",
            errorMessage: null
          }
          return [receipt, new Map(m).set(text.actionId, receipt)]
        })
    })
  })
)
