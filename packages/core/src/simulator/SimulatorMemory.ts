/**
 * Port: what the simulator remembers of its sends — the first outcome of
 * each action id, which is its idempotency key. A send repeated after a crash
 * finds it and answers that outcome without sending again, so a simulated
 * action, like a real one, is sent at most once. The server keeps it in its
 * database (`simulated_sends`); the memory layer is for embedding.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { RecordStatus } from "../contract/Statuses.js"
import type { ActionKind } from "../ports/ActionStore.js"
import type { StorageError } from "../ports/StorageError.js"

/** One simulated send: what the simulator answered the first time it was asked. */
export interface SimulatedSend {
  readonly actionId: string
  readonly kind: ActionKind
  readonly to: string
  readonly sid: string
  readonly status: RecordStatus
  readonly providerStatus: string
  readonly errorMessage: string | null
}

export interface SimulatorMemoryService {
  /**
   * Keeps each send whose action id is new; answers, for every action id asked, the send kept first (a
   * repeated one only counts as another attempt).
   */
  readonly remember: (
    sends: ReadonlyArray<SimulatedSend>,
    now: number
  ) => Effect.Effect<ReadonlyMap<string, SimulatedSend>, StorageError>
}

export class SimulatorMemory extends Context.Tag("@parley/core/SimulatorMemory")<
  SimulatorMemory,
  SimulatorMemoryService
>() {}

export const layerMemory: Layer.Layer<SimulatorMemory> = Layer.effect(
  SimulatorMemory,
  Effect.map(Ref.make(new Map<string, SimulatedSend>()), (kept) =>
    SimulatorMemory.of({
      remember: (sends) =>
        Ref.modify(kept, (m): [ReadonlyMap<string, SimulatedSend>, Map<string, SimulatedSend>] => {
          const next = new Map(m)
          const answers = new Map<string, SimulatedSend>()
          for (const send of sends) {
            const first = next.get(send.actionId) ?? send
            next.set(send.actionId, first)
            answers.set(send.actionId, first)
          }
          return [answers, next]
        })
    }))
)
