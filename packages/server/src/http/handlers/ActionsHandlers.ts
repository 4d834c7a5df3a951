/**
 * POST/GET/cancel for /messages and /ai-calls, and their lists. A replayed creation carries
 * `Idempotent-Replayed: true`, as Stripe's does.
 */
import { Actions, IdempotencyKeyRequired, ParleyApi, RecordLists } from "@parley/core/internal"
import { Effect } from "effect"
import * as ApiHandlers from "../ApiHandlers.js"
import { setResponseHeaders } from "../RequestState.js"
import { guarded } from "./guard.js"

const markReplayed = setResponseHeaders({ "idempotent-replayed": "true" })

/** Absent header: the contract's own 400 rather than a schema failure (see IdempotencyHeaders). */
const idempotencyKey = (
  headers: { readonly "idempotency-key"?: string | undefined }
): Effect.Effect<string, IdempotencyKeyRequired> => {
  const key = headers["idempotency-key"]
  return key === undefined
    ? Effect.fail(
      new IdempotencyKeyRequired({
        message: "The Idempotency-Key header is required: send a unique key (at most 128 characters) per new request."
      })
    )
    : Effect.succeed(key)
}

const acknowledge = ({ ack, replayed }: Actions.CreationResult) =>
  replayed ? Effect.as(markReplayed, ack) : Effect.succeed(ack)

export const MessagesHandlers = ApiHandlers.group(ParleyApi, "messages", (handlers) =>
  Effect.gen(function*() {
    const actions = yield* Actions.Actions
    const lists = yield* RecordLists.RecordLists
    return handlers
      .handle("listMessages", ({ urlParams }) =>
        guarded("messages.listMessages", (caller) => lists.list(caller, "message", urlParams)))
      .handle("createMessage", ({ headers, payload }) =>
        guarded("messages.createMessage", (caller) =>
          idempotencyKey(headers).pipe(
            Effect.flatMap((key) => actions.createMessage(caller, payload, key)),
            Effect.flatMap(acknowledge)
          )))
      .handle("getMessage", ({ path }) =>
        guarded("messages.getMessage", (caller) => actions.get(caller, "message", path.id)))
      .handle("cancelMessage", ({ path }) =>
        guarded("messages.cancelMessage", (caller) => actions.cancel(caller, "message", path.id)))
  }))

export const AiCallsHandlers = ApiHandlers.group(ParleyApi, "aiCalls", (handlers) =>
  Effect.gen(function*() {
    const actions = yield* Actions.Actions
    const lists = yield* RecordLists.RecordLists
    return handlers
      .handle("listAiCalls", ({ urlParams }) =>
        guarded("aiCalls.listAiCalls", (caller) => lists.list(caller, "ai_call", urlParams)))
      .handle("createAiCall", ({ headers, payload }) =>
        guarded("aiCalls.createAiCall", (caller) =>
          idempotencyKey(headers).pipe(
            Effect.flatMap((key) => actions.createAiCall(caller, payload, key)),
            Effect.flatMap(acknowledge)
          )))
      .handle("getAiCall", ({ path }) =>
        guarded("aiCalls.getAiCall", (caller) => actions.get(caller, "ai_call", path.id)))
      .handle("cancelAiCall", ({ path }) =>
        guarded("aiCalls.cancelAiCall", (caller) => actions.cancel(caller, "ai_call", path.id)))
  }))
