/**
 * Column codecs shared by the SQL repositories, so SQLite and Postgres rows
 * decode the same way: node-postgres returns BIGINT as a string, SQLite
 * returns integers for booleans, and JSON columns are text.
 */
import type { SqlError } from "@effect/sql"
import { StorageError } from "@parley/core/domain"
import { type Cause, Effect, type ParseResult, Schema } from "effect"

export const DbInt = Schema.Union(Schema.Number, Schema.NumberFromString)

export const DbBool = Schema.transform(Schema.Union(Schema.Number, Schema.Boolean), Schema.Boolean, {
  strict: true,
  decode: (value) => value === true || value === 1,
  encode: (value) => (value ? 1 : 0)
})

export const DbJson = <A, I>(schema: Schema.Schema<A, I>) => Schema.parseJson(schema)

export const NullableString = Schema.NullOr(Schema.String)

export const StringArrayJson = DbJson(Schema.Array(Schema.String))

export const bool = (value: boolean): number => (value ? 1 : 0)

/** Every SQL or row-decoding failure becomes a StorageError naming the operation; the cause is logged, never sent. */
export const storage = (operation: string) =>
<A, E extends SqlError.SqlError | ParseResult.ParseError | Cause.NoSuchElementException | StorageError, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, StorageError, R> =>
  Effect.mapError(effect, (cause) => (cause instanceof StorageError ? cause : new StorageError({ operation, cause })))
