/**
 * Idempotency records on the embedded SQLite store. It runs one write transaction at a time, so the
 * completed record is written inside the creation's transaction ("record" exclusion): one commit per
 * creation, not two, and a commit is most of a creation's cost (docs/benchmarks.md, "Store adapters"). Its
 * statements run prepared, each call in one synchronous step.
 */
import { IdempotencyStore } from "@parley/core/domain"
import { Effect, Layer, Option } from "effect"
import { RecordRow, reservationOf, UPSERT_SET } from "../IdempotencyRecords.js"
import { storage } from "../rows.js"
import { SqliteHandle } from "./SqliteDriver.js"

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
const recordingStore = (handle: SqliteHandle["Type"]): IdempotencyStore.RecordingStore => {
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

export const layer: Layer.Layer<IdempotencyStore.IdempotencyStore, never, SqliteHandle> = Layer.effect(
  IdempotencyStore.IdempotencyStore,
  Effect.map(SqliteHandle, (handle) => IdempotencyStore.IdempotencyStore.of(recordingStore(handle)))
)
