/**
 * The one failure every storage port may report: the store could not be
 * reached or answered with an error. The HTTP layer turns it into 503
 * SETUP_UNAVAILABLE; its cause is logged, never sent to the client.
 */
import { Data } from "effect"

export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly cause: unknown
}> {}
