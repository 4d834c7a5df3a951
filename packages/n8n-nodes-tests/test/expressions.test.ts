/**
 * Parameters whose expressions evaluate to something other than text, as builders write them
 * (`{{ $json.id }}` on a number field, `{{ $json.missing }}`): real workflows through n8n-core
 * against a real Parley server.
 */
import type { INode } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chain, loadPackage, N8nHarness, outputOf, parleyNode } from "./support/n8n.js"
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

const sendParameters = (extra: INode["parameters"] = {}): INode["parameters"] => ({
  resource: "message",
  operation: "send",
  to: "+14155007000",
  fromNumber: { __rl: true, mode: "list", value: demo.numbers[0]!.sid },
  content: "body",
  body: "Hello from n8n",
  ...extra
})

/** The records of one recipient's conversation, as Parley keeps them. */
const conversationOf = async (to: string) => {
  const response = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
  const page = (await response.json()) as { items: Array<{ id: string; phone: string }> }
  const conversation = page.items.find((item) => item.phone === to)
  if (conversation === undefined) return []
  const messages = await server.fetch(`/api/v1/conversations/${conversation.id}`, { key: demo.keys.live })
  return ((await messages.json()) as { items: Array<Record<string, unknown>> }).items
}

describe("an Idempotency Key from an expression", () => {
  it("that evaluates to a number is the key: two sends of one event make one message", async () => {
    const to = "+14155007001"
    const eventId = 700_000 + Math.floor(Math.random() * 100_000)
    const run = await live.run(
      {
        nodes: [parleyNode("Send", sendParameters({ to, options: { idempotencyKey: "={{ $json.eventId }}" } }))],
        connections: {}
      },
      { input: [{ eventId }, { eventId }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const sent = outputOf(run, "Send").map((item) => item.json)
    expect(sent.map((item) => item.idempotencyKey)).toEqual([String(eventId), String(eventId)])
    expect(sent.map((item) => item.replayed)).toEqual([false, true])
    expect(sent[1]!.id).toBe(sent[0]!.id)
    expect(await conversationOf(to)).toHaveLength(1)
  })

  it("that evaluates to a boolean is taken as its text", async () => {
    const run = await live.run(
      {
        nodes: [parleyNode("Send", sendParameters({ to: "+14155007002", options: { idempotencyKey: "={{ $json.flag }}" } }))],
        connections: {}
      },
      { input: [{ flag: true }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    expect(outputOf(run, "Send")[0]!.json.idempotencyKey).toBe("true")
  })

  it("that evaluates to an object is refused with the item named, and nothing is sent", async () => {
    const to = "+14155007003"
    const run = await live.run(
      {
        nodes: [
          parleyNode("Send", sendParameters({ to, options: { idempotencyKey: "={{ $json.event }}" } }), {
            onError: "continueRegularOutput"
          })
        ],
        connections: {}
      },
      { input: [{ event: { id: 1 } }, { event: [1, 2] }] }
    )
    const items = outputOf(run, "Send").map((item) => item.json)
    expect(items[0]!.error).toMatch(/^Idempotency Key must be text, a number or a boolean, but its expression gave an object \[item 0\]$/)
    expect(items[1]!.error).toMatch(/gave a list \[item 1\]$/)
    expect(await conversationOf(to)).toHaveLength(0)
  })
})

describe("text parameters whose expressions evaluate to numbers", () => {
  it("a numeric Record ID links the message to the record (and fills a template from it)", async () => {
    const template = demo.templates.find((candidate) => candidate.name === "Appointment reminder")!
    const run = await live.run(
      {
        nodes: [
          parleyNode(
            "Send",
            sendParameters({
              to: "+14155007010",
              content: "template",
              template: { __rl: true, mode: "id", value: template.id },
              additionalFields: { recordModule: "Leads", recordId: "={{ $json.leadId }}" }
            })
          ),
          parleyNode("Read", { resource: "message", operation: "get", messageId: "={{ $json.id }}" })
        ],
        connections: chain("Send", "Read")
      },
      { input: [{ leadId: 5001 }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const read = outputOf(run, "Read")[0]!.json
    expect(read.linkedRecords).toEqual(expect.arrayContaining([expect.objectContaining({ module: "Leads", id: "5001" })]))
    expect(String(read.body)).toMatch(/^Hi Ada/)
  })

  it("a numeric Record ID links an AI call too", async () => {
    const bot = demo.bots.find((candidate) => candidate.active)!
    const run = await live.run(
      {
        nodes: [
          parleyNode("Call", {
            resource: "aiCall",
            operation: "start",
            to: "+14155007011",
            fromNumber: { __rl: true, mode: "id", value: demo.numbers[0]!.sid },
            bot: { __rl: true, mode: "id", value: bot.id },
            mode: "follow_script",
            additionalFields: { recordModule: "Leads", recordId: "={{ $json.leadId }}" }
          }),
          parleyNode("Read", { resource: "aiCall", operation: "get", aiCallId: "={{ $json.id }}" })
        ],
        connections: chain("Call", "Read")
      },
      { input: [{ leadId: 5002 }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const read = outputOf(run, "Read")[0]!.json
    expect(read.linkedRecords).toEqual(expect.arrayContaining([expect.objectContaining({ module: "Leads", id: "5002" })]))
  })

  it("a numeric Body is sent as its digits", async () => {
    const to = "+14155007012"
    const run = await live.run(
      { nodes: [parleyNode("Send", sendParameters({ to, body: "={{ $json.code }}" }))], connections: {} },
      { input: [{ code: 482913 }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const [message] = await conversationOf(to)
    expect(message?.body).toBe("482913")
  })

  it("a numeric To reaches Parley, whose refusal names the field, instead of crashing the node", async () => {
    const run = await live.run(
      {
        nodes: [parleyNode("Send", sendParameters({ to: "={{ $json.phone }}" }), { onError: "continueRegularOutput" })],
        connections: {}
      },
      { input: [{ phone: 14155550123 }] }
    )
    const failed = outputOf(run, "Send")[0]!.json
    expect(failed.error).not.toMatch(/is not a function/)
    expect(failed).toMatchObject({ code: "INVALID_REQUEST", httpCode: "400" })
    expect(String(failed.error)).toMatch(/^INVALID_REQUEST: To: .*E\.164.*\[item 0\]$/)
  })

  it("a numeric message id reads the message", async () => {
    const created = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `numeric-id-${Date.now()}` },
      body: JSON.stringify({ to: "+14155007013", fromNumberSid: demo.numbers[0]!.sid, body: "Read me" })
    })
    const { id } = (await created.json()) as { id: string }
    const run = await live.run(
      { nodes: [parleyNode("Read", { resource: "message", operation: "get", messageId: "={{ $json.id }}" })], connections: {} },
      { input: [{ id: Number(id) }] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    expect(outputOf(run, "Read")[0]!.json).toMatchObject({ id, body: "Read me" })
  })

  it("a To that is an object is refused by the node, naming the parameter and the item", async () => {
    const run = await live.run(
      { nodes: [parleyNode("Send", sendParameters({ to: "={{ $json.contact }}" }))], connections: {} },
      { input: [{ contact: { phone: "+14155007014" } }] }
    )
    const error = run.data.resultData.error
    expect(error?.name).toBe("NodeOperationError")
    expect(error?.message).toBe("To must be text or a number, but its expression gave an object [item 0]")
  })
})

describe("an id expression that finds nothing", () => {
  it("is refused by the node, naming the parameter, instead of sending `undefined`", async () => {
    for (const [resource, parameter, label] of [
      ["message", "messageId", "Message ID"],
      ["aiCall", "aiCallId", "AI Call ID"]
    ] as const) {
      for (const operation of ["get", "cancel"]) {
        const run = await live.run(
          {
            nodes: [parleyNode("Read", { resource, operation, [parameter]: "={{ $json.missing }}" }, { onError: "continueRegularOutput" })],
            connections: {}
          },
          { input: [{ id: "1" }, { id: "2" }] }
        )
        const items = outputOf(run, "Read").map((item) => item.json)
        expect(items.map((item) => item.error)).toEqual([
          `${label} is empty; if it is an expression, check that the field it reads exists in this item [item 0]`,
          `${label} is empty; if it is an expression, check that the field it reads exists in this item [item 1]`
        ])
        // Refused in the node: Parley was never asked, so there is no Parley code or request id.
        expect(items[0]!.code).toBeUndefined()
      }
    }
  })

  it("as a conversation id is refused the same way", async () => {
    const run = await live.run(
      {
        nodes: [
          parleyNode("Messages", {
            resource: "conversation",
            operation: "getMessages",
            conversation: { __rl: true, mode: "id", value: "={{ $json.conversationId }}" },
            returnAll: true
          })
        ],
        connections: {}
      },
      { input: [{}] }
    )
    expect(run.data.resultData.error?.message).toMatch(/^Conversation is empty; .*\[item 0\]$/)
  })
})
