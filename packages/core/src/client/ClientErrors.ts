/**
 * The two failures of a Promise-client call that are not an answer of the
 * contract. Every answer the contract describes rejects with its own class
 * (`NotFound`, `RateLimited`, … from the error catalogue), and a request the
 * contract's schemas refuse before it is sent rejects with `InvalidRequest`,
 * as the server would have answered.
 */
import { Data } from "effect"
import type { ApiError } from "../contract/Errors.js"

/** The request got no answer: the server could not be reached, or the connection failed. */
export class ParleyConnectionError extends Data.TaggedError("ParleyConnectionError")<{
  readonly message: string
  readonly cause: unknown
}> {}

/** An answer the contract does not describe (another status, or a body of another shape): a proxy in the way, or a server of another version. */
export class ParleyUnexpectedResponse extends Data.TaggedError("ParleyUnexpectedResponse")<{
  readonly message: string
  readonly status: number
  /** The start of the body as text, for the log. */
  readonly body: string
}> {}

/** Everything a Promise-client call can reject with. */
export type ParleyClientError = ApiError | ParleyConnectionError | ParleyUnexpectedResponse
