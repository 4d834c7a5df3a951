/** The installation's cursor secret, sealed in `settings` and shared by every process on the database. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Cursors } from "@parley/core/domain"
import { Effect, Layer, Option, Schema } from "effect"
import * as SecretBox from "./SecretBox.js"

const CURSOR_SECRET = SecretBox.CURSOR_SECRET_SETTING

/** The installation's cursor secret, created on first start and shared by every process on the database. */
export const layer = Layer.effect(
  Cursors.CursorSigner,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const read = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ value: Schema.String }),
      execute: (name) => sql`SELECT value FROM settings WHERE name = ${name}`
    })
    const box = yield* SecretBox.SecretBox
    yield* sql`INSERT INTO settings (name, value) VALUES (${CURSOR_SECRET}, ${box.seal(Cursors.newSecret())})
               ON CONFLICT (name) DO NOTHING`
    const stored = yield* read(CURSOR_SECRET)
    if (Option.isNone(stored)) return Cursors.make(Cursors.newSecret())
    return Cursors.make(yield* box.open(stored.value.value))
  }).pipe(Effect.orDie)
)
