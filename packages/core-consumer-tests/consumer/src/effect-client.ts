/** A service on Effect: the typed client derived from the contract, on the fetch HttpClient. */
import { FetchHttpClient } from "@effect/platform"
import { makeParleyClient } from "@parley/core"
import { Effect } from "effect"
import { setting } from "./env.js"

const program = Effect.gen(function*() {
  const parley = yield* makeParleyClient({ baseUrl: setting("PARLEY_URL"), apiKey: setting("PARLEY_API_KEY") })
  const { items } = yield* parley.resources.listBots()
  const missing = yield* parley.aiCalls.getAiCall({ path: { id: "999999999" } }).pipe(
    Effect.map(() => "found"),
    Effect.catchTag("NotFound", (error) => Effect.succeed(error._tag))
  )
  return { bots: items.length, missing }
})

console.log(JSON.stringify(await Effect.runPromise(program.pipe(Effect.provide(FetchHttpClient.layer)))))
