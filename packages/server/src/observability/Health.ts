/**
 * Health as Kubernetes asks for it, unauthenticated and cheap:
 * - `GET /healthz` (liveness): the process is alive and serving; it touches
 *   nothing else, so a database outage never gets a healthy process restarted.
 * - `GET /readyz` (readiness): the database answers (within READY_TIMEOUT),
 *   every migration this build knows is applied, and the dispatcher and event
 *   delivery loops are running (each finished a round within LOOP_STALE_MS);
 *   503 naming the failing parts otherwise, so a balancer sends no traffic here.
 */
import { HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer, Option } from "effect"
import type { PlainRoute } from "../http/PlainRoutes.js"
import { migrations } from "../store/migrations.js"

/** A loop whose last round ended longer ago than this is taken for stuck (a round waits 15 s at most on a provider). */
export const LOOP_STALE_MS = 120_000
const READY_TIMEOUT = Duration.seconds(2)

export type LoopName = "dispatcher" | "delivery"

/** When each background loop last came round (epoch ms); a loop that never started is absent. */
export class LoopHeartbeats extends Context.Tag("@parley/server/LoopHeartbeats")<LoopHeartbeats, {
  readonly beat: (loop: LoopName) => void
  readonly last: (loop: LoopName) => number | undefined
}>() {
  static readonly layer = Layer.sync(LoopHeartbeats, () => {
    const beats = new Map<LoopName, number>()
    return { beat: (loop) => void beats.set(loop, Date.now()), last: (loop) => beats.get(loop) }
  })
}

/** Marks a loop's round (nothing when the loop runs outside the server, e.g. under a test's own layers). */
export const beat = (loop: LoopName): Effect.Effect<void> =>
  Effect.map(Effect.serviceOption(LoopHeartbeats), (heartbeats) => {
    if (Option.isSome(heartbeats)) heartbeats.value.beat(loop)
  })

/** The newest migration this build carries; the migrator records each by its number. */
const LATEST_MIGRATION = Math.max(...Object.keys(migrations).map((name) => Number(name.split("_")[0])))

export const healthRoutes: Effect.Effect<ReadonlyArray<PlainRoute>, never, SqlClient.SqlClient | LoopHeartbeats> = Effect
  .gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const heartbeats = yield* LoopHeartbeats

    const database = sql`SELECT MAX(migration_id) AS latest FROM effect_sql_migrations`.pipe(
      Effect.map((rows) => {
        const latest = Number(rows[0]?.["latest"])
        return latest >= LATEST_MIGRATION ? null : `migrations: ${latest} of ${LATEST_MIGRATION} applied`
      }),
      Effect.timeoutFail({ duration: READY_TIMEOUT, onTimeout: () => "database: no answer" }),
      Effect.catchAll((error) => Effect.succeed(typeof error === "string" ? error : "database: unavailable"))
    )

    const loop = (name: LoopName, now: number): string | null => {
      const last = heartbeats.last(name)
      if (last === undefined) return `${name}: not started`
      return now - last > LOOP_STALE_MS ? `${name}: no round for ${Math.round((now - last) / 1000)} s` : null
    }

    const readiness = Effect.gen(function*() {
      const now = Date.now()
      const failing = [yield* database, loop("dispatcher", now), loop("delivery", now)].filter((f) => f !== null)
      return failing.length === 0
        ? HttpServerResponse.unsafeJson({ status: "ready" })
        : HttpServerResponse.unsafeJson({ status: "unavailable", failing }, { status: 503 })
    })

    const alive = Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))
    return [
      { method: "GET", path: "/healthz", handler: alive },
      { method: "GET", path: "/readyz", handler: readiness }
    ] satisfies ReadonlyArray<PlainRoute>
  })
