/**
 * An expression that finds nothing must never change what is sent: a field whose expression was given
 * but evaluated to "", null or undefined stops its item with an error naming the field and the item,
 * where a field left unset keeps its meaning (send now, derive the key, no record link). Real workflows
 * through n8n-core against a real Parley server; "nothing sent" is read back from Parley.
 */
import type { IDataObject, INode, INodeExecutionData } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadPackage, N8nHarness, outputOf, parleyNode } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"

let server: TestServer
let demo: DemoSummary
let live: N8nHarness

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
  demo = await server.demo()
  live = new N8nHarness(await loadPackage(), { baseUrl: server.baseUrl, apiKey: demo.keys.live })
})

afterAll(async () => {
  await server?.dispose()
})

let recipients = 0
/** A recipient no other test writes to, so its conversation shows only what this test sent. */
const freshRecipient = () => `+1415508${String(++recipients).padStart(4, "0")}`

const sendParameters = (to: string, extra: INode["parameters"] = {}): INode["parameters"] => ({
  resource: "message",
  operation: "send",
  to,
  fromNumber: { __rl: true, mode: "list", value: demo.numbers[0]!.sid },
  content: "body",
  body: "Your appointment is tomorrow at 10",
  ...extra
})

const startParameters = (to: string, extra: INode["parameters"] = {}): INode["parameters"] => ({
  resource: "aiCall",
  operation: "start",
  to,
  fromNumber: { __rl: true, mode: "id", value: demo.numbers[0]!.sid },
  bot: { __rl: true, mode: "id", value: demo.bots.find((bot) => bot.active)!.id },
  mode: "follow_script",
  ...extra
})

/** What Parley holds for one recipient: texts through its conversation, AI calls through GET /ai-calls. */
const textsTo = async (to: string) => {
  const response = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
  const page = (await response.json()) as { items: Array<{ id: string; phone: string }> }
  const conversation = page.items.find((item) => item.phone === to)
  if (conversation === undefined) return []
  const messages = await server.fetch(`/api/v1/conversations/${conversation.id}`, { key: demo.keys.live })
  return ((await messages.json()) as { items: Array<Record<string, unknown>> }).items
}
const callsTo = async (to: string) => {
  const response = await server.fetch("/api/v1/ai-calls", { key: demo.keys.live })
  return ((await response.json()) as { items: Array<{ to: string }> }).items.filter((call) => call.to === to)
}

/** Runs one node over the inputs, continuing on fail, and returns its output items' JSON. */
const runEach = async (node: INode, input: IDataObject[]) => {
  const run = await live.run({ nodes: [{ ...node, onError: "continueRegularOutput" }], connections: {} }, { input })
  expect(run.data.resultData.error).toBeUndefined()
  return outputOf(run, node.name).map((item) => item.json)
}

/** The three ways an expression finds nothing. */
const NOTHING: IDataObject[] = [{}, { value: null }, { value: "" }]

describe("Scheduled For from an expression that finds nothing", () => {
  it("is an error on each item naming the field, and nothing goes out at once", async () => {
    const to = freshRecipient()
    const items = await runEach(
      parleyNode("Send", sendParameters(to, { additionalFields: { scheduledFor: "={{ $json.value }}" } })),
      NOTHING
    )
    expect(items.map((item) => item.error)).toEqual(
      [0, 1, 2].map((index) => expect.stringMatching(new RegExp(`^Scheduled For is empty: .*\\[item ${index}\\]$`)))
    )
    expect(items.every((item) => item.id === undefined && item.code === undefined)).toBe(true)
    expect(await textsTo(to)).toHaveLength(0)
  })

  it("on an AI call likewise", async () => {
    const to = freshRecipient()
    const items = await runEach(
      parleyNode("Call", startParameters(to, { additionalFields: { scheduledFor: "={{ $json.value }}" } })),
      NOTHING
    )
    expect(items.map((item) => String(item.error))).toEqual(
      [0, 1, 2].map((index) => expect.stringMatching(new RegExp(`^Scheduled For is empty: .*\\[item ${index}\\]$`)))
    )
    expect(await callsTo(to)).toHaveLength(0)
  })

  it("goes to the error output with Continue (using error output)", async () => {
    const to = freshRecipient()
    const run = await live.run(
      {
        nodes: [
          parleyNode("Send", sendParameters(to, { additionalFields: { scheduledFor: "={{ $json.when }}" } }), {
            onError: "continueErrorOutput"
          })
        ],
        connections: {}
      },
      { input: [{ when: new Date(Date.now() + 10 * 60_000).toISOString() }, { when: null }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const [success, failure] = run.data.resultData.runData["Send"]![0]!.data!.main as [INodeExecutionData[], INodeExecutionData[]]
    expect(success.map((item) => [item.pairedItem, item.json.status])).toEqual([[{ item: 0 }, "scheduled"]])
    expect(failure.map((item) => item.pairedItem)).toEqual([{ item: 1 }])
    expect(failure[0]!.json.error).toMatch(/^Scheduled For is empty: .*\[item 1\]$/)
  })

  it("stops the workflow without Continue On Fail", async () => {
    const to = freshRecipient()
    const run = await live.run(
      { nodes: [parleyNode("Send", sendParameters(to, { additionalFields: { scheduledFor: "={{ $json.when }}" } }))], connections: {} },
      { input: [{}] }
    )
    expect(run.data.resultData.error?.message).toMatch(/^Scheduled For is empty: .*\[item 0\]$/)
    expect(await textsTo(to)).toHaveLength(0)
  })

  it("left unset (or added but left blank) still means now", async () => {
    const to = freshRecipient()
    const unset = await runEach(parleyNode("Send", sendParameters(to)), [{}])
    const blank = await runEach(parleyNode("Send", sendParameters(to, { additionalFields: { scheduledFor: "" } })), [{}])
    expect([unset[0]!.status, blank[0]!.status]).toEqual(["accepted", "accepted"])
  })
})

describe("Idempotency Key from an expression that finds nothing", () => {
  it("is an error on each item, never the derived key", async () => {
    const to = freshRecipient()
    const items = await runEach(
      parleyNode("Send", sendParameters(to, { options: { idempotencyKey: "={{ $json.value }}" } })),
      [...NOTHING, { value: "   " }]
    )
    expect(items.map((item) => item.error)).toEqual(
      [0, 1, 2, 3].map((index) => expect.stringMatching(new RegExp(`^Idempotency Key is empty: .*\\[item ${index}\\]$`)))
    )
    expect(items.every((item) => item.idempotencyKey === undefined)).toBe(true)
    expect(await textsTo(to)).toHaveLength(0)
  })

  it("left unset (or blank) is derived from the attempt", async () => {
    const to = freshRecipient()
    const items = await runEach(parleyNode("Send", sendParameters(to, { options: { idempotencyKey: "" } })), [{}])
    expect(items[0]!.idempotencyKey).toMatch(/^n8n:/)
  })
})

describe("Record Module and Record ID from expressions", () => {
  it("a Record Module that is not one of the modules is an error on the item, never Leads", async () => {
    const to = freshRecipient()
    const items = await runEach(
      parleyNode(
        "Send",
        sendParameters(to, { additionalFields: { recordModule: "={{ $json.module }}", recordId: "5001" } })
      ),
      [{ module: "Leeds" }, {}, { module: "Leads" }]
    )
    expect(items[0]!.error).toBe('Record Module is "Leeds", not one of Leads, Contacts, Vendors, Deals [item 0]')
    expect(items[1]!.error).toMatch(/^Record Module is empty: .*\[item 1\]$/)
    expect(items[2]).toMatchObject({ status: "accepted" })
    const [text] = await textsTo(to)
    expect(await textsTo(to)).toHaveLength(1)
    expect(text!.linkedRecords).toEqual(expect.arrayContaining([expect.objectContaining({ module: "Leads", id: "5001" })]))
  })

  it("a Record ID that finds nothing is an error on the item, never an unlinked text or call", async () => {
    const to = freshRecipient()
    const texts = await runEach(
      parleyNode("Send", sendParameters(to, { additionalFields: { recordModule: "Leads", recordId: "={{ $json.value }}" } })),
      NOTHING
    )
    expect(texts.map((item) => item.error)).toEqual(
      [0, 1, 2].map((index) => expect.stringMatching(new RegExp(`^Record ID is empty: .*\\[item ${index}\\]$`)))
    )
    expect(await textsTo(to)).toHaveLength(0)
    const calls = await runEach(
      parleyNode("Call", startParameters(to, { additionalFields: { recordId: "={{ $json.leadId }}" } })),
      [{}]
    )
    expect(calls[0]!.error).toMatch(/^Record ID is empty: .*\[item 0\]$/)
    expect(await callsTo(to)).toHaveLength(0)
  })
})

describe("an empty Body", () => {
  it("is the node's own error, as for the other fields, and never reaches Parley", async () => {
    const to = freshRecipient()
    // A Body left empty in the editor never runs: n8n refuses the workflow for a required parameter.
    await expect(runEach(parleyNode("Send", sendParameters(to, { body: "" })), [{}])).rejects.toThrow(
      /Parameter "Body" is required/
    )
    const blank = await runEach(parleyNode("Send", sendParameters(to, { body: "  \n " })), [{}])
    const expression = await runEach(parleyNode("Send", sendParameters(to, { body: "={{ $json.text }}" })), [{}])
    for (const [item] of [blank, expression]) {
      expect(item!.error).toBe("Body is empty; if it is an expression, check that the field it reads exists in this item [item 0]")
      expect(item!.code).toBeUndefined()
    }
    expect(await textsTo(to)).toHaveLength(0)
  })

  it("keeps the writer's spacing when there is text", async () => {
    const to = freshRecipient()
    await runEach(parleyNode("Send", sendParameters(to, { body: "  Hello\n" })), [{}])
    expect((await textsTo(to))[0]!.body).toBe("  Hello\n")
  })
})

describe("other optional fields from expressions that find nothing", () => {
  it("Purpose Message and WhatsApp Content SID are errors, not left out", async () => {
    const to = freshRecipient()
    const calls = await runEach(parleyNode("Call", startParameters(to, { purposeMessage: "={{ $json.value }}" })), [{}])
    expect(calls[0]!.error).toMatch(/^Purpose Message is empty: .*\[item 0\]$/)
    expect(await callsTo(to)).toHaveLength(0)
    const texts = await runEach(
      parleyNode(
        "Send",
        sendParameters(to, { channel: "WhatsApp", additionalFields: { whatsAppContentSid: "={{ $json.value }}" } })
      ),
      [{}]
    )
    expect(texts[0]!.error).toMatch(/^WhatsApp Content SID is empty: .*\[item 0\]$/)
    expect(await textsTo(to)).toHaveLength(0)
  })

  it("a WhatsApp Content Variable's value is an error on that item; the items that have it are sent", async () => {
    const whatsApp = demo.numbers.find((number) => number.whatsApp)!
    const to = freshRecipient()
    const items = await runEach(
      parleyNode(
        "Send",
        sendParameters(to, {
          fromNumber: { __rl: true, mode: "id", value: whatsApp.sid },
          channel: "WhatsApp",
          additionalFields: {
            whatsAppContentSid: "HX0123456789abcdef0123456789abcdef",
            whatsAppContentVariables: { variable: [{ key: "1", value: "={{ $json.name }}" }] }
          }
        })
      ),
      [{ name: "Ada" }, {}]
    )
    expect(items[0]).toMatchObject({ status: "accepted" })
    expect(items[1]!.error).toMatch(/^WhatsApp Content Variable \{\{1\}\} is empty: .*\[item 1\]$/)
    expect(await textsTo(to)).toHaveLength(1)
  })

  it("Get Many Status and Since filters are errors, never a list without them", async () => {
    for (const filters of [{ status: "={{ $json.statuses }}" }, { since: "={{ $json.lastRun }}" }]) {
      const items = await runEach(
        parleyNode("List", { resource: "aiCall", operation: "getAll", returnAll: true, filters }),
        [{}]
      )
      expect(items).toHaveLength(1)
      expect(items[0]!.error).toMatch(/^(Status|Since) is empty: .*\[item 0\]$/)
    }
  })

  it("a Get Many Number filter is an error, never the list of every number", async () => {
    const items = await runEach(
      parleyNode("List", { resource: "message", operation: "getAll", returnAll: false, limit: 5, filters: { number: "={{ $json.line }}" } }),
      [{}]
    )
    expect(items).toHaveLength(1)
    expect(items[0]!.error).toMatch(/^Number is empty: .*\[item 0\]$/)
  })
})

describe("Parley's refusals name the node's fields", () => {
  it("record.id, fromNumberSid and to become Record ID, From and To", async () => {
    const to = freshRecipient()
    const [unknownRecord] = await runEach(
      parleyNode("Send", sendParameters(to, { additionalFields: { recordModule: "Leads", recordId: "999999" } })),
      [{}]
    )
    expect(unknownRecord!.error).toMatch(/^INVALID_REQUEST: Record ID: no Leads record 999999\. \[item 0\]$/)
    const [unknownNumber] = await runEach(
      parleyNode("Send", sendParameters(to, { fromNumber: { __rl: true, mode: "id", value: "PN_not_ours" } })),
      [{}]
    )
    expect(unknownNumber!.error).toMatch(/^INVALID_REQUEST: From: no sender number PN_not_ours/)
    const [badTo] = await runEach(parleyNode("Send", sendParameters("12345")), [{}])
    expect(badTo!.error).toMatch(/^INVALID_REQUEST: To: .*\[item 0\]$/)
  })
})
