/**
 * Idempotency records in SQL. Claiming a key is one conditional upsert: the
 * primary key (api key, Idempotency-Key) decides a race between identical
 * requests on any number of processes; an expired record or a lapsed
 * in-flight reservation (its process died) is taken over in the same statement.
 *
 * Postgres reserves the key in its own commit before the work (its replicas'
 * transactions run concurrently). The embedded SQLite store runs one write
 * transaction at a time, so there the completed record is written inside the
 * creation's transaction ("record" exclusion): one commit per creation, not
 * two, and a commit is most of a creation's cost (docs/benchmarks.md). Its
 * statements run prepared, each call in one synchronous step.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { IdempotencyStore } from "@parley/core/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { DbInt, NullableString, storage } from "./rows.js"
import { SqliteHandle } from "./SqliteDriver.js"

const RecordRow = Schema.Struct({
  fingerprint: Schema.String,
  status: Schema.NullOr(DbInt),
  body: NullableString
})

/** Between a lost claim and the read of the record the winner may release it; then the claim is tried again (Postgres). */
const ATTEMPTS = 3

const reservationOf = (
  existing: { readonly fingerprint: string; readonly status: number | null; readonly body: string | null }
): IdempotencyStore.Holder =>
  existing.status === null || existing.body === null
    ? { _tag: "InFlight", fingerprint: existing.fingerprint }
    : { _tag: "Completed", fingerprint: existing.fingerprint, response: { status: existing.status, body: existing.body } }

/** A claim (no response yet) and a completed record alike take over an expired or lapsed record. */
const UPSERT_SET = `fingerprint = excluded.fingerprint, locked_until = excluded.locked_until,
  expires_at = excluded.expires_at, status = excluded.status, body = excluded.body`

/** The record as SQLite returns it, checked as `RecordRow` would decode it (SQLite integers are numbers). */
const storedRecord = (row: unknown): typeof RecordRow.Type => {
  if (typeof row === "object" && row !== null && "fingerprint" in row && "status" in row && "body" in row) {
    const { body, fingerprint, status } = row
    if (typeof fingerprint === "string" && (status === null || typeof status === "number") &&
      (body === null || typeof body === "string")) return { fingerprint, status, body }
  }
  throw new Error(`unexpected idempotency record: ${JSON.stringify(row)}`)
}

/** An existing record yields to a new claim once expired, or once its in-flight reservation has lapsed. */
const LAPSED = "idempotency_keys.expires_at <= ? OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ?)"

/** The embedded store: look up, then the completed record in the creation's transaction. */
const sqliteStore = (handle: SqliteHandle["Type"]): IdempotencyStore.RecordingStore => {
  const upsert = handle.prepared(`INSERT INTO idempotency_keys
      (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (key_id, idempotency_key) DO UPDATE SET ${UPSERT_SET}
    WHERE ${LAPSED}
    RETURNING key_id`)
  const findLive = handle.prepared(`SELECT fingerprint, status, body FROM idempotency_keys
    WHERE key_id = ? AND idempotency_key = ? AND NOT (${LAPSED})`)
  const purge = handle.prepared("DELETE FROM idempotency_keys WHERE expires_at <= ?")
  return {
    exclusion: "record",
    find: (keyId, key, now) =>
      storage("idempotency.find")(handle.use(() => {
        const row = findLive.get(keyId, key, now, now)
        return row === undefined ? Option.none() : Option.some(reservationOf(storedRecord(row)))
      })),
    record: (r, response) =>
      storage("idempotency.record")(handle.use(() =>
        upsert.get(r.keyId, r.idempotencyKey, r.fingerprint, r.lockedUntil, r.expiresAt, response.status, response.body,
          r.now, r.now) !== undefined
      )),
    purgeExpired: (now) => storage("idempotency.purgeExpired")(handle.use(() => purge.run(now).changes))
  }
}

export const layer = Layer.effect(
  IdempotencyStore.IdempotencyStore,
  Effect.gen(function*() {
    const handle = yield* Effect.serviceOption(SqliteHandle)
    if (Option.isSome(handle)) return IdempotencyStore.IdempotencyStore.of(sqliteStore(handle.value))
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
