/**
 * The store's side of conversation pages, on the store this run tests (SQLite,
 * or Postgres with PARLEY_TEST_STORE=postgres): every page shape (whole
 * organisation, keys restricted to one or several numbers, accounts that see
 * only their own actions, one conversation) returns, page after page, exactly
 * the actions `ActionStore.matchesQuery` selects, newest first; conversation entries
 * are the same actions' fields; and the fast row reader gives what the row
 * schema gives, and gives up where the schema would fail.
 */
import { ActionStore } from "@parley/core/domain"
import { Effect, Either, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readActionValues } from "../src/store/ActionRowReader.js"
import * as SqlActionStore from "../src/store/SqlActionStore.js"
import { storedAt, storedText } from "./support/actions.js"
import { onTestDatabase } from "./support/storeLayer.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"

const ORG = "org_store"
const LINES = ["+14155550100", "+14155550101", "+14155550199"] as const
const COUNTERPARTS = ["+15035550101", "+15035550102", "+15035550103", "+15035550104"] as const
const OWNERS = [{ id: "crm_user_a", name: "A" }, { id: "crm_user_b", name: "B" }, null] as const
const TOTAL = 90

const action = (i: number): ActionStore.NewAction => {
  const inbound = i % 5 === 4
  const at = storedAt(i)
  return storedText(i % 17 === 0 ? "org_other" : ORG, i, {
    kind: i % 11 === 0 ? "ai_call" : "message",
    type: i % 11 === 0 ? "Call" : i % 7 === 0 ? "WhatsApp" : "SMS",
    direction: inbound ? "Inbound" : "Outbound",
    status: inbound ? "Received" : "Delivered",
    // Line 0 carries most of the traffic; line 2 very little.
    line: LINES[i % 9 === 0 ? 2 : i % 3 === 0 ? 1 : 0],
    counterpart: COUNTERPARTS[i % COUNTERPARTS.length] ?? COUNTERPARTS[0],
    fromNumberSid: inbound ? null : "PN1",
    whatsAppContentVariables: i % 13 === 0 ? { "1": "Ada" } : null,
    read: inbound && i % 2 === 0 ? null : at,
    owner: OWNERS[i % OWNERS.length] ?? null,
    record: i % 10 === 0 ? { module: "Leads", id: `lead_${i}`, name: `Lead ${i}` } : null,
    linkedRecords: i % 10 === 0 ? [{ module: "Leads", id: `lead_${i}`, name: `Lead ${i}` }] : [],
    sid: inbound ? `SM${i}` : null,
    mediaUrls: inbound && i % 3 === 0 ? [`https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM${i}/Media/ME${i}`] : [],
    sentBy: inbound ? null : "API key key_1",
    apiKeyId: inbound ? null : "key_1"
  })
}

describe("conversation pages in the store", () => {
  let db: TestDatabase
  let runtime: ManagedRuntime.ManagedRuntime<ActionStore.ActionStore, unknown>
  const stored: Array<ActionStore.Action> = []
  const run = <A, E>(effect: Effect.Effect<A, E, ActionStore.ActionStore>) => runtime.runPromise(effect)

  beforeAll(async () => {
    db = await createTestDatabase()
    runtime = ManagedRuntime.make(onTestDatabase(db, SqlActionStore.layer))
    for (let i = 0; i < TOTAL; i++) stored.push(await run(Effect.flatMap(ActionStore.ActionStore, (store) => store.insertAction(action(i)))))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
    await db?.drop()
  })

  const base: ActionStore.ActionQuery = {
    orgId: ORG,
    kinds: ["message"],
    lines: null,
    ownerId: null,
    conversation: null,
    beforeId: null,
    limit: 7
  }
  const queries: Record<string, ActionStore.ActionQuery> = {
    "the whole organisation": base,
    "a key restricted to one number": { ...base, lines: [LINES[2]] },
    "a key restricted to two numbers": { ...base, lines: [LINES[0], LINES[2]] },
    "a key restricted to three numbers": { ...base, lines: [...LINES] },
    "a key restricted to a number without messages": { ...base, lines: ["+19999999999"] },
    "a key restricted to no number": { ...base, lines: [] },
    "an account that sees only its own": { ...base, ownerId: "crm_user_b" },
    "its own, on two numbers": { ...base, ownerId: "crm_user_a", lines: [LINES[1], LINES[2]] },
    "one conversation": { ...base, conversation: { line: LINES[0], counterpart: COUNTERPARTS[1] } },
    "one conversation, on a key's numbers": {
      ...base,
      lines: [LINES[0], LINES[1]],
      conversation: { line: LINES[0], counterpart: COUNTERPARTS[1] }
    },
    "messages and calls": { ...base, kinds: ["message", "ai_call"] }
  }

  for (const [name, query] of Object.entries(queries)) {
    it(`pages ${name} by keyset, newest first, exactly as matchesQuery selects`, async () => {
      const expected = stored.filter((a) => ActionStore.matchesQuery(a, query)).map((a) => a.id).reverse()
      const seen: Array<string> = []
      let beforeId: string | null = null
      for (let pages = 0; pages < 30; pages++) {
        const q: ActionStore.ActionQuery = { ...query, beforeId }
        const [actions, entries] = await run(
          Effect.flatMap(ActionStore.ActionStore, (store) => Effect.all([store.queryActions(q), store.queryConversationEntries(q)]))
        )
        // Entries are the same actions, field for field.
        expect(entries).toEqual(actions.map((a) => ({
          id: a.id,
          type: a.type,
          direction: a.direction,
          status: a.status,
          line: a.line,
          counterpart: a.counterpart,
          body: a.body,
          read: a.read,
          at: a.at,
          owner: a.owner,
          record: a.record,
          linkedRecords: a.linkedRecords,
          sentBy: a.sentBy
        })))
        // And the actions are what was stored.
        for (const a of actions) expect(a).toEqual(stored.find((s) => s.id === a.id))
        seen.push(...actions.map((a) => a.id))
        const last = actions[actions.length - 1]
        if (actions.length < q.limit || last === undefined) break
        beforeId = last.id
      }
      expect(seen).toEqual(expected)
    })
  }

  it("reads a row the fast reader does not take through the schema, and fails where the schema fails", async () => {
    const [target] = stored.filter((a) => a.orgId === ORG && a.kind === "message").slice(-1)
    if (target === undefined) throw new Error("no stored message")
    // Extra properties in linked records: the schema drops them, and so must the fast reader.
    await db.query(`UPDATE actions SET linked_records = ? WHERE id = ?`, [
      JSON.stringify([{ module: "Leads", id: "lead_x", name: null, extra: true }]),
      Number(target.id)
    ])
    const found = await run(Effect.flatMap(ActionStore.ActionStore, (store) => store.findAction(ORG, target.id)))
    expect(found._tag === "Some" ? found.value.linkedRecords : null).toEqual([{ module: "Leads", id: "lead_x", name: null }])
    // A malformed value is the schema's error (a StorageError), never a value.
    await db.query(`UPDATE actions SET wa_content_variables = ? WHERE id = ?`, [`{"1": 5}`, Number(target.id)])
    const failed = await run(Effect.either(Effect.flatMap(ActionStore.ActionStore, (store) => store.queryActions({ ...base, limit: 1 }))))
    expect(Either.isLeft(failed) ? failed.left._tag : "Right").toBe("StorageError")
  })

  it("the fast reader returns what the row schema decodes, or gives up", () => {
    const columns = Object.keys(SqlActionStore.ActionRow.fields) as ReadonlyArray<keyof typeof SqlActionStore.ActionRow.Type>
    const row: Record<string, unknown> = {
      id: 12, org_id: ORG, kind: "message", type: "SMS", direction: "Outbound", status: "Delivered",
      line: LINES[0], counterpart: COUNTERPARTS[0], from_number_sid: "PN1", body: "Hi",
      media_urls: `["https://example.com/a.jpg","https://example.com/b.png"]`, bot_id: null, mode: null,
      purpose_message: null, template_id: null, wa_content_sid: "HX1", wa_content_variables: `{"1":"Ada","2":"x"}`,
      read_at: null, at: "2026-01-01T00:00:00.000Z", scheduled_for: null, due_at: "1767225600000",
      owner_id: "crm_user_a", owner_name: "A", record_module: "Leads", record_id: "lead_1", record_name: "Lead",
      linked_records: `[{"module":"Leads","id":"lead_1","name":"Lead","more":1}]`, sid: null, audio_file_id: null,
      error_message: null, sent_by: "API key key_1", modified: "2026-01-01T00:00:00.000Z", api_key_id: "key_1",
      crm_id: "5725767000000412345", keyword_reply_to: null
    }
    const values = columns.map((c) => row[c])
    const decoded = Schema.decodeUnknownSync(SqlActionStore.ActionRow)(row)
    expect(readActionValues(columns, [values])).toEqual([decoded])
    for (const [column, bad] of [["status", "Lost"], ["due_at", "12x"], ["linked_records", "{"], ["body", null],
      ["media_urls", "[1]"], ["media_urls", null]] as const) {
      const broken = columns.map((c) => (c === column ? bad : row[c]))
      expect(readActionValues(columns, [broken]), column).toBeUndefined()
    }
  })
})
