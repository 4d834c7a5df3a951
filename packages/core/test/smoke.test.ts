import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Actions } from "../src/internal.js"
import { callerFor, CoreTestLayer, seedDemo } from "./harness.js"

describe("core smoke", () => {
  it.effect("a live key queues a message and reads it back", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(caller, {
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        body: "hello",
        channel: "SMS"
      }, "k1")
      expect(ack.status).toBe("accepted")
      const record = yield* actions.get(caller, "message", ack.id)
      expect(record.body).toBe("hello")
      expect(record.status).toBe("Queued")
    }).pipe(Effect.provide(CoreTestLayer)))
})
