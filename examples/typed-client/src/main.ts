/**
 * A service that uses Parley through the typed client: every endpoint is a
 * method, every payload is checked against the contract before it is sent,
 * and every error decodes to its tagged class (catch them by `_tag`).
 *
 *   PARLEY_URL=http://localhost:8787 PARLEY_API_KEY=parley_live_… pnpm --filter @parley/example-typed-client start
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { makeParleyClient } from "@parley/core"
import { Config, Console, Effect } from "effect"

const program = Effect.gen(function*() {
  const baseUrl = yield* Config.string("PARLEY_URL").pipe(Config.withDefault("http://localhost:8787"))
  const apiKey = yield* Config.redacted("PARLEY_API_KEY")
  const parley = yield* makeParleyClient({ baseUrl, apiKey })

  const { items: numbers } = yield* parley.resources.listNumbers()
  const sender = numbers.find((n) => n.capabilities.sms === true)
  if (sender === undefined) return yield* Console.error("No SMS-capable number is permitted to this key.")
  yield* Console.log(`Sending from ${sender.friendlyName} (${sender.phoneNumber})`)

  const ack = yield* parley.messages.createMessage({
    headers: { "idempotency-key": `example-${Date.now()}` },
    payload: { to: "+14155550123", fromNumberSid: sender.sid, body: "Hello from the typed client", channel: "SMS" }
  })
  yield* Console.log(`Accepted: ${JSON.stringify(ack)}`)

  if (!ack.test) {
    const record = yield* parley.messages.getMessage({ path: { id: ack.id } })
    yield* Console.log(`Record ${record.id}: ${record.status} "${record.body}"`)
  }

  // Errors are typed: a wrong id is NotFound, a bad one InvalidRequest.
  yield* parley.messages.getMessage({ path: { id: "999999999" } }).pipe(
    Effect.catchTag("NotFound", (error) => Console.log(`As expected: ${error.message} (request ${error.requestId})`))
  )
}).pipe(Effect.provide(NodeHttpClient.layerUndici))

NodeRuntime.runMain(program)
