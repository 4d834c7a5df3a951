// GET /messages and /ai-calls in the domain, over the memory ports: filters, keyset pages with cursors bound
// to their list and filters, and the same narrowing as single reads (numbers, bots, the account's view).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ActionStore, ALL_SCOPES, ApiKeys, Crm, Demo, RecordLists } from "../src/internal.js"
import { callerFor, CoreTestLayer, failureOf, SALES, SALES_LINE, sampleText, seedDemo, SUPPORT_LINE } from "./harness.js"

/** `count` actions, oldest first, one minute apart from 2026-03-01 (their `modified` too). */
const seed = (orgId: string, count: number, make: (i: number) => Partial<ActionStore.NewAction>) =>
  Effect.flatMap(ActionStore.ActionStore, (store) =>
    Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => {
      const at = new Date(Date.parse("2026-03-01T00:00:00Z") + i * 60_000).toISOString()
      const { id: _id, ...base } = sampleText
      return Effect.map(store.insertAction({ ...base, orgId, at, modified: at, ...make(i) }), (a) => a.id)
    }))

const keyFor = (orgId: string, numberSids: ReadonlyArray<string>, botIds: ReadonlyArray<string>) =>
  Effect.map(
    Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
      keys.create({ orgId, name: "k", mode: "live", scopes: ALL_SCOPES, numberSids, botIds, expiresAt: null })),
    (created) => created.token
  )

const newestFirst = (ids: ReadonlyArray<string>) => [...ids].sort((a, b) => Number(b) - Number(a))

describe("RecordLists", () => {
  it.effect("walks every record once, newest first, 50 a page; a cursor is bound to its list and filters", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const ids = yield* seed(demo.orgId, 120, (i) => ({ status: i % 2 === 0 ? "Delivered" : "Failed" }))
      yield* seed(demo.orgId, 3, () => ({ kind: "ai_call", type: "Call", botId: "bot_sales", status: "Completed" }))
      const lists = yield* RecordLists.RecordLists
      const caller = yield* callerFor(demo.keys.live)
      const seen: Array<string> = []
      let cursor: string | undefined
      for (let page = 0; page < 5; page++) {
        const result = yield* lists.list(caller, "message", { cursor })
        seen.push(...result.items.map((r) => r.id))
        if (result.nextCursor === null) break
        cursor = result.nextCursor
      }
      expect(seen).toEqual(newestFirst(ids))
      const first = yield* lists.list(caller, "message", {})
      expect(first.items).toHaveLength(50)
      const next = first.nextCursor ?? ""
      expect((yield* failureOf(lists.list(caller, "message", { cursor: next, status: ["Failed"] })))._tag)
        .toBe("InvalidRequest")
      expect((yield* failureOf(lists.list(caller, "ai_call", { cursor: next })))._tag).toBe("InvalidRequest")
      const other = yield* Demo.seedDemo("org_other")
      const otherCaller = yield* callerFor(other.keys.live)
      expect((yield* failureOf(lists.list(otherCaller, "message", { cursor: next })))._tag).toBe("InvalidRequest")
      expect((yield* lists.list(otherCaller, "message", {})).items).toEqual([])
      expect((yield* lists.list(caller, "ai_call", {})).items).toHaveLength(3)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("filters by status, by modified time and by line (sid or phone)", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const ids = yield* seed(demo.orgId, 10, (i) => ({
        status: i < 4 ? "Delivered" : "Queued",
        line: i % 2 === 0 ? SALES_LINE : SUPPORT_LINE
      }))
      const lists = yield* RecordLists.RecordLists
      const caller = yield* callerFor(demo.keys.live)
      const list = (filters: RecordLists.ListFilters) =>
        Effect.map(lists.list(caller, "message", filters), (p) => p.items.map((r) => r.id))
      expect(yield* list({ status: ["Delivered"] })).toEqual(newestFirst(ids.slice(0, 4)))
      expect(yield* list({ status: ["Queued", "Delivered"] })).toHaveLength(10)
      // 00:07 in UTC, written at +01:00: records 7, 8 and 9.
      expect(yield* list({ since: "2026-03-01T01:07:00+01:00" })).toEqual(newestFirst(ids.slice(7)))
      const sales = newestFirst(ids.filter((_, i) => i % 2 === 0))
      expect(yield* list({ number: SALES })).toEqual(sales)
      expect(yield* list({ number: SALES_LINE })).toEqual(sales)
      expect(yield* list({ number: SALES, status: ["Queued"], since: "2026-03-01T00:05:00Z" })).toEqual(
        newestFirst([ids[6]!, ids[8]!])
      )
      expect((yield* failureOf(list({ number: "PN_UNKNOWN" })))._tag).toBe("InvalidRequest")
      expect((yield* failureOf(list({ number: "+12" })))._tag).toBe("InvalidRequest")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("narrows as single reads do: the key's numbers and bots, the account's own actions", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const texts = yield* seed(demo.orgId, 4, (i) => ({ line: i % 2 === 0 ? SALES_LINE : SUPPORT_LINE }))
      const calls = yield* seed(demo.orgId, 4, (i) => ({
        kind: "ai_call",
        type: "Call",
        status: "Completed",
        botId: i % 2 === 0 ? "bot_sales" : "bot_support",
        owner: i < 2 ? { id: "crm_user_owner", name: "Owner" } : null
      }))
      const lists = yield* RecordLists.RecordLists
      const byNumber = yield* callerFor(yield* keyFor(demo.orgId, [SALES], []))
      expect((yield* lists.list(byNumber, "message", {})).items.map((r) => r.id)).toEqual(
        newestFirst([texts[0]!, texts[2]!])
      )
      expect((yield* failureOf(lists.list(byNumber, "message", { number: SUPPORT_LINE })))._tag).toBe("ResourceDenied")
      const byBot = yield* callerFor(yield* keyFor(demo.orgId, [], ["bot_support"]))
      expect((yield* lists.list(byBot, "ai_call", {})).items.map((r) => r.id)).toEqual(
        newestFirst([calls[1]!, calls[3]!])
      )
      expect((yield* lists.list(byBot, "message", {})).items).toHaveLength(4)
      yield* Effect.flatMap(Crm.Crm, (crm) =>
        crm.setConnection(demo.orgId, {
          state: "connected",
          account: { id: "crm_user_owner", name: "Owner", permissions: { ...Crm.FULL_PERMISSIONS, actionsView: "own" } }
        }))
      const own = yield* callerFor(demo.keys.live)
      expect((yield* lists.list(own, "ai_call", {})).items.map((r) => r.id)).toEqual(newestFirst(calls.slice(0, 2)))
      yield* Effect.flatMap(Crm.Crm, (crm) =>
        crm.setConnection(demo.orgId, {
          state: "connected",
          account: { id: "crm_user_owner", name: "Owner", permissions: { ...Crm.FULL_PERMISSIONS, actionsView: "none" } }
        }))
      const none = yield* callerFor(demo.keys.live)
      expect((yield* failureOf(lists.list(none, "message", {})))._tag).toBe("CrmPermissionDenied")
    }).pipe(Effect.provide(CoreTestLayer)))
})
