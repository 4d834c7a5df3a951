/** Real workflows through n8n-core's WorkflowExecute against a real Parley server on 127.0.0.1. */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { INode, INodeExecutionData } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chain, loadPackage, LOOP_OVER_ITEMS, N8nHarness, NO_OP, outputOf, parleyNode, testNode } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"

let server: TestServer
let demo: DemoSummary
let live: N8nHarness
let test: N8nHarness

const TO = "+14155001111"
const inTenMinutes = () => new Date(Date.now() + 10 * 60_000).toISOString()

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
  demo = await server.demo()
  const loader = await loadPackage()
  live = new N8nHarness(loader, { baseUrl: server.baseUrl, apiKey: demo.keys.live })
  test = new N8nHarness(loader, { baseUrl: server.baseUrl, apiKey: demo.keys.test })
})

afterAll(async () => {
  await server?.dispose()
})

const sendParameters = (extra: INode["parameters"] = {}): INode["parameters"] => ({
  resource: "message",
  operation: "send",
  to: TO,
  fromNumber: { __rl: true, mode: "list", value: demo.numbers[0]!.sid },
  content: "body",
  body: "Hello from n8n",
  ...extra
})

describe("Parley node in real workflows", () => {
  it("sends a message with a template picked by id, linked to a record", async () => {
    const template = demo.templates[0]!
    const record = demo.records.find((candidate) => candidate.module === "Leads")!
    const run = await live.run({
      nodes: [
        parleyNode(
          "Send",
          sendParameters({
            content: "template",
            template: { __rl: true, mode: "id", value: template.id },
            additionalFields: { recordModule: record.module, recordId: record.id }
          })
        ),
        parleyNode("Read", { resource: "message", operation: "get", messageId: "={{ $json.id }}" })
      ],
      connections: chain("Send", "Read")
    })
    expect(run.data.resultData.error).toBeUndefined()
    const [sent] = outputOf(run, "Send")
    expect(sent!.json).toMatchObject({ status: "accepted", test: false, simulated: false, replayed: false })
    expect(sent!.json.idempotencyKey).toMatch(/^n8n:test-\d+:0:0:[0-9a-f]{32}$/)
    expect(sent!.pairedItem).toEqual({ item: 0 })
    const [read] = outputOf(run, "Read")
    // The dispatcher moves it on (Queued → Sending → Sent → Delivered) while we read.
    expect(read!.json).toMatchObject({ id: sent!.json.id, to: TO, botId: null })
    expect(["Queued", "Sending", "Sent", "Delivered"]).toContain(read!.json.status)
    expect(read!.json.linkedRecords).toEqual(expect.arrayContaining([expect.objectContaining({ id: record.id })]))
    expect(read!.pairedItem).toEqual({ item: 0 })
  })

  it("schedules a message and cancels it", async () => {
    const run = await live.run({
      nodes: [
        parleyNode("Schedule", sendParameters({ additionalFields: { scheduledFor: inTenMinutes() } })),
        parleyNode("Cancel", { resource: "message", operation: "cancel", messageId: "={{ $json.id }}" }),
        parleyNode("Read", { resource: "message", operation: "get", messageId: "={{ $json.id }}" })
      ],
      connections: chain("Schedule", "Cancel", "Read")
    })
    expect(run.data.resultData.error).toBeUndefined()
    const [scheduled] = outputOf(run, "Schedule")
    expect(scheduled!.json.status).toBe("scheduled")
    expect(outputOf(run, "Cancel")[0]!.json).toMatchObject({ id: scheduled!.json.id, status: "cancelled", simulated: false })
    expect(outputOf(run, "Read")[0]!.json).toMatchObject({ id: scheduled!.json.id, status: "Cancelled" })
  })

  it("reads a local Scheduled For time in the workflow's timezone", async () => {
    const local = new Date(Date.now() + 10 * 60_000).toISOString().slice(0, 19) // UTC wall clock, no offset
    const run = await live.run({
      nodes: [
        parleyNode("Schedule", sendParameters({ additionalFields: { scheduledFor: local } })),
        parleyNode("Read", { resource: "message", operation: "get", messageId: "={{ $json.id }}" })
      ],
      connections: chain("Schedule", "Read")
    })
    expect(run.data.resultData.error).toBeUndefined()
    const read = outputOf(run, "Read")[0]!.json
    // The test workflow has no timezone setting, so n8n's default applies; the instant must round-trip.
    expect(typeof read.scheduledFor).toBe("string")
    expect(outputOf(run, "Schedule")[0]!.json.status).toBe("scheduled")
  })

  it("starts an AI call and reads it back", async () => {
    const bot = demo.bots.find((candidate) => candidate.active) ?? demo.bots[0]!
    const run = await live.run({
      nodes: [
        parleyNode("Call", {
          resource: "aiCall",
          operation: "start",
          to: TO,
          fromNumber: { __rl: true, mode: "id", value: demo.numbers[0]!.sid },
          bot: { __rl: true, mode: "list", value: bot.id },
          mode: "deliver_specific_message",
          purposeMessage: "Your appointment is confirmed for tomorrow at 10."
        }),
        parleyNode("Read", { resource: "aiCall", operation: "get", aiCallId: "={{ $json.id }}" })
      ],
      connections: chain("Call", "Read")
    })
    expect(run.data.resultData.error).toBeUndefined()
    const [call] = outputOf(run, "Call")
    expect(call!.json).toMatchObject({ status: "accepted", simulated: false })
    const read = outputOf(run, "Read")[0]!.json
    expect(read).toMatchObject({ id: call!.json.id, botId: bot.id })
    expect(["Queued", "Ringing", "In Progress", "Completed"]).toContain(read.status)
  })

  it("says a test key's results were simulated", async () => {
    const run = await test.run({ nodes: [parleyNode("Send", sendParameters())], connections: {} })
    const [sent] = outputOf(run, "Send")
    expect(sent!.json).toMatchObject({ test: true, simulated: true })
    expect(String(sent!.json.id)).toMatch(/^test_/)
    expect(String(sent!.json.note)).toMatch(/Simulated with a test API key/)
  })

  it("lists numbers, bots and templates as items", async () => {
    const run = await live.run({
      nodes: [
        parleyNode("Numbers", { resource: "number", operation: "getAll" }),
        parleyNode("Bots", { resource: "bot", operation: "getAll" }),
        parleyNode("Templates", { resource: "template", operation: "getAll" })
      ],
      connections: chain("Numbers", "Bots", "Templates")
    })
    expect(run.data.resultData.error).toBeUndefined()
    const numbers = outputOf(run, "Numbers")
    expect(numbers.map((item) => item.json.sid)).toEqual(expect.arrayContaining([demo.numbers[0]!.sid]))
    // Bots runs once per number item; each output item is paired with the item it came from.
    const bots = outputOf(run, "Bots")
    expect(bots.length).toBeGreaterThan(0)
    expect(new Set(bots.map((item) => JSON.stringify(item.pairedItem)))).toEqual(
      new Set(numbers.map((_, index) => JSON.stringify({ item: index })))
    )
    expect(outputOf(run, "Templates").length).toBeGreaterThan(0)
  })

  it("Get Many with Return All follows the cursors across more than 50 messages", async () => {
    const to = "+14155002222"
    for (let i = 0; i < 55; i++) {
      const response = await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `bulk-${i}` },
        body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: `Bulk ${i}` })
      })
      expect(response.status).toBe(202)
    }
    const conversations = await live.run({
      nodes: [parleyNode("Conversations", { resource: "conversation", operation: "getAll", returnAll: true })],
      connections: {}
    })
    const conversation = outputOf(conversations, "Conversations").find((item) => item.json.phone === to)
    expect(conversation).toBeDefined()

    const run = await live.run({
      nodes: [
        parleyNode("All", {
          resource: "conversation",
          operation: "getMessages",
          conversation: { __rl: true, mode: "id", value: String(conversation!.json.id) },
          returnAll: true
        }),
        parleyNode("Some", {
          resource: "conversation",
          operation: "getMessages",
          conversation: { __rl: true, mode: "id", value: String(conversation!.json.id) },
          returnAll: false,
          limit: 7
        })
      ],
      connections: {}
    })
    // Both are start nodes of their own; run them separately.
    const all = outputOf(run, "All")
    expect(all).toHaveLength(55)
    expect(new Set(all.map((item) => item.json.id)).size).toBe(55)
    expect(all.every((item) => item.json.to === to)).toBe(true)

    const limited = await live.run({
      nodes: [
        parleyNode("Some", {
          resource: "conversation",
          operation: "getMessages",
          conversation: { __rl: true, mode: "id", value: String(conversation!.json.id) },
          returnAll: false,
          limit: 7
        })
      ],
      connections: {}
    })
    expect(outputOf(limited, "Some")).toHaveLength(7)
  })

  it("surfaces an API error per item and continues on fail with pairedItem", async () => {
    const input = [{ to: TO }, { to: "not-a-number" }, { to: TO }]
    const run = await live.run(
      {
        nodes: [
          parleyNode("Send", sendParameters({ to: "={{ $json.to }}" }), { onError: "continueRegularOutput" })
        ],
        connections: {}
      },
      { input }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const items = outputOf(run, "Send")
    expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }])
    expect(items[0]!.json.status).toBe("accepted")
    expect(items[2]!.json.status).toBe("accepted")
    expect(items[1]!.json.error).toMatch(/\[item 1\]$/)
    expect(items[1]!.json).toMatchObject({ httpCode: "400" })
    expect(typeof items[1]!.json.code).toBe("string")
    expect(typeof items[1]!.json.requestId).toBe("string")
  })

  it("Continue (using error output) sends failed items down the error output with the input's fields", async () => {
    const input = [{ to: TO, lead: "a" }, { to: "not-a-number", lead: "b" }, { to: TO, lead: "c" }]
    const run = await live.run(
      {
        nodes: [
          testNode("Leads", NO_OP),
          parleyNode("Send", sendParameters({ to: "={{ $json.to }}" }), { onError: "continueErrorOutput" })
        ],
        connections: chain("Leads", "Send")
      },
      { input }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const [task] = run.data.resultData.runData["Send"]!
    const [success, failure] = task!.data!.main as [INodeExecutionData[], INodeExecutionData[]]
    expect(success.map((item) => [item.pairedItem, item.json.status])).toEqual([
      [{ item: 0 }, "accepted"],
      [{ item: 2 }, "accepted"]
    ])
    expect(failure).toHaveLength(1)
    const failed = failure[0]!
    expect(failed.pairedItem).toEqual({ item: 1 })
    // n8n adds the input item's fields on the error branch.
    expect(failed.json).toMatchObject({ to: "not-a-number", lead: "b" })
    expect(failed.json.error).toMatch(/^INVALID_REQUEST: .*\[item 1\]$/)
    expect(failed.json.details).toMatchObject({ httpCode: "400", code: "INVALID_REQUEST" })
    expect(typeof (failed.json.details as { requestId?: unknown }).requestId).toBe("string")
  })

  it("stops the workflow with a NodeApiError naming the item without Continue On Fail", async () => {
    const run = await live.run(
      { nodes: [parleyNode("Send", sendParameters({ to: "={{ $json.to }}" }))], connections: {} },
      { input: [{ to: TO }, { to: TO }, { to: TO }, { to: "nope" }] }
    )
    const error = run.data.resultData.error
    expect(error).toBeDefined()
    expect(error!.name).toBe("NodeApiError")
    expect(error!.message).toMatch(/\[item 3\]$/)
    expect((error as unknown as { httpCode: string }).httpCode).toBe("400")
  })

  it("tells when to retry on 429", async () => {
    const limited = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "2" } })
    try {
      const limitedDemo = await limited.demo()
      const harness = new N8nHarness(await loadPackage(), { baseUrl: limited.baseUrl, apiKey: limitedDemo.keys.test })
      const run = await harness.run(
        {
          nodes: [parleyNode("Numbers", { resource: "number", operation: "getAll" }, { onError: "continueRegularOutput" })],
          connections: {}
        },
        { input: [{}, {}, {}, {}] }
      )
      const failed = outputOf(run, "Numbers").find((item) => item.json.httpCode === "429")
      expect(failed).toBeDefined()
      expect(failed!.json.description).toMatch(/Retry after \d+ seconds/)
      expect(failed!.json.error).toMatch(/\[item \d\]$/)
    } finally {
      await limited.dispose()
    }
  })

  describe("idempotency", () => {
    let proxy: Server
    let proxyUrl: string
    const keys: string[] = []
    let dropNextCreateResponse = false

    beforeAll(async () => {
      // Forwards to Parley; on request, loses the answer of one create after Parley processed it.
      proxy = createServer(async (request, response) => {
        const chunks: Buffer[] = []
        for await (const chunk of request) chunks.push(chunk as Buffer)
        const headers = new Headers()
        for (const [name, value] of Object.entries(request.headers)) {
          if (typeof value === "string" && name !== "host" && name !== "content-length") headers.set(name, value)
        }
        if (request.method === "POST" && request.url === "/api/v1/messages") keys.push(String(request.headers["idempotency-key"]))
        const upstream = await fetch(`${server.baseUrl}${request.url}`, {
          method: request.method ?? "GET",
          headers,
          ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {})
        })
        const body = await upstream.text()
        if (dropNextCreateResponse && request.method === "POST" && request.url === "/api/v1/messages") {
          dropNextCreateResponse = false
          response.writeHead(502, { "content-type": "application/json" })
          response.end(JSON.stringify({ error: { code: "BAD_GATEWAY", message: "upstream answer lost" } }))
          return
        }
        const outHeaders: Record<string, string> = {}
        upstream.headers.forEach((value, name) => {
          if (name !== "content-length" && name !== "transfer-encoding" && name !== "content-encoding") outHeaders[name] = value
        })
        response.writeHead(upstream.status, outHeaders)
        response.end(body)
      })
      await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
      proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
    })

    afterAll(async () => {
      await new Promise<void>((resolve) => proxy.close(() => resolve()))
    })

    const conversationCount = async (to: string) => {
      const response = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
      const page = (await response.json()) as { items: Array<{ id: string; phone: string }> }
      const conversation = page.items.find((item) => item.phone === to)
      if (conversation === undefined) return 0
      const messages = await server.fetch(`/api/v1/conversations/${conversation.id}`, { key: demo.keys.live })
      return ((await messages.json()) as { items: unknown[] }).items.length
    }

    it("Retry On Fail resends the same Idempotency-Key and Parley creates one action", async () => {
      const to = "+14155003333"
      const harness = new N8nHarness(await loadPackage(), { baseUrl: proxyUrl, apiKey: demo.keys.live })
      keys.length = 0
      dropNextCreateResponse = true
      const run = await harness.run({
        nodes: [
          parleyNode("Send", sendParameters({ to }), { retryOnFail: true, maxTries: 3, waitBetweenTries: 10 })
        ],
        connections: {}
      })
      expect(run.data.resultData.error).toBeUndefined()
      expect(keys).toHaveLength(2)
      expect(keys[0]).toBe(keys[1])
      const [sent] = outputOf(run, "Send")
      expect(sent!.json).toMatchObject({ status: "accepted", replayed: true, idempotencyKey: keys[0] })
      expect(await conversationCount(to)).toBe(1)
    })

    const loopWorkflow = (to: string) => ({
      nodes: [testNode("Loop", LOOP_OVER_ITEMS), parleyNode("Send", sendParameters({ to, body: "={{ $json.body }}" }))],
      connections: {
        Loop: { main: [[], [{ node: "Send", type: "main" as const, index: 0 }]] },
        Send: { main: [[{ node: "Loop", type: "main" as const, index: 0 }]] }
      }
    })

    it("a node run once per item by Loop Over Items sends every item (one key per run)", async () => {
      const recipients = ["+14155009001", "+14155009002", "+14155009003"]
      const run = await live.run(
        {
          nodes: [testNode("Loop", LOOP_OVER_ITEMS), parleyNode("Send", sendParameters({ to: "={{ $json.to }}" }))],
          connections: {
            Loop: { main: [[], [{ node: "Send", type: "main", index: 0 }]] },
            Send: { main: [[{ node: "Loop", type: "main", index: 0 }]] }
          }
        },
        { input: recipients.map((to) => ({ to })) }
      )
      expect(run.data.resultData.error).toBeUndefined()
      expect(run.data.resultData.runData["Send"]).toHaveLength(3)
      const sent = outputOf(run, "Send").map((item) => item.json)
      expect(sent.map((item) => [item.status, item.replayed])).toEqual([
        ["accepted", false],
        ["accepted", false],
        ["accepted", false]
      ])
      expect(new Set(sent.map((item) => item.idempotencyKey)).size).toBe(3)
      expect(new Set(sent.map((item) => item.id)).size).toBe(3)
      for (const to of recipients) expect(await conversationCount(to)).toBe(1)
    })

    it("the same payload sent by three runs of a node in one execution is sent three times, not replayed", async () => {
      // What an AI agent does when it calls the node as a tool twice with the same arguments.
      const to = "+14155009010"
      const run = await live.run(loopWorkflow(to), { input: [{ body: "Same" }, { body: "Same" }, { body: "Same" }] })
      expect(run.data.resultData.error).toBeUndefined()
      const sent = outputOf(run, "Send").map((item) => item.json)
      expect(sent.map((item) => item.replayed)).toEqual([false, false, false])
      expect(new Set(sent.map((item) => item.id)).size).toBe(3)
      expect(await conversationCount(to)).toBe(3)
    })

    it("two n8n instances whose execution ids collide both send", async () => {
      // Execution ids restart at 1 on every new n8n and after its database is reset.
      const to = "+14155009020"
      const loader = await loadPackage()
      const credentials = { baseUrl: server.baseUrl, apiKey: demo.keys.live }
      const first = new N8nHarness(loader, credentials, { instanceId: "a".repeat(64) })
      const second = new N8nHarness(loader, credentials, { instanceId: "b".repeat(64) })
      const workflow = { nodes: [parleyNode("Send", sendParameters({ to }))], connections: {} }
      const a = outputOf(await first.run(workflow, { executionId: "1" }), "Send")[0]!.json
      const b = outputOf(await second.run(workflow, { executionId: "1" }), "Send")[0]!.json
      expect(a).toMatchObject({ status: "accepted", replayed: false })
      expect(b).toMatchObject({ status: "accepted", replayed: false })
      expect(b.id).not.toBe(a.id)
      expect(b.idempotencyKey).not.toBe(a.idempotencyKey)
      expect(await conversationCount(to)).toBe(2)
    })

    it("a rerun of the same execution sends the same key; Options can override it", async () => {
      const to = "+14155004444"
      const workflow = { nodes: [parleyNode("Send", sendParameters({ to }))], connections: {} }
      const first = await live.run(workflow, { executionId: "exec-42" })
      const second = await live.run(workflow, { executionId: "exec-42" })
      const a = outputOf(first, "Send")[0]!.json
      const b = outputOf(second, "Send")[0]!.json
      expect(a.idempotencyKey).toMatch(/^n8n:exec-42:0:0:[0-9a-f]{32}$/)
      expect(b).toMatchObject({ id: a.id, idempotencyKey: a.idempotencyKey, replayed: true })
      expect(await conversationCount(to)).toBe(1)

      const custom = await live.run({
        nodes: [parleyNode("Send", sendParameters({ to, options: { idempotencyKey: "crm-lead-77-welcome" } }))],
        connections: {}
      })
      expect(outputOf(custom, "Send")[0]!.json.idempotencyKey).toBe("crm-lead-77-welcome")
      expect(await conversationCount(to)).toBe(2)
    })
  })
})

describe("the From picker", () => {
  const pickerNode = (parameters: INode["parameters"]) => parleyNode("Picker", parameters)
  const sids = async (parameters: INode["parameters"], filter?: string) =>
    (await live.listSearch(pickerNode(parameters), "searchNumbers", filter)).results.map((result) => result.value)
  /** What Parley says each number can do. */
  const numbers = async () => {
    const response = await server.fetch("/api/v1/numbers", { key: demo.keys.live })
    return ((await response.json()) as {
      items: Array<{ sid: string; friendlyName: string; capabilities: { sms?: boolean; voice?: boolean } }>
    }).items
  }

  it("offers only numbers that can place voice calls for Start AI Call", async () => {
    const all = await numbers()
    const voice = all.filter((number) => number.capabilities.voice === true).map((number) => number.sid)
    const noVoice = all.filter((number) => number.capabilities.voice === false).map((number) => number.sid)
    expect(noVoice.length).toBeGreaterThan(0) // the demo's WhatsApp line
    expect(await sids({ resource: "aiCall", operation: "start" })).toEqual(voice)
  })

  it("offers the numbers that can text for Send, and still searches by name", async () => {
    const all = await numbers()
    const sms = all.filter((number) => number.capabilities.sms !== false).map((number) => number.sid)
    expect(sms.length).toBeGreaterThan(0)
    expect(await sids({ resource: "message", operation: "send", channel: "SMS" })).toEqual(sms)
    const first = all[0]!
    expect(await sids({ resource: "message", operation: "send", channel: "SMS" }, first.friendlyName)).toEqual([first.sid])
  })
})
