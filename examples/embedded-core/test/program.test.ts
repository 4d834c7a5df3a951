import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { EmbeddedParley, program } from "../src/program.js"

describe("embedded core example", () => {
  it.effect("queues a text and reads it back through the conversation list", () =>
    Effect.gen(function*() {
      const { ack, conversations, record } = yield* program
      expect(ack.test).toBe(false)
      expect(record.id).toBe(ack.id)
      expect(record.status).toBe("Queued")
      expect(conversations.items[0]?.preview).toBe("Hello from an embedded Parley")
    }).pipe(Effect.provide(EmbeddedParley)))
})
