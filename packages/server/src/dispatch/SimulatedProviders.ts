/**
 * The simulated carrier and AI-call provider behind the embedded default.
 * Their behaviour (lifecycle, failure numbers, transcripts) is the core's
 * Simulation; what lives here is their memory of sends, in the database: one
 * row per action id, which is the provider idempotency key. A send repeated
 * after a crash finds the row and answers the first outcome without sending
 * again (it only counts the attempt), so each action is sent at most once.
 */
import { SqlClient } from "@effect/sql"
import { type ActionStore, RecordStatus, Simulation, type StorageError } from "@parley/core/internal"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { NullableString, storage } from "../store/rows.js"

export interface ProviderReceipt {
  readonly sid: string
  readonly status: RecordStatus
  readonly providerStatus: string
  readonly errorMessage: string | null
}

export interface SendRequest {
  /** The provider's idempotency key. */
  readonly actionId: string
  readonly kind: ActionStore.ActionKind
  readonly to: string
}

const SendRow = Schema.Struct({
  action_id: Schema.String,
  sid: Schema.String,
  status: RecordStatus,
  provider_status: Schema.String,
  error_message: NullableString
})
const decodeSends = Schema.decodeUnknown(Schema.Array(SendRow))

export class SimulatedProviders extends Context.Tag("@parley/server/SimulatedProviders")<SimulatedProviders, {
  /** Sends texts and starts calls; the receipts are keyed by action id (a repeated request answers its first outcome). */
  readonly submit: (
    requests: ReadonlyArray<SendRequest>
  ) => Effect.Effect<ReadonlyMap<string, ProviderReceipt>, StorageError>
}>() {}

export const layer = Layer.effect(
  SimulatedProviders,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = (request: SendRequest, now: number) => {
      const outcome = request.kind === "message"
        ? Simulation.textSendOutcome(request.to)
        : Simulation.callStartOutcome(request.to)
      return {
        action_id: request.actionId,
        kind: request.kind,
        sid: `${request.kind === "message" ? "SM" : "CA"}${request.actionId.padStart(32, "0")}`,
        recipient: request.to,
        status: outcome.status,
        provider_status: outcome.providerStatus,
        error_message: outcome.errorMessage,
        first_sent_at: now,
        attempts: 1
      }
    }
    const submit = (requests: ReadonlyArray<SendRequest>) =>
      Effect.gen(function*() {
        const receipts = new Map<string, ProviderReceipt>()
        if (requests.length === 0) return receipts
        const now = yield* Clock.currentTimeMillis
        // One statement for the batch; the conflict clause is what makes a redone submission send nothing.
        const rows = yield* Effect.flatMap(
          sql`INSERT INTO simulated_sends ${sql.insert(requests.map((r) => row(r, now)))}
              ON CONFLICT (action_id) DO UPDATE SET attempts = simulated_sends.attempts + 1
              RETURNING action_id, sid, status, provider_status, error_message`,
          decodeSends
        )
        for (const r of rows) {
          receipts.set(r.action_id, {
            sid: r.sid,
            status: r.status,
            providerStatus: r.provider_status,
            errorMessage: r.error_message
          })
        }
        return receipts
      }).pipe(storage("simulated.submit"))
    return SimulatedProviders.of({ submit })
  })
)
