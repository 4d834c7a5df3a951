/** DirectReads on Postgres: the SqlClient runs each read, its `?` placeholders numbered once per text. */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { DirectReads } from "../DirectReads.js"

const numbered = (sql: string): string => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

export const layer: Layer.Layer<DirectReads, never, SqlClient.SqlClient> = Layer.effect(
  DirectReads,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const numberedText = new Map<string, string>()
    return {
      values: (text, params) => {
        let own = numberedText.get(text)
        if (own === undefined) {
          own = numbered(text)
          numberedText.set(text, own)
        }
        return sql.unsafe(own, params).values
      },
      statement: (statement) => statement.values
    }
  })
)
