/**
 * The Postgres connection pool, as @effect/sql-pg would build it, with what
 * an operator needs to see of it: how many connections are checked out, how
 * many requests wait for one, and how long each waited — shown to the
 * server's metrics through the store's ConnectionPool port (`gauges`).
 */
import { SqlError } from "@effect/sql"
import { Duration, Effect, Redacted } from "effect"
import type { PoolGauges } from "../ConnectionPool.js"
import Pg from "pg"

type ConnectCallback = (err: Error | undefined, client: Pg.PoolClient | undefined, done: (release?: unknown) => void) => void

export class MeteredPool extends Pg.Pool {
  /** Told how long each checkout waited, in seconds (set by the server's metrics). */
  onWait: ((seconds: number) => void) | undefined = undefined

  get inUse(): number {
    return this.totalCount - this.idleCount
  }

  override connect(): Promise<Pg.PoolClient>
  override connect(callback: ConnectCallback): void
  override connect(callback?: ConnectCallback): Promise<Pg.PoolClient> | void {
    const started = performance.now()
    const waited = () => this.onWait?.((performance.now() - started) / 1000)
    if (callback === undefined) {
      return super.connect().then((client) => {
        waited()
        return client
      })
    }
    super.connect((err, client, done) => {
      waited()
      callback(err, client, done)
    })
  }
}

/** The pool as the ConnectionPool port shows it. */
export const gauges = (pool: MeteredPool): PoolGauges => ({
  inUse: () => pool.inUse,
  waiting: () => pool.waitingCount,
  observeWaits: (observe) => {
    pool.onWait = observe
  }
})

export interface PoolSettings {
  readonly url: Redacted.Redacted<string>
  readonly maxConnections: number
  readonly connectTimeout: Duration.Duration
  readonly idleTimeout: Duration.Duration
  readonly applicationName: string
}

/** The pool, checked with one query (failing within the connect timeout), ended with its scope. */
export const acquire = (settings: PoolSettings) =>
  Effect.gen(function*() {
    const pool = new MeteredPool({
      connectionString: Redacted.value(settings.url),
      max: settings.maxConnections,
      connectionTimeoutMillis: Duration.toMillis(settings.connectTimeout),
      idleTimeoutMillis: Duration.toMillis(settings.idleTimeout),
      application_name: settings.applicationName
    })
    // A connection dropped while idle is replaced by the pool on the next checkout; nothing to do here.
    pool.on("error", () => undefined)
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: settings.connectTimeout,
          onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        })
      ),
      () => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
    return pool
  })
