/**
 * Parley's engine embedded in a process: the domain services over the
 * in-memory ports, with the core's own dispatcher and the simulator as every
 * organisation's provider. Swap `MemoryPortsLayer` and `Simulator.layerProviders`
 * for your own layers of the ports (a CRM connector, your providers behind the
 * Providers port, your database) to run the same rules anywhere.
 */
import { Actions, Authenticator, Conversations, Cursors, Dispatch, DomainLayer, RateLimiter } from "@parley/core/domain"
import { MemoryPortsLayer, seedDemo, Simulator } from "@parley/core/testing"
import { Effect, Layer } from "effect"

/** How long each simulated step (sent → delivered) takes here. */
const STEP_MS = 100

export const EmbeddedParley = Dispatch.layer.pipe(
  Layer.provideMerge(Simulator.layerProviders),
  Layer.provideMerge(Simulator.SimulatorStep.layer(STEP_MS)),
  Layer.provideMerge(DomainLayer),
  Layer.provideMerge(MemoryPortsLayer),
  Layer.provideMerge(Cursors.layerRandom),
  Layer.provideMerge(RateLimiter.RateLimitConfig.layer(RateLimiter.RateLimitConfig.default))
)

/**
 * Seeds the demo organisation, queues a text as its live key, dispatches it, follows it to Delivered, and
 * reads the conversation back.
 */
export const program = Effect.gen(function*() {
  const demo = yield* seedDemo()
  const { caller } = yield* Effect.flatMap(Authenticator.Authenticator, (auth) => auth.authenticate(demo.keys.live))
  const actions = yield* Actions.Actions
  const dispatch = yield* Dispatch.Dispatch
  const sender = demo.numbers[0]
  if (sender === undefined) return yield* Effect.dieMessage("the demo organisation has numbers")
  const { ack } = yield* actions.createMessage(
    caller,
    { to: "+14155550123", fromNumberSid: sender.sid, body: "Hello from an embedded Parley", channel: "SMS" },
    "embedded-example-1"
  )
  const queued = yield* actions.get(caller, "message", ack.id)
  // A host runs the dispatcher on its own schedule; here, until the text is final: the first run sends it, a
  // later one (a step on) finds it delivered.
  yield* dispatch.runDue
  let record = yield* actions.get(caller, "message", ack.id)
  while (record.status !== "Delivered" && record.status !== "Undelivered" && record.status !== "Failed") {
    yield* Effect.sleep(STEP_MS / 2)
    yield* dispatch.runDue
    record = yield* actions.get(caller, "message", ack.id)
  }
  const conversations = yield* Effect.flatMap(Conversations.Conversations, (c) => c.list(caller, undefined))
  return { ack, queued, record, conversations }
})
