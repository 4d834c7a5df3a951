/**
 * A fast reader for action rows fetched as value arrays (`sql….values`).
 *
 * Decoding every column of every row of a page through Effect Schema cost
 * more than the query itself, and fetching rows as objects makes the SQLite
 * driver build an object per row, dearer than fetching the values
 * (measurements: docs/benchmarks.md, "Store adapters"). This reads plainly
 * well-formed values with one check per column. Anything it
 * does not recognise makes it give up (undefined) and the caller decodes the
 * rows with `ActionRow`, the source of truth, which returns the value or the
 * precise error: the fast path accepts a subset of what the schema accepts and
 * returns the same value for it. The dispatcher reads its claimed rows (the
 * action's columns and two of its own) with the same column readers.
 */
import { CallMode, CallStatus, CrmModule, Direction, MessageStatus, RecordType } from "@parley/core"
import type { ActionRow } from "./SqlActionStore.js"

type Row = typeof ActionRow.Type
export type ActionColumn = keyof Row

class Unreadable extends Error {}

/** Membership in a schema's literals; `Schema.is` on a literal union costs more than the whole row should. */
const oneOf = <L extends string>(literals: ReadonlyArray<L>) => {
  const set: ReadonlySet<unknown> = new Set(literals)
  return (u: unknown): L => {
    if (!set.has(u)) throw new Unreadable()
    return u as L
  }
}
const nullable = <A>(read: (u: unknown) => A) => (u: unknown): A | null => (u === null ? null : read(u))

const string = (u: unknown): string => {
  if (typeof u !== "string") throw new Unreadable()
  return u
}
const nullableString = nullable(string)
/** BIGINT columns: numbers on SQLite, decimal strings from node-postgres. Anything else goes to the schema. */
const int = (u: unknown): number => {
  if (typeof u === "number") return u
  if (typeof u === "string" && /^-?\d+$/.test(u)) return Number(u)
  throw new Unreadable()
}
const id = (u: unknown): number | string => {
  if (typeof u !== "number" && typeof u !== "string") throw new Unreadable()
  return u
}
const json = (u: unknown): unknown => {
  try {
    return JSON.parse(string(u))
  } catch {
    throw new Unreadable()
  }
}
const isPlainObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * `linked_records`: JSON array of `{ module, id, name }`. Rebuilt field by field, as the schema's decoding
 * does (it drops properties the struct does not name).
 */
const linkedRecords = (u: unknown): Row["linked_records"] => {
  // Almost every action links no records; skip parsing the common case.
  if (u === "[]") return []
  const parsed = json(u)
  if (!Array.isArray(parsed)) throw new Unreadable()
  return parsed.map((item: unknown) => {
    if (!isPlainObject(item)) throw new Unreadable()
    const { id, module, name } = item
    if (typeof module !== "string" || typeof id !== "string" || (name !== null && typeof name !== "string")) {
      throw new Unreadable()
    }
    return { module, id, name }
  })
}

/** `media_urls`: JSON array of strings. */
const stringArray = (u: unknown): ReadonlyArray<string> => {
  // Only inbound messages with media have any; skip parsing the common case.
  if (u === "[]") return []
  const parsed = json(u)
  if (!Array.isArray(parsed) || !parsed.every((item: unknown): item is string => typeof item === "string")) throw new Unreadable()
  return parsed
}

/** `wa_content_variables`: JSON object of strings, copied as the schema's record decoding does. */
const variables = (u: unknown): Readonly<Record<string, string>> => {
  const parsed = json(u)
  if (!isPlainObject(parsed)) throw new Unreadable()
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== "string" || key === "__proto__") throw new Unreadable()
    out[key] = value
  }
  return out
}

/** A reader per column: what the column's schema field decodes the value to, or Unreadable. */
export type ColumnReaders<R> = { readonly [K in keyof R]: (u: unknown) => R[K] }

export const nullableInt = nullable(int)
export { nullableString }

/** One reader per column, each returning exactly what `ActionRow`'s field would decode to. */
export const actionColumnReaders: ColumnReaders<Row> = {
  id,
  org_id: string,
  kind: oneOf(["message", "ai_call"] as const),
  type: oneOf(RecordType.literals),
  direction: oneOf(Direction.literals),
  status: oneOf([...MessageStatus.literals, ...CallStatus.literals]),
  line: string,
  counterpart: string,
  from_number_sid: nullableString,
  body: string,
  media_urls: stringArray,
  bot_id: nullableString,
  mode: nullable(oneOf(CallMode.literals)),
  purpose_message: nullableString,
  template_id: nullableString,
  wa_content_sid: nullableString,
  wa_content_variables: nullable(variables),
  read_at: nullableString,
  at: string,
  scheduled_for: nullableString,
  due_at: int,
  owner_id: nullableString,
  owner_name: nullableString,
  record_module: nullable(oneOf(CrmModule.literals)),
  record_id: nullableString,
  record_name: nullableString,
  linked_records: linkedRecords,
  sid: nullableString,
  audio_file_id: nullableString,
  error_message: nullableString,
  sent_by: nullableString,
  modified: string,
  api_key_id: nullableString,
  crm_id: nullableString,
  keyword_reply_to: nullableString
}

/**
 * The rows (value arrays in the order of `columns`) as values of those columns, read by `readers`, or
 * undefined when any of them is not plainly well-formed.
 */
export const readValues = <R, K extends keyof R & string>(
  readers: ColumnReaders<R>,
  columns: ReadonlyArray<K>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>
): ReadonlyArray<Pick<R, K>> | undefined => {
  const read: ReadonlyArray<(u: unknown) => unknown> = columns.map((column) => readers[column])
  try {
    return rows.map((values) => {
      if (values.length !== read.length) throw new Unreadable()
      const row: Record<string, unknown> = {}
      for (let i = 0; i < read.length; i++) row[columns[i] as K] = (read[i] as (u: unknown) => unknown)(values[i])
      // Each value came from its column's reader, which returns that column's decoded type.
      return row as Pick<R, K>
    })
  } catch (error) {
    if (error instanceof Unreadable) return undefined
    throw error
  }
}

/** The rows as `ActionRow` values of `columns`, or undefined when any of them is not plainly well-formed. */
export const readActionValues = <K extends ActionColumn>(
  columns: ReadonlyArray<K>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>
): ReadonlyArray<Pick<Row, K>> | undefined => readValues(actionColumnReaders, columns, rows)

/** Value arrays as objects keyed by column, for the schema to decode when the fast reader gave up. */
export const valuesToObjects = (
  columns: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>
): ReadonlyArray<Record<string, unknown>> =>
  rows.map((values) => {
    const row: Record<string, unknown> = {}
    columns.forEach((column, i) => (row[column] = values[i]))
    return row
  })
