/**
 * The simulated carrier and AI-call provider behind the embedded default.
 * Their behaviour (lifecycle, failure numbers, transcripts) is the core's
 * Simulation; what lives here is their memory of sends, in the database: one
 * row per action id, which is the provider idempotency key. A send repeated
 * after a crash finds the row and answers the first outcome without sending
 * again (it only counts the attempt), so each action is sent at most once.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Simulation, type StorageError } from "@parley/core"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { DbInt, NullableString, storage } from "../store/rows.js"

export interface ProviderReceipt {
  readonly sid: string
  readonly status: string
  readonly providerStatus: string
  readonly errorMessage: string | null
}

const SendRow = Schema.Struct({
  sid: Schema.String,
  status: Schema.String,
  provider_status: Schema.String,
  error_message: NullableString,
  attempts: DbInt
})

export class SimulatedProviders extends Context.Tag("@parley/server/SimulatedProviders")<SimulatedProviders, {
  readonly sendText: (actionId: string, to: string) => Effect.Effect<ProviderReceipt, StorageError>
  readonly startCall: (actionId: string, to: string) => Effect.Effect<ProviderReceipt, StorageError>
}>() {}

export const layer = Layer.effect(
  SimulatedProviders,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const record = SqlSchema.single({
      Request: Schema.Struct({
        actionId: Schema.String,
        kind: Schema.String,
        sid: Schema.String,
        to: Schema.String,
        status: Schema.String,
        providerStatus: Schema.String,
        errorMessage: NullableString,
        now: Schema.Number
      }),
      Result: SendRow,
      execute: (r) =>
        sql`INSERT INTO simulated_sends ${
          sql.insert({
            action_id: r.actionId,
            kind: r.kind,
            sid: r.sid,
            recipient: r.to,
            status: r.status,
            provider_status: r.providerStatus,
            error_message: r.errorMessage,
            first_sent_at: r.now,
            attempts: 1
          })
        } ON CONFLICT (action_id) DO UPDATE SET attempts = simulated_sends.attempts + 1
        RETURNING sid, status, provider_status, error_message, attempts`
    })
    const submit = (kind: "message" | "ai_call", actionId: string, to: string) =>
      Effect.gen(function*() {
        const outcome = kind === "message" ? Simulation.textSendOutcome(to) : Simulation.callStartOutcome(to)
        const row = yield* record({
          actionId,
          kind,
          sid: `${kind === "message" ? "SM" : "CA"}${actionId.padStart(32, "0")}`,
          to,
          status: outcome.status,
          providerStatus: outcome.providerStatus,
          errorMessage: outcome.errorMessage,
          now: yield* Clock.currentTimeMillis
        })
        return { sid: row.sid, status: row.status, providerStatus: row.provider_status, errorMessage: row.error_message }
      }).pipe(storage(`simulated.${kind}`))
    return SimulatedProviders.of({
      sendText: (actionId, to) => submit("message", actionId, to),
      startCall: (actionId, to) => submit("ai_call", actionId, to)
    })
  })
)
