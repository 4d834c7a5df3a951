/**
 * Idempotency records on Postgres: the key is reserved in its own commit before the work, since the
 * replicas' transactions run concurrently, and completed (or released) after it.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { IdempotencyStore } from "@parley/core/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { RecordRow, reservationOf, UPSERT_SET } from "../IdempotencyRecords.js"
import { storage } from "../rows.js"

/** Between a lost claim and the read of the record the winner may release it; then the claim is tried again (Postgres). */
const ATTEMPTS = 3

export const layer = Layer.effect(
  IdempotencyStore.IdempotencyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ keyId: Schema.String, key: Schema.String }),
      Result: RecordRow,
      execute: ({ key, keyId }) =>
        sql`SELECT fingerprint, status, body FROM idempotency_keys
            WHERE key_id = ${keyId} AND idempotency_key = ${key}`
    })

    /** Writes a reservation unless a live record holds the key; true when written. */
    const claim = (r: IdempotencyStore.ReserveRequest) =>
      Effect.map(
        sql`INSERT INTO idempotency_keys ${
          sql.insert({
            key_id: r.keyId,
            idempotency_key: r.idempotencyKey,
            fingerprint: r.fingerprint,
            locked_until: r.lockedUntil,
            expires_at: r.expiresAt,
            status: null,
            body: null
          })
        }
        ON CONFLICT (key_id, idempotency_key) DO UPDATE SET ${sql.literal(UPSERT_SET)}
        WHERE idempotency_keys.expires_at <= ${r.now}
          OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ${r.now})
        RETURNING key_id`,
        (rows) => rows.length > 0
      )

    const reserve = (r: IdempotencyStore.ReserveRequest) =>
      Effect.gen(function*() {
        for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
          if (yield* claim(r)) return { _tag: "Reserved" } satisfies IdempotencyStore.Reservation
          const existing = yield* find({ keyId: r.keyId, key: r.idempotencyKey })
          if (Option.isSome(existing)) return reservationOf(existing.value)
        }
        const contended: IdempotencyStore.Reservation = { _tag: "InFlight", fingerprint: r.fingerprint }
        return contended
      })

    return IdempotencyStore.IdempotencyStore.of({
      exclusion: "reservation",
      reserve: (r) => storage("idempotency.reserve")(reserve(r)),
      complete: (keyId, key, response, expiresAt) =>
        storage("idempotency.complete")(
          sql`UPDATE idempotency_keys SET status = ${response.status}, body = ${response.body},
              expires_at = ${expiresAt} WHERE key_id = ${keyId} AND idempotency_key = ${key}`
        ),
      release: (keyId, key) =>
        storage("idempotency.release")(
          sql`DELETE FROM idempotency_keys WHERE key_id = ${keyId} AND idempotency_key = ${key} AND status IS NULL`
        ),
      purgeExpired: (now) =>
        storage("idempotency.purgeExpired")(
          Effect.map(sql`DELETE FROM idempotency_keys WHERE expires_at <= ${now} RETURNING key_id`, (rows) => rows.length)
        )
    })
  })
)
