/** GET /conversations and /conversations/{id}. */
import { Conversations, ParleyApi } from "@parley/core/internal"
import { Effect } from "effect"
import * as ApiHandlers from "../ApiHandlers.js"
import { guarded } from "./guard.js"

export const ConversationsHandlers = ApiHandlers.group(ParleyApi, "conversations", (handlers) =>
  Effect.gen(function*() {
    const conversations = yield* Conversations.Conversations
    return handlers
      .handle("listConversations", ({ urlParams }) =>
        guarded("conversations.listConversations", (caller) => conversations.list(caller, urlParams.cursor)))
      .handle("getConversation", ({ path, urlParams }) =>
        guarded("conversations.getConversation", (caller) => conversations.messages(caller, path.id, urlParams.cursor)))
  }))
