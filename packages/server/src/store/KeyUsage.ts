/**
 * When each API key was last used, for the console's Developer access page. An authenticated request only
 * notes the time in memory (a map set: nothing on the request path touches the database); the server
 * writes what it noted every few seconds and when it stops (KeyUsageFlushLive, beside the server). So a
 * key's "last used" may lag its newest request by up to FLUSH_EVERY, and a request in the last seconds
 * before a kill -9 is not recorded: it is a hint for administrators, not an audit log. Replicas each write
 * theirs; the newest time wins.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schedule, Schema } from "effect"

/** How often noted uses are written. */
export const FLUSH_EVERY = "5 seconds"

export interface KeyUsageService {
  /** Notes that the key answered a request now (synchronous, memory only). */
  readonly touch: (keyId: string) => void
  /** Writes what was noted since the last flush. */
  readonly flush: Effect.Effect<void>
  /** The last use of each key that has one (ISO 8601), noted uses not yet written included. */
  readonly lastUsed: (keyIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, string>>
}

export class KeyUsage extends Context.Tag("@parley/server/store/KeyUsage")<KeyUsage, KeyUsageService>() {}

const Row = Schema.Struct({ key_id: Schema.String, last_used_at: Schema.String })

export const layer = Layer.effect(
  KeyUsage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let pending = new Map<string, number>()
    const flush = Effect.suspend(() => {
      if (pending.size === 0) return Effect.void
      const batch = pending
      pending = new Map()
      return Effect.forEach(batch, ([keyId, at]) => {
        const iso = new Date(at).toISOString()
        // ISO 8601 times in UTC compare as text: an older time never replaces a newer one (replicas).
        return sql`INSERT INTO api_key_usage (key_id, last_used_at) VALUES (${keyId}, ${iso})
          ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at
          WHERE excluded.last_used_at > api_key_usage.last_used_at`
      }, { discard: true }).pipe(
        Effect.catchAll((error) =>
          Effect.sync(() => {
            // Not written: noted again unless a newer use was noted meanwhile.
            for (const [keyId, at] of batch) if ((pending.get(keyId) ?? 0) < at) pending.set(keyId, at)
          }).pipe(Effect.zipRight(Effect.logWarning(`key usage not written: ${error._tag}`))))
      )
    })
    return KeyUsage.of({
      touch: (keyId) => {
        pending.set(keyId, Date.now())
      },
      flush,
      lastUsed: (keyIds) =>
        Effect.gen(function*() {
          const found = new Map<string, string>()
          if (keyIds.length === 0) return found
          const rows = yield* sql`SELECT key_id, last_used_at FROM api_key_usage WHERE key_id IN ${sql.in(keyIds)}`.pipe(
            Effect.flatMap(Schema.decodeUnknown(Schema.Array(Row))),
            Effect.orElseSucceed(() => [])
          )
          for (const row of rows) found.set(row.key_id, row.last_used_at)
          for (const keyId of keyIds) {
            const noted = pending.get(keyId)
            if (noted !== undefined) found.set(keyId, new Date(noted).toISOString())
          }
          return found
        })
    })
  })
)

/** Beside the server (`serve`): writes noted uses every FLUSH_EVERY, and once more when the server stops. */
export const KeyUsageFlushLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const usage = yield* KeyUsage
    yield* Effect.addFinalizer(() => usage.flush)
    yield* Effect.forkScoped(Effect.repeat(usage.flush, Schedule.spaced(FLUSH_EVERY)))
  })
)
