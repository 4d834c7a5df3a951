// toActionRecord builds the contract's record without re-validating it (the dispatcher makes thousands a
// second): what it writes must be exactly what the schema would let through, key order included, even
// when a nested value carries more properties than its type.
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { ActionRecord } from "../src/contract/Resources.js"
import { toActionRecord } from "../src/domain/ActionRecords.js"
import { newId } from "../src/domain/Crypto.js"
import type { Action } from "../src/ports/ActionStore.js"
import { sampleText } from "./harness.js"

const owner = { id: "crm_user_demo", name: "Dana Demo" }
const record = { module: "Leads", id: "5001", name: "Ada Lovelace" } as const

const text: Action = {
  ...sampleText,
  orgId: "org_records",
  status: "Sent",
  scheduledFor: "2026-03-02T09:59:00.000Z",
  dueAt: 0,
  linkedRecords: [{ module: "Leads", id: "5001", name: "Ada Lovelace" }, { module: "Deals", id: "8001", name: null }]
}

/** The record as the validating schema writes it: only its fields, in its order. */
const validated = (made: ActionRecord): string =>
  JSON.stringify(Schema.decodeUnknownSync(ActionRecord)(JSON.parse(JSON.stringify(made))))

describe("toActionRecord", () => {
  it.each([
    ["an outbound text", text],
    ["an inbound text without owner, record or sender", {
      ...text,
      direction: "Inbound",
      status: "Received",
      owner: null,
      record: null,
      linkedRecords: [],
      sentBy: null
    } satisfies Action],
    ["a completed call", { ...text, kind: "ai_call", type: "Call", status: "Completed", botId: "bot_1", audioFileId: "AF1" } satisfies Action]
  ])("%s: the same JSON as the validating schema", (_name, action) => {
    const made = toActionRecord(action)
    expect(made).toBeInstanceOf(ActionRecord)
    expect(JSON.stringify(made)).toBe(validated(made))
  })

  it("nested values carry no property beyond their type", () => {
    const extra = { stored: "not part of the contract" }
    const action: Action = {
      ...text,
      owner: { ...owner, ...extra },
      record: { ...record, ...extra },
      linkedRecords: text.linkedRecords.map((r) => ({ ...r, ...extra }))
    }
    const json = JSON.stringify(toActionRecord(action))
    expect(json).not.toContain("stored")
    expect(json).toBe(JSON.stringify(toActionRecord(text)))
  })
})

describe("newId", () => {
  it("is the prefix, an underscore and 22 base-62 characters, different every time", () => {
    const ids = Array.from({ length: 2_000 }, () => newId("evt"))
    for (const id of ids) expect(id).toMatch(/^evt_[0-9A-Za-z]{22}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("uses every base-62 character about equally often", () => {
    const counts = new Map<string, number>()
    for (let i = 0; i < 20_000; i++) {
      for (const c of newId("x").slice(2)) counts.set(c, (counts.get(c) ?? 0) + 1)
    }
    // 440,000 characters: 7,097 expected each, standard deviation ~83; ±8% is ~7 deviations.
    expect(counts.size).toBe(62)
    for (const n of counts.values()) expect(Math.abs(n / 7_097 - 1)).toBeLessThan(0.08)
  })
})
