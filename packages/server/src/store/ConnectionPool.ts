/**
 * What an operator needs to see of the store's connections, as a port (the metrics read it): on Postgres the
 * pool's connections in use, the requests waiting for one, and how long each checkout waited
 * (store/postgres/MeteredPool.ts); on SQLite nothing, since every statement runs on the process's one
 * connection and nothing waits for a pool.
 */
import { Context, type Option } from "effect"

export interface PoolGauges {
  /** Connections checked out now. */
  readonly inUse: () => number
  /** Requests waiting for a connection now. */
  readonly waiting: () => number
  /** Has `observe` told how long each later checkout waited, in seconds. */
  readonly observeWaits: (observe: (seconds: number) => void) => void
}

export class ConnectionPool extends Context.Tag("@parley/server/store/ConnectionPool")<
  ConnectionPool,
  Option.Option<PoolGauges>
>() {}
