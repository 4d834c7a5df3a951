/**
 * Parley Events Trigger (instant) against a real server: activation and deactivation through n8n-core's HookContext,
 * real signed deliveries from the server's dispatcher to an n8n-like webhook server that hands them to the trigger's
 * webhook() through WebhookContext, and deliveries that must be refused.
 */
import type { IDataObject, INode, Workflow } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chain, loadPackage, N8nHarness, NO_OP, outputOf, testNode, type WorkflowJson } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { signedHeaders, verifyWithReference } from "./support/standardWebhooks.js"
import { type Delivery, WebhookReceiver } from "./support/webhooks.js"

const EVENTS_TRIGGER = "n8n-nodes-parley.parleyEventsTrigger"
const TRIGGER = "Parley Events Trigger"

let server: TestServer
let demo: DemoSummary
let receiver: WebhookReceiver
let harness: N8nHarness

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_SIM_STEP_MS: "100" } })
  demo = await server.demo()
  receiver = await WebhookReceiver.start()
  harness = new N8nHarness(
    await loadPackage(),
    { baseUrl: server.baseUrl, apiKey: demo.keys.live },
    { webhookBaseUrl: receiver.baseUrl }
  )
})

afterAll(async () => {
  await receiver?.close()
  await server?.dispose()
})

let workflowCount = 0

/** A workflow of the trigger and a No Operation node after it, as the editor saves it (the trigger has a webhookId). */
function eventsWorkflow(events: string[]): { json: WorkflowJson; workflow: Workflow; url: string } {
  const webhookId = `parley-events-${++workflowCount}`
  const trigger: INode = {
    id: "events-trigger",
    name: TRIGGER,
    type: EVENTS_TRIGGER,
    typeVersion: 1,
    position: [0, 0],
    parameters: { events },
    credentials: { parleyApi: { id: "1", name: "Parley" } },
    webhookId
  }
  const json: WorkflowJson = { nodes: [trigger, testNode("No Operation", NO_OP)], connections: chain(TRIGGER, "No Operation") }
  const workflow = harness.workflow(json, {})
  receiver.attach(harness, json, workflow, TRIGGER)
  return { json, workflow, url: `${receiver.baseUrl}/${webhookId}/webhook` }
}

const staticDataOf = (workflow: Workflow) => workflow.getStaticData("node", workflow.getNode(TRIGGER)!) as IDataObject

const api = async (path: string, init: RequestInit = {}) => {
  const response = await server.fetch(`/api/v1${path}`, { key: demo.keys.live, ...init })
  return { status: response.status, body: (await response.json()) as IDataObject }
}

const endpointsAt = async (url: string) =>
  ((await api("/webhook-endpoints")).body.items as IDataObject[]).filter((endpoint) => endpoint.url === url)

let sendCount = 0
const sendText = async (to: string) => {
  const response = await server.fetch("/api/v1/messages", {
    method: "POST",
    key: demo.keys.live,
    headers: { "idempotency-key": `events-trigger-${++sendCount}` },
    body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: "Instant trigger test" })
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

const eventOf = (delivery: Delivery) => JSON.parse(delivery.rawBody.toString("utf8")) as { type: string; data: IDataObject }
const headersOf = (delivery: Delivery): Record<string, string> => ({
  "webhook-id": String(delivery.headers["webhook-id"]),
  "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
  "webhook-signature": String(delivery.headers["webhook-signature"])
})

describe("Parley Events Trigger: activation and deactivation", () => {
  it("activation subscribes the webhook URL to the chosen events; deactivation deletes the endpoint", async () => {
    const { workflow, url } = eventsWorkflow(["message.delivered", "message.sent"])
    await harness.activateWebhook(workflow, TRIGGER)

    const stored = staticDataOf(workflow)
    expect(stored.endpointId).toMatch(/^wh_/)
    expect(stored.secret).toMatch(/^whsec_/)
    const endpoint = await api(`/webhook-endpoints/${String(stored.endpointId)}`)
    expect(endpoint.status).toBe(200)
    expect(endpoint.body).toMatchObject({
      url,
      enabledEvents: ["message.sent", "message.delivered"],
      status: "enabled",
      description: expect.stringContaining(TRIGGER)
    })

    // n8n activates again after a restart: the endpoint is found and kept, not duplicated.
    expect(await harness.webhookMethod(workflow, TRIGGER, "checkExists")).toBe(true)
    await harness.activateWebhook(workflow, TRIGGER)
    expect(await endpointsAt(url)).toHaveLength(1)

    expect(await harness.deactivateWebhook(workflow, TRIGGER)).toBe(true)
    expect((await api(`/webhook-endpoints/${String(stored.endpointId)}`)).status).toBe(404)
    expect(staticDataOf(workflow).endpointId).toBeUndefined()
    expect(staticDataOf(workflow).secret).toBeUndefined()
    expect(await endpointsAt(url)).toHaveLength(0)
    // Deactivating twice (or after the endpoint was removed in Parley) is fine.
    expect(await harness.deactivateWebhook(workflow, TRIGGER)).toBe(true)
  })

  it("changed events, or an endpoint at this URL whose secret the node does not hold, are replaced by one new endpoint", async () => {
    const { json, workflow, url } = eventsWorkflow(["message.delivered"])
    await harness.activateWebhook(workflow, TRIGGER)
    const first = String(staticDataOf(workflow).endpointId)

    // The user picks other events and the workflow is activated again.
    json.nodes[0]!.parameters.events = ["*"]
    const edited = harness.workflow(json, workflow.staticData)
    expect(await harness.webhookMethod(edited, TRIGGER, "checkExists")).toBe(false)
    await harness.activateWebhook(edited, TRIGGER)
    const [replacement] = await endpointsAt(url)
    expect(await endpointsAt(url)).toHaveLength(1)
    expect(replacement).toMatchObject({ enabledEvents: ["*"] })
    expect(replacement!.id).not.toBe(first)
    expect((await api(`/webhook-endpoints/${first}`)).status).toBe(404)

    // The static data is lost (a workflow imported elsewhere): the orphan at this URL is deleted, a new one made.
    const orphan = String(staticDataOf(edited).endpointId)
    const fresh = harness.workflow(json, {})
    await harness.activateWebhook(fresh, TRIGGER)
    expect(await endpointsAt(url)).toHaveLength(1)
    expect((await api(`/webhook-endpoints/${orphan}`)).status).toBe(404)
    expect(await harness.deactivateWebhook(fresh, TRIGGER)).toBe(true)
    expect(await endpointsAt(url)).toHaveLength(0)
  })

  it("activation without events fails and creates nothing", async () => {
    const { workflow, url } = eventsWorkflow([])
    await expect(harness.activateWebhook(workflow, TRIGGER)).rejects.toThrow(/at least one event/)
    expect(await endpointsAt(url)).toHaveLength(0)
  })
})

describe("Parley Events Trigger: deliveries", () => {
  let workflow: Workflow
  let secret: string
  let delivered: Delivery
  let messageId: string

  beforeAll(async () => {
    const made = eventsWorkflow(["message.delivered", "message.failed"])
    workflow = made.workflow
    await harness.activateWebhook(workflow, TRIGGER)
    secret = String(staticDataOf(workflow).secret)
    // A live key's text: the dispatcher's simulator sends and delivers it, and the server posts the signed events.
    messageId = await sendText("+14155101010")
    delivered = await receiver.waitFor((delivery) => delivery.rawBody.includes(`"id":"${messageId}"`))
  })

  afterAll(async () => {
    await harness.deactivateWebhook(workflow, TRIGGER)
  })

  it("a real signed event from the server starts the workflow with the record", async () => {
    expect(eventOf(delivered).type).toBe("message.delivered")
    expect(delivered.status).toBe(200)
    expect(delivered.responseBody).toMatch(/Workflow was started/)
    // The reference implementation agrees the delivery is genuine.
    expect(() => verifyWithReference(secret, delivered.rawBody, headersOf(delivered))).not.toThrow()

    const items = outputOf(delivered.run!, "No Operation").map((item) => item.json)
    expect(items).toEqual([
      expect.objectContaining({
        id: messageId,
        status: "Delivered",
        to: "+14155101010",
        event: "message.delivered",
        eventId: delivered.headers["webhook-id"],
        eventTimestamp: expect.any(String),
        kind: "message",
        final: true
      })
    ])
    // Only the chosen types are subscribed: no message.queued or message.sent was posted for this text.
    const types = receiver.deliveries
      .filter((delivery) => delivery.rawBody.includes(`"id":"${messageId}"`))
      .map((delivery) => eventOf(delivery).type)
    expect(types).toEqual(["message.delivered"])
  })

  it("the same delivery posted again (a retry) is accepted: the signature covers id, timestamp and body", async () => {
    const again = await receiver.post(delivered.path, headersOf(delivered), delivered.rawBody)
    expect(again.status).toBe(200)
    expect(again.run).toBeDefined()
  })

  it("a tampered body is refused with 401 and starts nothing", async () => {
    const tampered = delivered.rawBody.toString("utf8").replace('"status":"Delivered"', '"status":"Failed"')
    expect(tampered).not.toBe(delivered.rawBody.toString("utf8"))
    const refused = await receiver.post(delivered.path, headersOf(delivered), tampered)
    expect(refused.status).toBe(401)
    expect(JSON.parse(refused.responseBody)).toEqual({ error: { code: "INVALID_SIGNATURE", message: expect.stringMatching(/No signature/) } })
    expect(refused.run).toBeUndefined()
  })

  it("a changed webhook-id or timestamp breaks the signature", async () => {
    const otherId = await receiver.post(delivered.path, { ...headersOf(delivered), "webhook-id": "evt_other" }, delivered.rawBody)
    expect(otherId.status).toBe(401)
    const timestamp = Number(delivered.headers["webhook-timestamp"]) + 1
    const otherTime = await receiver.post(
      delivered.path,
      { ...headersOf(delivered), "webhook-timestamp": String(timestamp) },
      delivered.rawBody
    )
    expect(otherTime.status).toBe(401)
    expect(otherTime.run).toBeUndefined()
  })

  it("a signature made with another secret is refused; with the right one among several (rotation) it is accepted", async () => {
    const body = delivered.rawBody.toString("utf8")
    const now = new Date()
    const wrong = signedHeaders("whsec_" + Buffer.from("another secret, 24 bytes!").toString("base64"), "evt_rotation", now, body)
    const refused = await receiver.post(delivered.path, wrong, body)
    expect(refused.status).toBe(401)
    expect(refused.run).toBeUndefined()

    const right = signedHeaders(secret, "evt_rotation", now, body)
    const both = { ...right, "webhook-signature": `${wrong["webhook-signature"]} ${right["webhook-signature"]}` }
    const accepted = await receiver.post(delivered.path, both, body)
    expect(accepted.status).toBe(200)
    expect(outputOf(accepted.run!, "No Operation")[0]!.json).toMatchObject({ id: messageId, eventId: "evt_rotation" })
  })

  it("a stale or future timestamp is refused even when correctly signed", async () => {
    const body = delivered.rawBody.toString("utf8")
    const stale = await receiver.post(delivered.path, signedHeaders(secret, "evt_stale", new Date(Date.now() - 6 * 60_000), body), body)
    expect(stale.status).toBe(401)
    expect(JSON.parse(stale.responseBody).error.message).toMatch(/more than 5 minutes old/)
    expect(stale.run).toBeUndefined()
    const future = await receiver.post(delivered.path, signedHeaders(secret, "evt_future", new Date(Date.now() + 6 * 60_000), body), body)
    expect(future.status).toBe(401)
    expect(JSON.parse(future.responseBody).error.message).toMatch(/in the future/)
    // Within the window (4 minutes old) it is accepted.
    const recent = await receiver.post(delivered.path, signedHeaders(secret, "evt_recent", new Date(Date.now() - 4 * 60_000), body), body)
    expect(recent.status).toBe(200)
  })

  it("missing signature headers are refused", async () => {
    const refused = await receiver.post(delivered.path, {}, delivered.rawBody)
    expect(refused.status).toBe(401)
    expect(refused.run).toBeUndefined()
  })

  it("a genuine event of a type the node did not choose starts nothing", async () => {
    const event = { ...eventOf(delivered), type: "message.sent" }
    const body = JSON.stringify(event)
    const ignored = await receiver.post(delivered.path, signedHeaders(secret, "evt_sent", new Date(), body), body)
    expect(ignored.status).toBe(200)
    expect(ignored.responseBody).toMatch(/Webhook call received/)
    expect(ignored.run).toBeUndefined()
  })
})

describe("Parley Events Trigger: inbound texts and AI calls", () => {
  it("an inbound text and a completed AI call each start the workflow once, with their kind", async () => {
    const { workflow } = eventsWorkflow(["message.received", "ai_call.completed"])
    await harness.activateWebhook(workflow, TRIGGER)
    try {
      // An inbound text, as the carrier webhook stores it.
      const inbound = await server.cli([
        "inbound", "--org", demo.orgId, "--from", "+14155202020", "--to", demo.numbers[0]!.phoneNumber, "--body", "Is my order ready?"
      ])
      expect(inbound.code, inbound.stderr).toBe(0)
      const received = await receiver.waitFor((delivery) => delivery.rawBody.includes("Is my order ready?"))
      expect(eventOf(received).type).toBe("message.received")
      expect(outputOf(received.run!, "No Operation").map((item) => item.json)).toEqual([
        expect.objectContaining({
          event: "message.received",
          kind: "message",
          direction: "Inbound",
          from: "+14155202020",
          body: "Is my order ready?",
          status: "Received",
          final: true
        })
      ])

      // A live AI call: the simulator rings, answers and completes it; only the completion is subscribed.
      const response = await server.fetch("/api/v1/ai-calls", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": "events-trigger-call-1" },
        body: JSON.stringify({
          to: "+14155303030",
          fromNumberSid: demo.numbers[0]!.sid,
          botId: demo.bots.find((bot) => bot.active)!.id,
          mode: "follow_script"
        })
      })
      expect(response.status).toBe(202)
      const callId = ((await response.json()) as { id: string }).id
      const completed = await receiver.waitFor((delivery) => delivery.rawBody.includes(`"id":"${callId}"`))
      expect(outputOf(completed.run!, "No Operation").map((item) => item.json)).toEqual([
        expect.objectContaining({ id: callId, event: "ai_call.completed", kind: "aiCall", status: "Completed", final: true })
      ])
      const types = receiver.deliveries
        .filter((delivery) => delivery.rawBody.includes(`"id":"${callId}"`))
        .map((delivery) => eventOf(delivery).type)
      expect(types).toEqual(["ai_call.completed"])
    } finally {
      await harness.deactivateWebhook(workflow, TRIGGER)
    }
  })
})

describe("Parley Events Trigger: the opt-out list", () => {
  it("a STOP and an API opt-back-in start the workflow with the opt-out entry, kind optOut", async () => {
    const { workflow } = eventsWorkflow(["optout.created", "optout.deleted"])
    await harness.activateWebhook(workflow, TRIGGER)
    try {
      const customer = "+14155404040"
      const stop = await server.cli(["inbound", "--org", demo.orgId, "--from", customer, "--to", demo.numbers[0]!.phoneNumber, "--body", "STOP"])
      expect(stop.code, stop.stderr).toBe(0)
      const created = await receiver.waitFor((delivery) => eventOf(delivery).type === "optout.created" && delivery.rawBody.includes(customer))
      expect(outputOf(created.run!, "No Operation").map((item) => item.json)).toEqual([
        expect.objectContaining({ event: "optout.created", kind: "optOut", phone: customer, source: "keyword", channels: ["SMS", "WhatsApp", "Call"] })
      ])
      const removed = await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(customer)}`, { method: "DELETE", key: demo.keys.live })
      expect(removed.status).toBe(204)
      const deleted = await receiver.waitFor((delivery) => eventOf(delivery).type === "optout.deleted" && delivery.rawBody.includes(customer))
      const [item] = outputOf(deleted.run!, "No Operation").map((entry) => entry.json)
      expect(item).toEqual(expect.objectContaining({ event: "optout.deleted", kind: "optOut", phone: customer, source: "keyword" }))
      // An opt-out entry is no action: it has no status to be final in.
      expect(item).not.toHaveProperty("final")
    } finally {
      await harness.deactivateWebhook(workflow, TRIGGER)
    }
  })
})
