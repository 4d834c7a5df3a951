/**
 * Request counters in SQL: on Postgres they live in the database, so the limit holds across every replica
 * (the embedded SQLite store serves one process, whose memory counts exactly without a write per request:
 * its adapter uses the core's memory store instead).
 */
import { SqlClient } from "@effect/sql"
import { RateLimitStore } from "@parley/core/domain"
import { Effect, Layer, Schema } from "effect"
import { DbInt, storage } from "./rows.js"

/**
 * One statement per request: the request is counted in its bucket only when the buckets counted with it
 * leave room (RateLimitStore), decided inside the statement. The buckets before the current one no longer
 * change, and the current bucket's row is re-read under its lock when two requests race for it (Postgres
 * re-checks ON CONFLICT … WHERE on the row as the other committed it; SQLite runs one write at a time), so
 * the limit is exact across replicas. Casts: node-postgres sends parameters untyped.
 */
export const layer = Layer.effect(
  RateLimitStore.RateLimitStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeAccepted = Schema.decodeUnknown(Schema.Array(Schema.Struct({ count: DbInt, older: DbInt })))
    const decodeBuckets = Schema.decodeUnknown(Schema.Array(Schema.Struct({ bucket: DbInt, count: DbInt, last: DbInt })))
    const hit = ({ at, bucket, key, limit, since }: RateLimitStore.RateLimitHit) =>
      Effect.gen(function*() {
        const oldest = sql`CAST(${RateLimitStore.oldestCounted(bucket)} AS BIGINT)`
        const current = sql`CAST(${bucket} AS BIGINT)`
        const now = sql`CAST(${at} AS BIGINT)`
        // RateLimitStore.counts, in SQL: the oldest bucket only while its latest request is inside the window
        // (0: a row written before last_ms existed, counted whole as it was then).
        const older = (alias: string) =>
          sql`(SELECT COALESCE(SUM(${sql(alias)}.count), 0) FROM rate_limit_buckets ${sql(alias)}
               WHERE ${sql(alias)}.key = ${key} AND ${sql(alias)}.bucket >= ${oldest} AND ${sql(alias)}.bucket < ${current}
                 AND (${sql(alias)}.bucket > ${oldest} OR ${sql(alias)}.last_ms = 0
                   OR ${sql(alias)}.last_ms > CAST(${since} AS BIGINT)))`
        const rows = yield* Effect.flatMap(
          sql`INSERT INTO rate_limit_buckets (key, bucket, count, last_ms)
              SELECT CAST(${key} AS TEXT), ${current}, 1, ${now} WHERE ${older("o")} + 1 <= CAST(${limit} AS BIGINT)
              ON CONFLICT (key, bucket) DO UPDATE SET count = rate_limit_buckets.count + 1,
                last_ms = CASE WHEN rate_limit_buckets.last_ms > ${now} THEN rate_limit_buckets.last_ms ELSE ${now} END
                WHERE rate_limit_buckets.count + ${older("p")} + 1 <= CAST(${limit} AS BIGINT)
              RETURNING count, ${older("q")} AS older`,
          decodeAccepted
        )
        const [counted] = rows
        if (counted !== undefined) {
          // A new bucket: the key's buckets that no longer count go (a few rows per key at any time).
          if (counted.count === 1) yield* sql`DELETE FROM rate_limit_buckets WHERE key = ${key} AND bucket < ${oldest}`
          return { accepted: true as const, used: counted.count + counted.older }
        }
        const buckets = yield* Effect.flatMap(
          sql`SELECT bucket, count, last_ms AS last FROM rate_limit_buckets WHERE key = ${key} AND bucket >= ${oldest}
              ORDER BY bucket`,
          decodeBuckets
        )
        // A row from before last_ms counts as if its latest request ended its bucket.
        const bucketMs = (at - since) / RateLimitStore.BUCKETS
        const known = buckets.map((b) => (b.last === 0 ? { ...b, last: (b.bucket + 1) * bucketMs - 1 } : b))
        return { accepted: false as const, buckets: known.filter((b) => RateLimitStore.counts(b, bucket, since)) }
      })
    return RateLimitStore.RateLimitStore.of({ hit: (request) => storage("rateLimits.hit")(hit(request)) })
  })
)
