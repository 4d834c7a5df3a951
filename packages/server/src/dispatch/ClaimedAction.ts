/**
 * An action as the dispatcher holds it while its lease lasts, and the status
 * changes it applies to it.
 *
 * The state after a change is computed here rather than read back from the
 * database: while a worker holds the lease it is the only writer of the row
 * (cancellation only touches rows still Queued and uncommitted, and every
 * dispatcher update re-checks the status it expects), so the row it claimed
 * plus its own changes is exactly what the database holds.
 */
import type { Providers } from "@parley/core/domain"
import { Effect, Schema } from "effect"
import {
  actionColumnReaders,
  type ColumnReaders,
  nullableInt,
  nullableString,
  readValues,
  valuesToObjects
} from "../store/ActionRowReader.js"
import { DbInt, NullableString } from "../store/rows.js"
import { ActionRow } from "../store/SqlActionStore.js"

export const ClaimedRow = Schema.Struct({
  ...ActionRow.fields,
  charged_at: Schema.NullOr(DbInt),
  provider_status: NullableString
})
export type ClaimedRow = typeof ClaimedRow.Type

/** The columns a claim returns, in this order (`RETURNING` names them; rows come back as value arrays). */
export const CLAIMED_COLUMNS = Object.keys(ClaimedRow.fields) as ReadonlyArray<keyof ClaimedRow>

const claimedReaders: ColumnReaders<ClaimedRow> = {
  ...actionColumnReaders,
  charged_at: nullableInt,
  provider_status: nullableString
}

const decodeWithSchema = Schema.decodeUnknown(Schema.Array(ClaimedRow))

/**
 * Claimed rows (value arrays in CLAIMED_COLUMNS order). Through Effect Schema a row costs about as much as
 * the claim's SQL; the column readers a small fraction of that (docs/benchmarks.md). A row they do not
 * recognise sends the batch to the schema, which returns the value or names what is wrong.
 */
export const decodeClaimed = (rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
  const read = readValues(claimedReaders, CLAIMED_COLUMNS, rows)
  return read === undefined ? decodeWithSchema(valuesToObjects(CLAIMED_COLUMNS, rows)) : Effect.succeed(read)
}

/** A status change (the core's provider port's): a field left undefined keeps its value. */
export type Change = Providers.Change

/** The row as its provider is given it (the core's Handoff). */
export const handoffOf = (row: ClaimedRow): Providers.Handoff => ({
  id: String(row.id),
  orgId: row.org_id,
  kind: row.kind,
  type: row.type,
  status: row.status,
  line: row.line,
  counterpart: row.counterpart,
  body: row.body,
  botId: row.bot_id,
  mode: row.mode,
  purposeMessage: row.purpose_message,
  whatsAppContentSid: row.wa_content_sid,
  whatsAppContentVariables: row.wa_content_variables,
  sid: row.sid,
  at: row.at
})

export interface Transition {
  /** The row as this worker holds it; the update only applies while the database still shows its status. */
  readonly before: ClaimedRow
  readonly after: ClaimedRow
  readonly workAt: number | null
}

export const transition = (before: ClaimedRow, change: Change, modified: string): Transition => ({
  before,
  workAt: change.workAt,
  after: {
    ...before,
    status: change.status,
    sid: change.sid ?? before.sid,
    provider_status: change.providerStatus ?? before.provider_status,
    error_message: change.errorMessage === undefined ? before.error_message : change.errorMessage,
    body: change.body ?? before.body,
    audio_file_id: change.audioFileId ?? before.audio_file_id,
    at: change.at ?? before.at,
    modified
  }
})

export const fail = (before: ClaimedRow, reason: string, modified: string): Transition =>
  transition(before, { status: "Failed", workAt: null, errorMessage: reason }, modified)
