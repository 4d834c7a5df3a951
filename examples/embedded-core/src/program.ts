/**
 * Parley's engine embedded in a process: the domain services over the
 * in-memory ports. Swap `MemoryPortsLayer` for your own layers of the ports
 * (a CRM connector, a carrier, your database) to run the same rules anywhere.
 */
import { Actions, Authenticator, Conversations, Cursors, DomainLayer, RateLimiter } from "@parley/core/domain"
import { MemoryPortsLayer, seedDemo } from "@parley/core/testing"
import { Effect, Layer } from "effect"

export const EmbeddedParley = DomainLayer.pipe(
  Layer.provideMerge(MemoryPortsLayer),
  Layer.provideMerge(Cursors.layerRandom),
  Layer.provideMerge(RateLimiter.RateLimitConfig.layer(RateLimiter.RateLimitConfig.default))
)

/** Seeds the demo organisation, queues a text as its live key, and reads the conversation back. */
export const program = Effect.gen(function*() {
  const demo = yield* seedDemo()
  const { caller } = yield* Effect.flatMap(Authenticator.Authenticator, (auth) => auth.authenticate(demo.keys.live))
  const actions = yield* Actions.Actions
  const sender = demo.numbers[0]
  if (sender === undefined) return yield* Effect.dieMessage("the demo organisation has numbers")
  const { ack } = yield* actions.createMessage(
    caller,
    { to: "+14155550123", fromNumberSid: sender.sid, body: "Hello from an embedded Parley", channel: "SMS" },
    "embedded-example-1"
  )
  const record = yield* actions.get(caller, "message", ack.id)
  const conversations = yield* Effect.flatMap(Conversations.Conversations, (c) => c.list(caller, undefined))
  return { ack, record, conversations }
})
