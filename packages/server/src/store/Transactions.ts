/**
 * How the repositories and the dispatcher open a database transaction. The store adapter chosen at start
 * provides it (store/sqlite/, store/postgres/): the SqlClient's own, or on the embedded store the
 * connection's lighter one; to the statements inside, both are the same transaction.
 */
import type { SqlError } from "@effect/sql"
import { Context, Effect } from "effect"

export interface TransactionsService {
  /** Runs the effect in one transaction (its SqlClient statements join it); nested, a savepoint. */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
}

export class Transactions extends Context.Tag("@parley/server/store/Transactions")<Transactions, TransactionsService>() {}

/** The `withTransaction` of the store in use. */
export const transactions: Effect.Effect<TransactionsService["withTransaction"], never, Transactions> = Effect.map(
  Transactions,
  (t) => t.withTransaction
)
