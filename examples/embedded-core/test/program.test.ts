import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { EmbeddedParley, program } from "../src/program.js"

describe("embedded core example", () => {
  it.live("queues a text, dispatches it through the simulated carrier to Delivered, and reads the conversation", () =>
    Effect.gen(function*() {
      const { ack, conversations, queued, record } = yield* program
      expect(ack.test).toBe(false)
      expect(queued.status).toBe("Queued")
      expect(record.id).toBe(ack.id)
      expect(record.status).toBe("Delivered")
      expect(record.sid).toBe(`SM${ack.id.padStart(32, "0")}`)
      expect(conversations.items[0]?.preview).toBe("Hello from an embedded Parley")
    }).pipe(Effect.provide(EmbeddedParley)))
})
