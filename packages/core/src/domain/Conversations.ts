/**
 * Conversations, as the contract defines them: each page reads 50 CRM
 * messages (SMS and WhatsApp, newest first) visible to the key and to the
 * executing CRM account, and groups them by (sender line, counterpart).
 * A conversation may appear on several pages; unread counts cover the page.
 * Pagination is keyset on the action id, so every page costs the same.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type CrmPermissionDenied, InvalidRequest, NotFound } from "../contract/Errors.js"
import { characterCount, type CrmModule } from "../contract/Primitives.js"
import { type ActionRecord, ConversationSummary, type LinkedRecord } from "../contract/Resources.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { ActionStore, type ConversationEntry } from "../ports/ActionStore.js"
import type { StorageError } from "../ports/StorageError.js"
import { mayRead, toActionRecord } from "./ActionRecords.js"
import type { CallerInfo } from "./Caller.js"
import { CursorSigner } from "./Cursors.js"
import { Directory } from "./Directory.js"
import { visibility } from "./Visibility.js"

export const PAGE_SIZE = 50
const PREVIEW_LENGTH = 160
/** Conversation ids and list cursors kept sealed; a page seals up to 51 tokens, a few microseconds each. */
const SIGNED_TOKENS_KEPT = 4096

const ConversationKey = Schema.Struct({ l: Schema.String, p: Schema.String })
const ListCursor = Schema.Struct({ k: Schema.Literal("list"), b: Schema.String })
const ConversationCursor = Schema.Struct({ k: Schema.Literal("conv"), l: Schema.String, p: Schema.String, b: Schema.String })

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
}

type ReadError = CrmPermissionDenied | InvalidRequest | CrmError | StorageError

export interface ConversationsService {
  readonly list: (caller: CallerInfo, cursor: string | undefined) => Effect.Effect<Page<ConversationSummary>, ReadError>
  readonly messages: (
    caller: CallerInfo,
    conversationId: string,
    cursor: string | undefined
  ) => Effect.Effect<Page<ActionRecord>, ReadError | NotFound>
}

export class Conversations extends Context.Tag("@parley/core/Conversations")<Conversations, ConversationsService>() {}

/** The actions of one conversation on a page, newest first, and what its summary counts as they are added. */
interface Group {
  readonly newest: ConversationEntry
  readonly actions: Array<ConversationEntry>
  unreadCount: number
}

const summarise = (id: string, group: Group, readable: ReadonlyArray<CrmModule>): ConversationSummary => {
  const { actions, newest, unreadCount } = group
  // Almost every action links no records: the map is built only for those that do.
  let linked: Map<string, LinkedRecord> | undefined
  // Named after a record only the account may read; otherwise by the number, as a phone shows a stranger.
  let name: string | undefined
  for (const a of actions) {
    if (name === undefined && a.record !== null && mayRead(readable, a.record.module)) name = a.record.name
    if (a.linkedRecords.length === 0) continue
    linked ??= new Map()
    for (const r of a.linkedRecords) {
      linked.set(`${r.module}/${r.id}`, mayRead(readable, r.module) ? r : { module: r.module, id: r.id, name: null })
    }
  }
  // Built from entries the store has already decoded against its row schema, and the response is encoded
  // through ConversationSummary's schema, which checks every field again (E164, Int, the literals): validating
  // here as well would check each summary twice, and cost more than the page's query.
  return ConversationSummary.make({
    id,
    phone: newest.counterpart,
    name: name ?? newest.counterpart,
    // Cut between characters: a cut inside an emoji's surrogate pair would answer half a character.
    preview: characterCount(newest.body) > PREVIEW_LENGTH
      ? `${Array.from(newest.body).slice(0, PREVIEW_LENGTH - 1).join("")}…`
      : newest.body,
    at: newest.at,
    unread: unreadCount > 0,
    owner: newest.owner,
    direction: newest.direction,
    status: newest.status,
    type: newest.type,
    ...(newest.sentBy === null ? {} : { sentBy: newest.sentBy }),
    linkedRecords: linked === undefined ? [] : [...linked.values()],
    unreadCount,
    line: newest.line
  }, { disableValidation: true })
}

export const layer: Layer.Layer<Conversations, never, ActionStore | Crm | CursorSigner | Directory> = Layer.effect(
  Conversations,
  Effect.gen(function*() {
    const store = yield* ActionStore
    const signer = yield* CursorSigner
    const directory = yield* Directory

    /**
     * A conversation's id is a pure function of (organisation, line, counterpart), a list cursor of
     * (organisation, last id), and clients read the same pages again (an inbox polls its first page): tokens
     * sealed recently are kept, by organisation then by their parts (no key string built per row), and start
     * over once there are more than SIGNED_TOKENS_KEPT (checked once a page, so a page may pass it by 51).
     */
    const conversationIds = new Map<string, Map<string, Map<string, string>>>()
    const listCursors = new Map<string, Map<string, string>>()
    let tokensKept = 0
    const startOverIfFull = () => {
      if (tokensKept <= SIGNED_TOKENS_KEPT) return
      conversationIds.clear()
      listCursors.clear()
      tokensKept = 0
    }
    const conversationId = (orgId: string, line: string, counterpart: string): string => {
      let byLine = conversationIds.get(orgId)
      if (byLine === undefined) conversationIds.set(orgId, byLine = new Map())
      let byCounterpart = byLine.get(line)
      if (byCounterpart === undefined) byLine.set(line, byCounterpart = new Map())
      let id = byCounterpart.get(counterpart)
      if (id === undefined) {
        id = signer.seal(orgId, { l: line, p: counterpart })
        byCounterpart.set(counterpart, id)
        tokensKept++
      }
      return id
    }
    const listCursor = (orgId: string, lastId: string): string => {
      let byId = listCursors.get(orgId)
      if (byId === undefined) listCursors.set(orgId, byId = new Map())
      let cursor = byId.get(lastId)
      if (cursor === undefined) {
        cursor = signer.seal(orgId, { k: "list", b: lastId })
        byId.set(lastId, cursor)
        tokensKept++
      }
      return cursor
    }

    const badCursor = () =>
      new InvalidRequest({ message: "cursor: not a cursor this API issued; pass nextCursor back unchanged." })

    return Conversations.of({
      // Untraced: the page's hot path (a span and a captured stack per call cost more than its grouping).
      list: Effect.fnUntraced(function*(caller, cursor) {
        const { lines, ownerId } = yield* visibility(caller, directory)
        let beforeId: string | null = null
        if (cursor !== undefined) {
          const decoded = signer.open(caller.orgId, cursor, ListCursor)
          if (Option.isNone(decoded)) return yield* badCursor()
          beforeId = decoded.value.b
        }
        const rows = yield* store.queryConversationEntries({
          orgId: caller.orgId,
          kinds: ["message"],
          lines,
          ownerId,
          conversation: null,
          beforeId,
          limit: PAGE_SIZE + 1
        })
        const pageLength = Math.min(rows.length, PAGE_SIZE)
        // Rows come newest first, so the first action of each group is its newest.
        const groups = new Map<string, Map<string, Group>>()
        const ordered: Array<Group> = []
        for (let i = 0; i < pageLength; i++) {
          const action = rows[i] as ConversationEntry
          const unread = action.direction === "Inbound" && action.read === null ? 1 : 0
          let byCounterpart = groups.get(action.line)
          if (byCounterpart === undefined) groups.set(action.line, byCounterpart = new Map())
          const group = byCounterpart.get(action.counterpart)
          if (group === undefined) {
            const created: Group = { newest: action, actions: [action], unreadCount: unread }
            byCounterpart.set(action.counterpart, created)
            ordered.push(created)
          } else {
            group.actions.push(action)
            group.unreadCount += unread
          }
        }
        const readable = caller.account.permissions.modules
        startOverIfFull()
        const items = ordered.map((group) =>
          summarise(conversationId(caller.orgId, group.newest.line, group.newest.counterpart), group, readable)
        )
        const last = rows[pageLength - 1]
        const nextCursor = rows.length > PAGE_SIZE && last !== undefined ? listCursor(caller.orgId, last.id) : null
        return { items, nextCursor }
      }),
      messages: Effect.fn("Conversations.messages")(function*(caller, conversationId, cursor) {
        const { lines, ownerId } = yield* visibility(caller, directory)
        const notFound = () => new NotFound({ message: "No such conversation." })
        const key = signer.open(caller.orgId, conversationId, ConversationKey)
        if (Option.isNone(key)) return yield* notFound()
        const { l: line, p: counterpart } = key.value
        if (lines !== null && !lines.includes(line)) return yield* notFound()
        let beforeId: string | null = null
        if (cursor !== undefined) {
          const decoded = signer.open(caller.orgId, cursor, ConversationCursor)
          if (Option.isNone(decoded) || decoded.value.l !== line || decoded.value.p !== counterpart) {
            return yield* badCursor()
          }
          beforeId = decoded.value.b
        }
        const rows = yield* store.queryActions({
          orgId: caller.orgId,
          kinds: ["message"],
          lines,
          ownerId,
          conversation: { line, counterpart },
          beforeId,
          limit: PAGE_SIZE + 1
        })
        if (rows.length === 0 && cursor === undefined) return yield* notFound()
        const page = rows.slice(0, PAGE_SIZE)
        const last = page[page.length - 1]
        const nextCursor = rows.length > PAGE_SIZE && last !== undefined
          ? signer.seal(caller.orgId, { k: "conv", l: line, p: counterpart, b: last.id })
          : null
        return { items: page.map((action) => toActionRecord(action, caller.account.permissions.modules)), nextCursor }
      })
    })
  })
)
