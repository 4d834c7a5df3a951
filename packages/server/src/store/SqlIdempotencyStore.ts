/**
 * Idempotency records in SQL. `reserve` is one conditional upsert: the
 * primary key (api key, Idempotency-Key) decides a race between identical
 * requests on any number of processes; an expired record or a lapsed
 * in-flight reservation (its process died) is taken over in the same statement.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { IdempotencyStore } from "@parley/core/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "./rows.js"

const RecordRow = Schema.Struct({
  fingerprint: Schema.String,
  status: Schema.NullOr(DbInt),
  body: NullableString
})

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

    const tryReserve = (r: IdempotencyStore.ReserveRequest) =>
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
        ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
          locked_until = excluded.locked_until, expires_at = excluded.expires_at, status = NULL, body = NULL
        WHERE idempotency_keys.expires_at <= ${r.now}
          OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ${r.now})
        RETURNING key_id`,
        (rows) => rows.length > 0
      )

    const reserve = (r: IdempotencyStore.ReserveRequest) =>
      Effect.gen(function*() {
        // Between a lost upsert and the read the winner may release its claim; then try again.
        for (let attempt = 0; attempt < 3; attempt++) {
          if (yield* tryReserve(r)) return { _tag: "Reserved" } satisfies IdempotencyStore.Reservation
          const existing = yield* find({ keyId: r.keyId, key: r.idempotencyKey })
          if (Option.isSome(existing)) {
            const { body, fingerprint, status } = existing.value
            const reservation: IdempotencyStore.Reservation = status === null || body === null
              ? { _tag: "InFlight", fingerprint }
              : { _tag: "Completed", fingerprint, response: { status, body } }
            return reservation
          }
        }
        const contended: IdempotencyStore.Reservation = { _tag: "InFlight", fingerprint: r.fingerprint }
        return contended
      })

    return IdempotencyStore.IdempotencyStore.of({
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
