/** The unit of work: a database transaction of the store in use (Transactions). */
import { SqlError } from "@effect/sql"
import { StorageError, UnitOfWork } from "@parley/core/domain"
import { Effect, Layer } from "effect"
import { transactions } from "./Transactions.js"

export const layer = Layer.effect(
  UnitOfWork.UnitOfWork,
  Effect.gen(function*() {
    // Every accepted creation is one unit of work, in the store adapter's transaction.
    const withTransaction = yield* transactions
    return UnitOfWork.UnitOfWork.of({
      // Repositories already turn their own SQL failures into StorageError; what is left is BEGIN/COMMIT.
      atomically: (effect) =>
        Effect.mapError(
          withTransaction(effect),
          (error) => error instanceof SqlError.SqlError ? new StorageError({ operation: "transaction", cause: error }) : error
        )
    })
  })
)
