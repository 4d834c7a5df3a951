/**
 * Idempotency records in SQL, what both store adapters share: the row, and the one conditional upsert that
 * claims a key. The primary key (api key, Idempotency-Key) decides a race between identical requests on any
 * number of processes; an expired record or a lapsed in-flight reservation (its process died) is taken
 * over in the same statement. The adapters differ in when the claim is written: store/postgres/
 * PgIdempotencyStore.ts reserves first, store/sqlite/SqliteIdempotencyStore.ts records once.
 */
import type { IdempotencyStore } from "@parley/core/domain"
import { Schema } from "effect"
import { DbInt, NullableString } from "./rows.js"

export const RecordRow = Schema.Struct({
  fingerprint: Schema.String,
  status: Schema.NullOr(DbInt),
  body: NullableString
})

export const reservationOf = (
  existing: { readonly fingerprint: string; readonly status: number | null; readonly body: string | null }
): IdempotencyStore.Holder =>
  existing.status === null || existing.body === null
    ? { _tag: "InFlight", fingerprint: existing.fingerprint }
    : { _tag: "Completed", fingerprint: existing.fingerprint, response: { status: existing.status, body: existing.body } }

/** A claim (no response yet) and a completed record alike take over an expired or lapsed record. */
export const UPSERT_SET = `fingerprint = excluded.fingerprint, locked_until = excluded.locked_until,
  expires_at = excluded.expires_at, status = excluded.status, body = excluded.body`
