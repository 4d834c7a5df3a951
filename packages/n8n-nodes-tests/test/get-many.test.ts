/** Message → Get Many and AI Call → Get Many in real workflows against a real server with a store of their own. */
import type { INode } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadPackage, N8nHarness, outputOf, parleyNode } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"

let server: TestServer
let demo: DemoSummary
let harness: N8nHarness

/** Ids in creation order. */
let early: string[] = []
let cancelled: string[] = []
let late: string[] = []
let calls: string[] = []
/** A moment between the early texts (and their cancellations) and the late ones. */
let between: Date

const inTenMinutes = () => new Date(Date.now() + 10 * 60_000).toISOString()
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let keyCount = 0
const create = async (path: string, body: Record<string, unknown>) => {
  const response = await server.fetch(`/api/v1${path}`, {
    method: "POST",
    key: demo.keys.live,
    headers: { "idempotency-key": `get-many-${++keyCount}` },
    body: JSON.stringify({ ...body, scheduledFor: inTenMinutes() })
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
  demo = await server.demo()
  harness = new N8nHarness(await loadPackage(), { baseUrl: server.baseUrl, apiKey: demo.keys.live })

  // 53 scheduled texts from the first number (they stay Queued), three of them cancelled…
  for (let i = 0; i < 53; i++) {
    early.push(await create("/messages", { to: `+1415503${String(i).padStart(4, "0")}`, fromNumberSid: demo.numbers[0]!.sid, body: `Early ${i}` }))
  }
  cancelled = early.slice(0, 3)
  for (const id of cancelled) {
    const response = await server.fetch(`/api/v1/messages/${id}/cancel`, { method: "POST", key: demo.keys.live })
    expect(response.status).toBe(200)
  }
  await pause(50)
  between = new Date()
  await pause(50)
  // …then two from the second number, and two AI calls.
  for (let i = 0; i < 2; i++) {
    late.push(await create("/messages", { to: `+1415504${String(i).padStart(4, "0")}`, fromNumberSid: demo.numbers[1]!.sid, body: `Late ${i}` }))
  }
  const bot = demo.bots.find((candidate) => candidate.active)!
  for (let i = 0; i < 2; i++) {
    calls.push(
      await create("/ai-calls", {
        to: `+1415505${String(i).padStart(4, "0")}`,
        fromNumberSid: demo.numbers[0]!.sid,
        botId: bot.id,
        mode: "follow_script"
      })
    )
  }
})

afterAll(async () => {
  await server?.dispose()
})

const getMany = async (resource: "message" | "aiCall", parameters: INode["parameters"]) => {
  const run = await harness.run({
    nodes: [parleyNode("Get Many", { resource, operation: "getAll", ...parameters })],
    connections: {}
  })
  return { run, ids: outputOf(run, "Get Many").map((item) => String(item.json.id)) }
}

describe("Message → Get Many", () => {
  it("Return All follows nextCursor across more than one page of 50, newest first", async () => {
    const { run, ids } = await getMany("message", { returnAll: true })
    expect(run.data.resultData.error).toBeUndefined()
    expect(ids).toHaveLength(55)
    expect(ids).toEqual([...early, ...late].reverse())
    expect(outputOf(run, "Get Many").every((item) => JSON.stringify(item.pairedItem) === JSON.stringify({ item: 0 }))).toBe(true)
  })

  it("Limit stops within the first page or part-way through the second", async () => {
    expect((await getMany("message", { returnAll: false, limit: 5 })).ids).toEqual([...early, ...late].reverse().slice(0, 5))
    expect((await getMany("message", { returnAll: false, limit: 52 })).ids).toEqual([...early, ...late].reverse().slice(0, 52))
  })

  it("filters by status (one or several)", async () => {
    expect((await getMany("message", { returnAll: true, filters: { status: ["Cancelled"] } })).ids.sort()).toEqual([...cancelled].sort())
    expect((await getMany("message", { returnAll: true, filters: { status: ["Queued", "Cancelled"] } })).ids).toHaveLength(55)
    expect((await getMany("message", { returnAll: true, filters: { status: ["Delivered"] } })).ids).toEqual([])
  })

  it("filters by since: only what was created or changed at or after it", async () => {
    const { ids } = await getMany("message", { returnAll: true, filters: { since: between.toISOString() } })
    expect(ids).toEqual([...late].reverse())
  })

  it("filters by number, as a sid or as the phone number, and combines filters", async () => {
    expect((await getMany("message", { returnAll: true, filters: { number: demo.numbers[1]!.sid } })).ids).toEqual([...late].reverse())
    expect((await getMany("message", { returnAll: true, filters: { number: demo.numbers[1]!.phoneNumber } })).ids).toEqual(
      [...late].reverse()
    )
    const combined = await getMany("message", {
      returnAll: true,
      filters: { number: demo.numbers[0]!.sid, status: ["Cancelled", "Queued"] }
    })
    expect(combined.ids).toEqual([...early].reverse())
  })

  it("a filter Parley rejects is an error naming the field", async () => {
    const run = await harness.run({
      nodes: [parleyNode("Get Many", { resource: "message", operation: "getAll", returnAll: true, filters: { number: "PN_not_ours" } })],
      connections: {}
    })
    expect(run.data.resultData.error?.message).toMatch(/^INVALID_REQUEST: Number: .*PN_not_ours.* \[item 0\]$/)
  })
})

describe("AI Call → Get Many", () => {
  it("lists AI calls only, with status and number filters", async () => {
    expect((await getMany("aiCall", { returnAll: true })).ids).toEqual([...calls].reverse())
    expect((await getMany("aiCall", { returnAll: false, limit: 1 })).ids).toEqual([calls[1]])
    expect((await getMany("aiCall", { returnAll: true, filters: { status: ["Queued"] } })).ids).toEqual([...calls].reverse())
    expect((await getMany("aiCall", { returnAll: true, filters: { status: ["Completed", "No Answer"] } })).ids).toEqual([])
    expect((await getMany("aiCall", { returnAll: true, filters: { number: demo.numbers[1]!.sid } })).ids).toEqual([])
    expect((await getMany("aiCall", { returnAll: true, filters: { since: between.toISOString() } })).ids).toEqual([...calls].reverse())
  })
})
