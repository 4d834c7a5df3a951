/**
 * The simulator's memory of its sends (the core's SimulatorMemory port), in
 * the database: one row per action id, which is the simulator's idempotency
 * key. A send repeated after a crash finds the row and answers the first
 * outcome without sending again (it only counts the attempt), so each action
 * is sent at most once, as with a real provider.
 */
import { SqlClient } from "@effect/sql"
import { RecordStatus, SimulatorMemory } from "@parley/core/internal"
import { Effect, Layer, Schema } from "effect"
import { NullableString, storage } from "./rows.js"

const SendRow = Schema.Struct({
  action_id: Schema.String,
  kind: Schema.Literal("message", "ai_call"),
  recipient: Schema.String,
  sid: Schema.String,
  status: RecordStatus,
  provider_status: Schema.String,
  error_message: NullableString
})
const decodeSends = Schema.decodeUnknown(Schema.Array(SendRow))

export const layer = Layer.effect(
  SimulatorMemory.SimulatorMemory,
  Effect.map(SqlClient.SqlClient, (sql) =>
    SimulatorMemory.SimulatorMemory.of({
      remember: (sends, now) =>
        Effect.gen(function*() {
          const kept = new Map<string, SimulatorMemory.SimulatedSend>()
          if (sends.length === 0) return kept
          const rows = sends.map((send) => ({
            action_id: send.actionId,
            kind: send.kind,
            sid: send.sid,
            recipient: send.to,
            status: send.status,
            provider_status: send.providerStatus,
            error_message: send.errorMessage,
            first_sent_at: now,
            attempts: 1
          }))
          // One statement for the batch; the conflict clause is what makes a redone submission send nothing.
          const found = yield* Effect.flatMap(
            sql`INSERT INTO simulated_sends ${sql.insert(rows)}
                ON CONFLICT (action_id) DO UPDATE SET attempts = simulated_sends.attempts + 1
                RETURNING action_id, kind, recipient, sid, status, provider_status, error_message`,
            decodeSends
          )
          for (const r of found) {
            kept.set(r.action_id, {
              actionId: r.action_id,
              kind: r.kind,
              to: r.recipient,
              sid: r.sid,
              status: r.status,
              providerStatus: r.provider_status,
              errorMessage: r.error_message
            })
          }
          return kept
        }).pipe(storage("simulated.submit"))
    }))
)
