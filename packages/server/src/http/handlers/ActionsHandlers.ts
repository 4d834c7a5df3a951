/**
 * POST/GET/cancel for /messages and /ai-calls, and their lists. A replayed creation carries
 * `Idempotent-Replayed: true`, as Stripe's does.
 */
import { Actions, IdempotencyKeyRequired, ParleyApi, RecordLists } from "@parley/core/internal"
import { Effect, Option } from "effect"
import { Metrics } from "../../observability/Metrics.js"
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

/** Answers a creation, counting it (parley_actions_created_total) or its replay (parley_idempotent_replays_total). */
const acknowledger = (kind: "message" | "ai_call") =>
  Effect.map(Effect.serviceOption(Metrics), (metrics) => ({ ack, replayed }: Actions.CreationResult) => {
    if (Option.isSome(metrics)) {
      if (replayed) metrics.value.idempotentReplay()
      else metrics.value.actionCreated(kind, ack.test ? "test" : "live")
    }
    return replayed ? Effect.as(markReplayed, ack) : Effect.succeed(ack)
  })

export const MessagesHandlers = ApiHandlers.group(ParleyApi, "messages", (handlers) =>
  Effect.gen(function*() {
    const actions = yield* Actions.Actions
    const lists = yield* RecordLists.RecordLists
    const acknowledge = yield* acknowledger("message")
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
    const acknowledge = yield* acknowledger("ai_call")
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
