/**
 * GET /messages and GET /ai-calls: the records a key may read, newest first,
 * 50 a page, filtered by status, `modified` time and line. The same rule as a
 * single read (`visibility`): a key restricted to numbers or bots, or an
 * account that sees only its own actions, gets exactly the records it could
 * open one by one. Pagination is keyset on the action id with sealed cursors,
 * as for conversations; a cursor carries the filters it was issued for, so
 * changing a filter mid-walk is a 400 rather than a page of another list.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type CrmPermissionDenied, InvalidRequest, ResourceDenied } from "../contract/Errors.js"
import { E164 } from "../contract/Primitives.js"
import type { ActionRecord } from "../contract/Resources.js"
import type { RecordStatus } from "../contract/Statuses.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { ActionStore, type ActionKind } from "../ports/ActionStore.js"
import { Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { toActionRecord } from "./ActionRecords.js"
import type { CallerInfo } from "./Caller.js"
import type { Page } from "./Conversations.js"
import { CursorSigner } from "./Cursors.js"
import { Directory } from "./Directory.js"
import { visibility } from "./Visibility.js"

export const PAGE_SIZE = 50

export interface ListFilters {
  readonly cursor?: string | undefined
  readonly status?: ReadonlyArray<RecordStatus> | undefined
  /** An offset timestamp (the contract has checked its form). */
  readonly since?: string | undefined
  /** A number sid or an E.164 phone number. */
  readonly number?: string | undefined
}

export type ListError = InvalidRequest | ResourceDenied | CrmPermissionDenied | CrmError | StorageError

export interface RecordListsService {
  readonly list: (caller: CallerInfo, kind: ActionKind, filters: ListFilters) => Effect.Effect<Page<ActionRecord>, ListError>
}

export class RecordLists extends Context.Tag("@parley/core/RecordLists")<RecordLists, RecordListsService>() {}

/** `k`: the list; `f`: its filters, canonical; `b`: the last id of the previous page. */
const ListCursor = Schema.Struct({ k: Schema.Literal("message", "ai_call"), f: Schema.String, b: Schema.String })

const isE164 = Schema.is(E164)

export const layer: Layer.Layer<RecordLists, never, ActionStore | Crm | CursorSigner | Directory | Organisations> = Layer.effect(
  RecordLists,
  Effect.gen(function*() {
    const store = yield* ActionStore
    const signer = yield* CursorSigner
    const directory = yield* Directory
    const organisations = yield* Organisations

    /** The line a `number` filter names: a sid of the organisation, or a phone number as given. */
    const lineOf = (caller: CallerInfo, number: string) =>
      Effect.gen(function*() {
        if (number.startsWith("+")) {
          if (!isE164(number)) {
            return yield* new InvalidRequest({ message: "number: must be a number sid or an E.164 phone number." })
          }
          return number
        }
        const found = (yield* organisations.listNumbers(caller.orgId)).find((n) => n.sid === number)
        if (found === undefined) {
          return yield* new InvalidRequest({ message: `number: no sender number ${number} in this organisation.` })
        }
        return found.phoneNumber
      })

    return RecordLists.of({
      list: Effect.fn("RecordLists.list")(function*(caller, kind, filters) {
        const seen = yield* visibility(caller, directory)
        let lines = seen.lines
        if (filters.number !== undefined) {
          const line = yield* lineOf(caller, filters.number)
          if (lines !== null && !lines.includes(line)) {
            return yield* new ResourceDenied({ message: `number: this API key may not read number ${filters.number}.` })
          }
          lines = [line]
        }
        const statuses = filters.status === undefined ? undefined : [...new Set(filters.status)].sort()
        // Stored times are UTC ISO strings, so one form makes the comparison a string comparison.
        const modifiedSince = filters.since === undefined ? undefined : new Date(filters.since).toISOString()
        const filterKey = JSON.stringify([statuses ?? null, modifiedSince ?? null, lines === seen.lines ? null : lines])
        let beforeId: string | null = null
        if (filters.cursor !== undefined) {
          const decoded = signer.open(caller.orgId, filters.cursor, ListCursor)
          if (Option.isNone(decoded) || decoded.value.k !== kind) {
            return yield* new InvalidRequest({
              message: "cursor: not a cursor this API issued for this list; pass nextCursor back unchanged."
            })
          }
          if (decoded.value.f !== filterKey) {
            return yield* new InvalidRequest({
              message: "cursor: issued for other filters; pass the same status, since and number with nextCursor."
            })
          }
          beforeId = decoded.value.b
        }
        const rows = yield* store.queryActions({
          orgId: caller.orgId,
          kinds: [kind],
          lines,
          ownerId: seen.ownerId,
          botIds: seen.bots,
          conversation: null,
          beforeId,
          limit: PAGE_SIZE + 1,
          ...(statuses === undefined ? {} : { statuses }),
          ...(modifiedSince === undefined ? {} : { modifiedSince })
        })
        const page = rows.slice(0, PAGE_SIZE)
        const last = page[page.length - 1]
        const nextCursor = rows.length > PAGE_SIZE && last !== undefined
          ? signer.seal(caller.orgId, { k: kind, f: filterKey, b: last.id })
          : null
        return {
          items: page.map((action) => toActionRecord(action, caller.account.permissions.modules)),
          nextCursor
        }
      })
    })
  })
)
