/** `pnpm --filter @parley/example-embedded-core start` */
import { Console, Effect } from "effect"
import { EmbeddedParley, program } from "./program.js"

Effect.runPromise(
  program.pipe(
    Effect.tap(({ ack, conversations, record }) =>
      Console.log(JSON.stringify({ ack, status: record.status, conversations: conversations.items.length }, null, 2))
    ),
    Effect.provide(EmbeddedParley)
  )
).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
