/**
 * Port: run several port calls as one atomic unit (a database transaction in
 * the SQL layers). The creation of an action, its idempotency record and its
 * event commit together or not at all.
 */
import { Context, Effect, Layer } from "effect"
import type { StorageError } from "./StorageError.js"

export interface UnitOfWorkService {
  /** Fails with StorageError when the transaction itself cannot begin or commit. */
  readonly atomically: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}

export class UnitOfWork extends Context.Tag("@parley/core/ports/UnitOfWork")<UnitOfWork, UnitOfWorkService>() {}

/** The memory layers change one Ref per call and never fail half-way, so there is nothing to wrap. */
export const layerMemory: Layer.Layer<UnitOfWork> = Layer.succeed(UnitOfWork, { atomically: (effect) => effect })
