/** Parley Trigger's Poll Status (ids, and everything through GET /messages and /ai-calls) through n8n-core's PollContext, and the credential test, against a real server. */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { IDataObject, INode } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadPackage, N8nHarness, PARLEY_TRIGGER } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"

let server: TestServer
let demo: DemoSummary
let harness: N8nHarness

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
  demo = await server.demo()
  harness = new N8nHarness(await loadPackage(), { baseUrl: server.baseUrl, apiKey: demo.keys.live })
})

afterAll(async () => {
  await server?.dispose()
})

const schedule = async (to: string, key: string) => {
  const response = await server.fetch("/api/v1/messages", {
    method: "POST",
    key: demo.keys.live,
    headers: { "idempotency-key": key },
    body: JSON.stringify({
      to,
      fromNumberSid: demo.numbers[0]!.sid,
      body: "Scheduled",
      scheduledFor: new Date(Date.now() + 10 * 60_000).toISOString()
    })
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

const cancel = async (id: string, path = "messages") => {
  const response = await server.fetch(`/api/v1/${path}/${id}/cancel`, { method: "POST", key: demo.keys.live })
  expect(response.status).toBe(200)
}

const scheduleCall = async (to: string, key: string) => {
  const response = await server.fetch("/api/v1/ai-calls", {
    method: "POST",
    key: demo.keys.live,
    headers: { "idempotency-key": key },
    body: JSON.stringify({
      to,
      fromNumberSid: demo.numbers[0]!.sid,
      botId: demo.bots.find((bot) => bot.active)!.id,
      mode: "follow_script",
      scheduledFor: new Date(Date.now() + 10 * 60_000).toISOString()
    })
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

const triggerNode = (parameters: INode["parameters"]): INode => ({
  id: "trigger",
  name: "Parley Trigger",
  type: PARLEY_TRIGGER,
  typeVersion: 1,
  position: [0, 0],
  parameters,
  credentials: { parleyApi: { id: "1", name: "Parley" } }
})

const json = (result: Awaited<ReturnType<N8nHarness["poll"]>>) => (result === null ? null : result[0]!.map((item) => item.json))

describe("Parley Trigger (Poll Status)", () => {
  it("watching ids: the first poll is a baseline, then each change is emitted once", async () => {
    const first = await schedule("+14155005555", "trigger-ids-1")
    const second = await schedule("+14155005556", "trigger-ids-2")
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "ids", messageIds: `${first}, ${second}`, emitOn: "any" })],
      connections: {}
    })

    // Activation: what is watched now is the starting point, not an event.
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()

    await cancel(first)
    const changed = json(await harness.poll(workflow, "Parley Trigger", "trigger"))
    expect(changed).toEqual([expect.objectContaining({ id: first, status: "Cancelled", previousStatus: "Queued", final: true, kind: "message" })])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()

    // The static data stays small: one [id, status] pair per watched record.
    const staticData = workflow.getStaticData("node", workflow.getNode("Parley Trigger")!) as IDataObject
    expect(staticData.records).toEqual([
      [`message:${second}`, "Queued"],
      [`message:${first}`, "Cancelled"]
    ])
  })

  it("watching ids: an unknown id is reported once and does not stop the others", async () => {
    const id = await schedule("+14155005557", "trigger-ids-unknown-1")
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "ids", messageIds: `${id}, 999999`, aiCallIds: "888888", emitOn: "any" })],
      connections: {}
    })
    // The activation poll succeeds and says which ids Parley does not know.
    const activation = json(await harness.poll(workflow, "Parley Trigger", "trigger"))
    expect(activation).toEqual([
      expect.objectContaining({ kind: "message", id: "999999", status: null, error: expect.objectContaining({ code: "NOT_FOUND" }) }),
      expect.objectContaining({ kind: "aiCall", id: "888888", status: null, error: expect.objectContaining({ code: "NOT_FOUND" }) })
    ])
    expect(String((activation![0]!.error as IDataObject).message)).toMatch(/999999/)
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()

    await cancel(id)
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id, status: "Cancelled", previousStatus: "Queued" })
    ])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
  })

  it("final statuses only: the backlog of final records is not emitted on activation", async () => {
    const done = await schedule("+14155005558", "trigger-backlog-1")
    await cancel(done)
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "all", emitOn: "final" })],
      connections: {}
    })
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    // Test step still shows the current state, backlog included.
    const manual = json(await harness.poll(workflow, "Parley Trigger", "manual"))
    expect(manual).toEqual(expect.arrayContaining([expect.objectContaining({ id: done, status: "Cancelled" })]))
  })

  it("final statuses only: emits just the change to a final status", async () => {
    const id = await schedule("+14155006666", "trigger-final-1")
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "ids", messageIds: id, emitOn: "final" })],
      connections: {}
    })
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    await cancel(id)
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id, status: "Cancelled", previousStatus: "Queued" })
    ])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
  })

  it("watching everything the key can see: a cancelled message emits once", async () => {
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "all", emitOn: "selected", statuses: ["Cancelled"] })],
      connections: {}
    })
    await harness.poll(workflow, "Parley Trigger", "trigger") // baseline: whatever is cancelled already
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()

    const id = await schedule("+14155007777", "trigger-all-1")
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull() // Queued is not selected
    await cancel(id)
    const changed = json(await harness.poll(workflow, "Parley Trigger", "trigger"))
    expect(changed).toEqual([expect.objectContaining({ id, status: "Cancelled", to: "+14155007777" })])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
  })

  it("watching everything covers AI calls: a new call is emitted, then its cancellation, once each", async () => {
    const workflow = harness.workflow({ nodes: [triggerNode({ watch: "all", emitOn: "any" })], connections: {} })
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull() // baseline
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()

    const call = await scheduleCall("+14155009991", "trigger-all-call-1")
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id: call, kind: "aiCall", status: "Queued", previousStatus: null, final: false })
    ])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    await cancel(call, "ai-calls")
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id: call, kind: "aiCall", status: "Cancelled", previousStatus: "Queued", final: true })
    ])
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    // The next poll starts from the latest change seen, in Parley's clock.
    const staticData = workflow.getStaticData("node", workflow.getNode("Parley Trigger")!) as IDataObject
    expect(Date.parse(String(staticData.watermark))).toBeGreaterThan(Date.now() - 60_000)
  })

  it("watching everything with Include: Messages leaves AI calls out", async () => {
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "all", emitOn: "any", include: ["message"] })],
      connections: {}
    })
    await harness.poll(workflow, "Parley Trigger", "trigger")
    const call = await scheduleCall("+14155009992", "trigger-all-call-2")
    const text = await schedule("+14155009993", "trigger-all-text-2")
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id: text, kind: "message", status: "Queued", previousStatus: null })
    ])
    expect(call).not.toBe(text)
  })

  it("a workflow activated by the version that scanned conversations takes a new baseline instead of replaying AI calls", async () => {
    const call = await scheduleCall("+14155009994", "trigger-all-call-3")
    const text = await schedule("+14155009995", "trigger-all-text-3")
    // What that version left in the static data: statuses of messages, fingerprints of conversations.
    const workflow = harness.workflow(
      { nodes: [triggerNode({ watch: "all", emitOn: "any" })], connections: {} },
      { "node:Parley Trigger": { records: [[`message:${text}`, "Queued"]], conversations: [["c1", "x", false]], unknown: [] } }
    )
    expect(await harness.poll(workflow, "Parley Trigger", "trigger")).toBeNull()
    const staticData = workflow.getStaticData("node", workflow.getNode("Parley Trigger")!) as IDataObject
    expect(staticData.conversations).toBeUndefined()
    expect(staticData.records).toEqual(expect.arrayContaining([[`aiCall:${call}`, "Queued"]]))
    await cancel(call, "ai-calls")
    expect(json(await harness.poll(workflow, "Parley Trigger", "trigger"))).toEqual([
      expect.objectContaining({ id: call, status: "Cancelled", previousStatus: "Queued" })
    ])
  })

  it("manual mode returns the current state and remembers nothing", async () => {
    const id = await schedule("+14155008888", "trigger-manual-1")
    const workflow = harness.workflow({
      nodes: [triggerNode({ watch: "ids", messageIds: id, emitOn: "final" })],
      connections: {}
    })
    const manual = json(await harness.poll(workflow, "Parley Trigger", "manual"))
    expect(manual).toEqual([expect.objectContaining({ id, status: "Queued" })])
    expect(json(await harness.poll(workflow, "Parley Trigger", "manual"))).toEqual(manual)
    const staticData = workflow.getStaticData("node", workflow.getNode("Parley Trigger")!) as IDataObject
    expect(staticData.records).toBeUndefined()
  })
})

describe("the Parley API credential test", () => {
  it("passes with a good key", async () => {
    expect(await harness.testCredential({ baseUrl: server.baseUrl, apiKey: demo.keys.test })).toEqual({
      status: "OK",
      message: "Connection tested successfully"
    })
    // A trailing /api/v1 in the Base URL is tolerated.
    expect((await harness.testCredential({ baseUrl: `${server.baseUrl}/api/v1/`, apiKey: demo.keys.live })).status).toBe("OK")
  })

  it("tells a wrong key from a wrong URL", async () => {
    const badKey = await harness.testCredential({ baseUrl: server.baseUrl, apiKey: "parley_live_not_a_key" })
    expect(badKey.status).toBe("Error")
    expect(badKey.message).toMatch(/rejected the API key/)
    const badUrl = await harness.testCredential({ baseUrl: `${server.baseUrl}/elsewhere`, apiKey: demo.keys.live })
    expect(badUrl.status).toBe("Error")
    expect(badUrl.message).toMatch(/No Parley API answered at this Base URL/)
  })

  it("an unreachable server: n8n shows the network code, and the credential form says what to check", async () => {
    // A loopback port that was just free: nothing listens there.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const unreachable = await harness.testCredential({ baseUrl: `http://127.0.0.1:${port}`, apiKey: demo.keys.live })
    expect(unreachable).toEqual({ status: "Error", message: "ECONNREFUSED" })
    const credential = harness.loader.getCredential("parleyApi").type
    const notice = credential.properties.find((property) => property.type === "notice")
    expect(notice?.displayName).toMatch(/ECONNREFUSED/)
    expect(notice?.displayName).toMatch(/Parley server is running/)
    expect(notice?.displayName).toMatch(/Docker/)
  })
})
