/**
 * The simulator as a provider: Parley's embedded default, behind the same
 * port as Twilio or Vapi (ports/Providers). Its behaviour (lifecycle, failure
 * numbers, transcripts) is the Simulation's; its memory of sends is the
 * SimulatorMemory port (the server's database, or memory when embedded).
 *
 * It sends as a provider that keeps an idempotency key would: a repeated
 * action id answers its first outcome and sends nothing, so a dispatcher
 * needs no journal for it and may hand it a whole batch in one request. Its
 * later steps are what a recheck finds: each look, one step delay after the
 * last, moves the action one step on (Sent → Delivered; Ringing → In Progress
 * → Completed), as the reports of a real provider would.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { CallStatus, MessageStatus } from "../contract/Statuses.js"
import { callStartOutcome, nextCallStep, nextTextStep, textSendOutcome, transcript } from "../domain/Simulation.js"
import { Organisations } from "../ports/Organisations.js"
import {
  type Change,
  type Handoff,
  type ProviderChoice,
  type ProviderClient,
  Providers,
  type Recheck,
  SIMULATOR
} from "../ports/Providers.js"
import type { StorageError } from "../ports/StorageError.js"
import { type SimulatedSend, SimulatorMemory } from "./SimulatorMemory.js"

/** The delay between two simulated steps (the server's PARLEY_SIM_STEP_MS). */
export class SimulatorStep extends Context.Tag("@parley/core/SimulatorStep")<SimulatorStep, { readonly millis: number }>() {
  static readonly layer = (millis: number) => Layer.succeed(SimulatorStep, { millis })
}

/** The simulator's id for an action's message (SM…) or call (CA…), and for a call's recording (AF…). */
export const simulatedSid = (action: Pick<Handoff, "id" | "kind">): string =>
  `${action.kind === "message" ? "SM" : "CA"}${action.id.padStart(32, "0")}`
const recordingId = (actionId: string) => `AF${actionId.padStart(32, "0")}`

const firstSend = (action: Handoff): SimulatedSend => {
  const outcome = action.kind === "message" ? textSendOutcome(action.counterpart) : callStartOutcome(action.counterpart)
  return { actionId: action.id, kind: action.kind, to: action.counterpart, sid: simulatedSid(action), ...outcome }
}

/** What the first answer does to the action: a text that went out is Sent at that moment. */
const accepted = (send: SimulatedSend, now: number, stepMs: number): Change => {
  const final = send.status === "Failed"
  return {
    status: send.status,
    workAt: final ? null : now + stepMs,
    sid: send.sid,
    providerStatus: send.providerStatus,
    errorMessage: send.errorMessage,
    ...(send.kind === "message" && !final ? { at: new Date(now).toISOString() } : {})
  }
}

/**
 * The simulator's client. Bot names (a completed call's transcript names its bot) are read once per
 * organisation for the client's life: a client lives for one dispatch run.
 */
export const client: Effect.Effect<ProviderClient, never, SimulatorMemory | SimulatorStep | Organisations> = Effect.gen(
  function*() {
    const memory = yield* SimulatorMemory
    const { millis } = yield* SimulatorStep
    const organisations = yield* Organisations
    const botNames = new Map<string, ReadonlyMap<string, string>>()

    const botName = (orgId: string, botId: string | null): Effect.Effect<string, StorageError> =>
      Effect.gen(function*() {
        let names = botNames.get(orgId)
        if (names === undefined) {
          names = new Map((yield* organisations.listBots(orgId)).map((bot) => [bot.id, bot.name]))
          botNames.set(orgId, names)
        }
        return names.get(botId ?? "") ?? botId ?? "bot"
      })

    const sendAll = (actions: ReadonlyArray<Handoff>, now: number) =>
      Effect.map(memory.remember(actions.map(firstSend), now), (kept) => {
        const changes = new Map<string, Change>()
        for (const [id, send] of kept) changes.set(id, accepted(send, now, millis))
        return changes as ReadonlyMap<string, Change>
      })

    const nextStep = (action: Handoff, now: number): Effect.Effect<Option.Option<Recheck>, StorageError> => {
      if (action.kind === "message") {
        const next = nextTextStep(action.status as MessageStatus, action.counterpart)
        return Effect.succeed(next === null ? Option.none() : Option.some<Recheck>(next))
      }
      const next = nextCallStep(action.status as CallStatus, action.counterpart)
      if (next === null) return Effect.succeed(Option.none())
      if (next.status !== "Completed") {
        const step: Recheck = { ...next, ...(next.status === "In Progress" ? { at: new Date(now).toISOString() } : {}) }
        return Effect.succeed(Option.some(step))
      }
      return Effect.map(botName(action.orgId, action.botId), (name) =>
        Option.some<Recheck>({
          status: "Completed",
          providerStatus: next.providerStatus,
          body: transcript({
            botName: name,
            mode: action.mode ?? "follow_script",
            purposeMessage: action.purposeMessage,
            to: action.counterpart
          }),
          audioFileId: recordingId(action.id)
        }))
    }

    return {
      idempotent: true,
      lookAgainMs: millis,
      cannotSend: () => null,
      send: (action, now) =>
        Effect.map(sendAll([action], now), (changes) => changes.get(action.id) ?? accepted(firstSend(action), now, millis)),
      sendAll,
      // Sends are kept by action id: there is never an unexplained candidate to look for.
      candidates: () => Effect.succeed([]),
      recheck: (action, _sid, now) => nextStep(action, now)
    } satisfies ProviderClient
  }
)

/** The simulator as the provider a dispatcher meets. */
export const choice: Effect.Effect<ProviderChoice, never, SimulatorMemory | SimulatorStep | Organisations> = Effect.map(
  client,
  (made) => ({ name: SIMULATOR, label: "The simulator", client: made })
)

/** Every organisation on the simulator: the Providers port for hosts that embed the core without real providers. */
export const layerProviders: Layer.Layer<Providers, never, SimulatorMemory | SimulatorStep | Organisations> = Layer.effect(
  Providers,
  Effect.map(Effect.context<SimulatorMemory | SimulatorStep | Organisations>(), (context) =>
    Providers.of({
      session: Effect.map(Effect.provide(choice, context), (simulator) => ({
        current: () => Effect.succeed(simulator),
        named: (_, name) => Effect.succeed(name === SIMULATOR ? Option.some(simulator) : Option.none())
      }))
    }))
)
