/**
 * A fast reader for claimed rows. Decoding the ~35 columns of a row through
 * Effect Schema costs tens of microseconds, as much as the claim's SQL; this
 * reads a well-formed row with plain checks in about one. A row it does not
 * recognise makes it give up (undefined), and the caller decodes the batch
 * with the schema instead, which returns the value or the precise error: the
 * fast path never accepts what the schema would reject.
 */
import { CallMode, CallStatus, CrmModule, Direction, LinkedRecord, MessageStatus, RecordType } from "@parley/core"
import { Schema } from "effect"
import type { ClaimedRow } from "./ClaimedAction.js"

class Unreadable extends Error {}

/** Membership in a schema's literals; `Schema.is` on a literal union costs more than the whole row should. */
const oneOf = <L extends string>(literals: ReadonlyArray<L>) => (u: unknown): u is L => literals.some((l) => l === u)
const isStatus = oneOf([...MessageStatus.literals, ...CallStatus.literals])
const isType = oneOf(RecordType.literals)
const isDirection = oneOf(Direction.literals)
const isMode = oneOf(CallMode.literals)
const isModule = oneOf(CrmModule.literals)
const isKind = oneOf(["message", "ai_call"] as const)
const isLinkedRecords = Schema.is(Schema.Array(LinkedRecord))
const isVariables = Schema.is(Schema.Record({ key: Schema.String, value: Schema.String }))

const string = (value: unknown): string => {
  if (typeof value !== "string") throw new Unreadable()
  return value
}
const nullableString = (value: unknown): string | null => (value === null ? null : string(value))
/** BIGINT columns: numbers on SQLite, decimal strings from node-postgres. */
const int = (value: unknown): number => {
  if (typeof value === "number") return value
  if (typeof value === "string" && /^-?\d+$/.test(value)) return Number(value)
  throw new Unreadable()
}
const nullableInt = (value: unknown): number | null => (value === null ? null : int(value))
const checked = <A>(value: unknown, is: (u: unknown) => u is A): A => {
  if (!is(value)) throw new Unreadable()
  return value
}
const nullable = <A>(value: unknown, is: (u: unknown) => u is A): A | null => (value === null ? null : checked(value, is))
const json = <A>(value: unknown, is: (u: unknown) => u is A): A => {
  try {
    return checked(JSON.parse(string(value)), is)
  } catch {
    throw new Unreadable()
  }
}
const isId = (u: unknown): u is number | string => typeof u === "number" || typeof u === "string"

const readRow = (r: Readonly<Record<string, unknown>>): ClaimedRow => ({
  id: checked(r.id, isId),
  org_id: string(r.org_id),
  kind: checked(r.kind, isKind),
  type: checked(r.type, isType),
  direction: checked(r.direction, isDirection),
  status: checked(r.status, isStatus),
  line: string(r.line),
  counterpart: string(r.counterpart),
  from_number_sid: nullableString(r.from_number_sid),
  body: string(r.body),
  bot_id: nullableString(r.bot_id),
  mode: nullable(r.mode, isMode),
  purpose_message: nullableString(r.purpose_message),
  template_id: nullableString(r.template_id),
  wa_content_sid: nullableString(r.wa_content_sid),
  wa_content_variables: r.wa_content_variables === null ? null : json(r.wa_content_variables, isVariables),
  read_at: nullableString(r.read_at),
  at: string(r.at),
  scheduled_for: nullableString(r.scheduled_for),
  due_at: int(r.due_at),
  owner_id: nullableString(r.owner_id),
  owner_name: nullableString(r.owner_name),
  record_module: nullable(r.record_module, isModule),
  record_id: nullableString(r.record_id),
  record_name: nullableString(r.record_name),
  // Almost every action links no records; skip parsing the common case.
  linked_records: r.linked_records === "[]" ? [] : json(r.linked_records, isLinkedRecords),
  sid: nullableString(r.sid),
  audio_file_id: nullableString(r.audio_file_id),
  error_message: nullableString(r.error_message),
  sent_by: nullableString(r.sent_by),
  modified: string(r.modified),
  api_key_id: nullableString(r.api_key_id),
  charged_at: nullableInt(r.charged_at),
  provider_status: nullableString(r.provider_status)
})

/** The rows, or undefined when any of them is not plainly well-formed. */
export const readClaimedRows = (
  rows: ReadonlyArray<Readonly<Record<string, unknown>>>
): ReadonlyArray<ClaimedRow> | undefined => {
  try {
    return rows.map(readRow)
  } catch (error) {
    if (error instanceof Unreadable) return undefined
    throw error
  }
}
