/**
 * The id of the request being served. The HTTP layer sets it once per request;
 * error encoding reads it so that `error.requestId` always equals the
 * `X-Request-ID` header without every handler having to thread it through.
 */
import { FiberRef } from "effect"

export const CurrentRequestId: FiberRef.FiberRef<string> = FiberRef.unsafeMake("")
