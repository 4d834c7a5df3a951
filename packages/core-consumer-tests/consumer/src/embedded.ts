/** Parley's engine in this process, over the in-memory ports: the public domain and testing subpaths only. */
import { Actions, Authenticator, Conversations, Cursors, DomainLayer, RateLimiter } from "@parley/core/domain"
import { MemoryPortsLayer, seedDemo } from "@parley/core/testing"
import { Effect, Layer } from "effect"

const EmbeddedParley = DomainLayer.pipe(
  Layer.provideMerge(MemoryPortsLayer),
  Layer.provideMerge(Cursors.layerRandom),
  Layer.provideMerge(RateLimiter.RateLimitConfig.layer(RateLimiter.RateLimitConfig.default))
)

const program = Effect.gen(function*() {
  const demo = yield* seedDemo()
  const { caller } = yield* Effect.flatMap(Authenticator.Authenticator, (auth) => auth.authenticate(demo.keys.live))
  const actions = yield* Actions.Actions
  const sender = demo.numbers[0]
  if (sender === undefined) return yield* Effect.dieMessage("the demo organisation has numbers")
  const { ack } = yield* actions.createMessage(
    caller,
    { to: "+14155550123", fromNumberSid: sender.sid, body: "Hello from an embedded Parley", channel: "SMS" },
    "embedded-1"
  )
  const record = yield* actions.get(caller, "message", ack.id)
  const conversations = yield* Effect.flatMap(Conversations.Conversations, (c) => c.list(caller, undefined))
  return { status: record.status, preview: conversations.items[0]?.preview ?? null }
})

console.log(JSON.stringify(await Effect.runPromise(program.pipe(Effect.provide(EmbeddedParley)))))
