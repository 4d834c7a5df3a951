/**
 * Consent in n8n: a send or call to a number that opted out is Parley's 403 RECIPIENT_OPTED_OUT on the item
 * (the recipient and channel named, advice that says why and not to retry), on the error output like any
 * other refusal; and the Opt-Out resource reads, adds and removes opt-outs. Real workflows through n8n-core
 * against a real Parley server; what the list holds is read back from Parley.
 */
import type { IDataObject, INode, INodeExecutionData } from "n8n-workflow"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TwilioFake } from "../../server/test/support/fakes/TwilioFake.js"
import { chain, loadPackage, N8nHarness, NO_OP, outputOf, parleyNode, testNode } from "./support/n8n.js"
import { type DemoSummary, TestServer } from "./support/server.js"

let server: TestServer
let demo: DemoSummary
let live: N8nHarness

beforeAll(async () => {
  server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_SIM_STEP_MS: "50" } })
  demo = await server.demo()
  live = new N8nHarness(await loadPackage(), { baseUrl: server.baseUrl, apiKey: demo.keys.live })
})

afterAll(async () => {
  await server?.dispose()
})

let recipients = 0
/** A number no other test opts out or writes to. */
const freshNumber = () => `+1415509${String(++recipients).padStart(4, "0")}`

/** Opts a number out through the API, as another system would. */
const optOutThroughApi = async (phone: string, body: IDataObject = {}) => {
  const response = await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(phone)}`, {
    method: "PUT",
    key: demo.keys.live,
    body: JSON.stringify(body)
  })
  expect(response.status).toBe(200)
}

/** Parley's entry for a number, or null when it may be texted. */
const entryOf = async (phone: string) => {
  const response = await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(phone)}`, { key: demo.keys.live })
  if (response.status === 404) return null
  expect(response.status).toBe(200)
  return (await response.json()) as Record<string, unknown>
}

const sendParameters = (extra: INode["parameters"] = {}): INode["parameters"] => ({
  resource: "message",
  operation: "send",
  to: "={{ $json.to }}",
  fromNumber: { __rl: true, mode: "list", value: demo.numbers[0]!.sid },
  content: "body",
  body: "Your appointment is tomorrow at 10",
  ...extra
})

/** Runs NoOp → node with Continue (using error output): the success and error outputs. */
const runToErrorOutput = async (node: INode, input: IDataObject[]) => {
  const run = await live.run(
    { nodes: [testNode("Leads", NO_OP), { ...node, onError: "continueErrorOutput" }], connections: chain("Leads", node.name) },
    { input }
  )
  expect(run.data.resultData.error).toBeUndefined()
  const [task] = run.data.resultData.runData[node.name]!
  return task!.data!.main as [INodeExecutionData[], INodeExecutionData[]]
}

/** Runs one node over the inputs, continuing on fail, and returns its output items' JSON. */
const runEach = async (node: INode, input: IDataObject[] = [{}]) => {
  const run = await live.run({ nodes: [{ ...node, onError: "continueRegularOutput" }], connections: {} }, { input })
  expect(run.data.resultData.error).toBeUndefined()
  return outputOf(run, node.name).map((item) => item.json)
}

const optOutNode = (name: string, operation: string, parameters: INode["parameters"]) =>
  parleyNode(name, { resource: "optOut", operation, ...parameters })

describe("a send to a number that opted out", () => {
  it("Send Message: RECIPIENT_OPTED_OUT on the item, naming the recipient and channel, down the error output", async () => {
    const stopped = freshNumber()
    const other = freshNumber()
    await optOutThroughApi(stopped, { channels: ["SMS"], reason: "Asked by email" })
    const [success, failure] = await runToErrorOutput(parleyNode("Send", sendParameters()), [
      { to: stopped, lead: "a" },
      { to: other, lead: "b" }
    ])
    expect(success.map((item) => [item.pairedItem, item.json.status])).toEqual([[{ item: 1 }, "accepted"]])
    expect(failure).toHaveLength(1)
    const failed = failure[0]!
    expect(failed.pairedItem).toEqual({ item: 0 })
    expect(failed.json).toMatchObject({ to: stopped, lead: "a" })
    expect(failed.json.error).toMatch(
      new RegExp(`^RECIPIENT_OPTED_OUT: To: \\${stopped} opted out of SMS texts on \\S+ through the API .*\\[item 0\\]$`)
    )
    const details = failed.json.details as IDataObject
    expect(details).toMatchObject({ code: "RECIPIENT_OPTED_OUT", httpCode: "403" })
    expect(typeof details.requestId).toBe("string")
    // The advice says what happened and what not to do, not the generic "the key lacks a scope".
    expect(details.description).toMatch(/^The recipient opted out of this channel .*Parley sent nothing\. Do not retry/)
    expect(details.description).toMatch(/Opt-Out → Get/)
    expect(details.description).not.toMatch(/scope/)
  })

  it("Start AI Call: RECIPIENT_OPTED_OUT naming AI calls, and stops the workflow without Continue On Fail", async () => {
    const stopped = freshNumber()
    await server.adminJson(["optouts", "add", "--org", demo.orgId, "--phone", stopped, "--channels", "Call"])
    const call = parleyNode("Call", {
      resource: "aiCall",
      operation: "start",
      to: "={{ $json.to }}",
      fromNumber: { __rl: true, mode: "id", value: demo.numbers[0]!.sid },
      bot: { __rl: true, mode: "id", value: demo.bots.find((bot) => bot.active)!.id },
      mode: "follow_script"
    })
    const [success, failure] = await runToErrorOutput(call, [{ to: stopped }])
    expect(success).toEqual([])
    expect(failure[0]!.json.error).toMatch(
      new RegExp(`^RECIPIENT_OPTED_OUT: To: \\${stopped} opted out of AI calls .*by an administrator with the CLI.*\\[item 0\\]$`)
    )
    expect((failure[0]!.json.details as IDataObject).description).toMatch(/^The recipient opted out of this channel/)

    const stoppedRun = await live.run({ nodes: [call], connections: {} }, { input: [{ to: stopped }] })
    const error = stoppedRun.data.resultData.error
    expect(error?.name).toBe("NodeApiError")
    expect(error?.message).toMatch(/^RECIPIENT_OPTED_OUT: To: .*opted out of AI calls/)
    expect(error?.description).toMatch(/^The recipient opted out of this channel/)
    // Calls only: a text to the same number still goes.
    const [texted] = await runEach(parleyNode("Send", sendParameters()), [{ to: stopped }])
    expect(texted!.status).toBe("accepted")
  })
})

describe("the Opt-Out resource", () => {
  it("Add, Get and Remove in one workflow; Get of a number that may be texted says so; Remove again changes nothing", async () => {
    const phone = freshNumber()
    const [before] = await runEach(optOutNode("Get", "get", { phone: "={{ $json.phone }}" }), [{ phone }])
    expect(before).toEqual({ phone, optedOut: false, channels: [] })

    const run = await live.run(
      {
        nodes: [
          optOutNode("Add", "add", { phone, channels: ["SMS", "WhatsApp"], reason: "Asked by email" }),
          optOutNode("Get", "get", { phone: "={{ $json.phone }}" }),
          optOutNode("Remove", "remove", { phone: "={{ $json.phone }}" }),
          optOutNode("Get Again", "get", { phone: "={{ $json.phone }}" }),
          optOutNode("Remove Again", "remove", { phone: "={{ $json.phone }}" })
        ],
        connections: chain("Add", "Get", "Remove", "Get Again", "Remove Again")
      },
      { input: [{}] }
    )
    expect(run.data.resultData.error).toBeUndefined()
    const added = outputOf(run, "Add")[0]!.json
    expect(added).toMatchObject({ phone, optedOut: true, channels: ["SMS", "WhatsApp"], source: "api", reason: "Asked by email" })
    expect(String(added.cause)).toMatch(/^API key key_/)
    expect(outputOf(run, "Get")[0]!.json).toEqual(added)
    expect(outputOf(run, "Remove")[0]!.json).toEqual({ phone, optedOut: false, channels: [], removed: true })
    expect(outputOf(run, "Get Again")[0]!.json).toEqual({ phone, optedOut: false, channels: [] })
    expect(outputOf(run, "Remove Again")[0]!.json).toEqual({ phone, optedOut: false, channels: [], removed: false })
    expect(await entryOf(phone)).toBeNull()
  })

  it("Add with no channels opts out of every channel, and a send to the number is then refused", async () => {
    const phone = freshNumber()
    const [added] = await runEach(optOutNode("Add", "add", { phone }))
    expect(added).toMatchObject({ phone, optedOut: true, channels: ["SMS", "WhatsApp", "Call"], reason: null })
    const [sent] = await runEach(parleyNode("Send", sendParameters()), [{ to: phone }])
    expect(sent!.code).toBe("RECIPIENT_OPTED_OUT")
    // A test key gets the same answer, so a workflow's error branch can be tried without sending.
    const test = new N8nHarness(live.loader, { baseUrl: server.baseUrl, apiKey: demo.keys.test })
    const simulated = await test.run(
      { nodes: [{ ...parleyNode("Send", sendParameters()), onError: "continueRegularOutput" }], connections: {} },
      { input: [{ to: phone }] }
    )
    expect(outputOf(simulated, "Send")[0]!.json).toMatchObject({ code: "RECIPIENT_OPTED_OUT", httpCode: "403" })
  })

  it("Channels from an expression: a list or comma-separated text; an unknown channel is an error on the item", async () => {
    const [listed, text, unknown] = [freshNumber(), freshNumber(), freshNumber()]
    const items = await runEach(optOutNode("Add", "add", { phone: "={{ $json.phone }}", channels: "={{ $json.channels }}" }), [
      { phone: listed, channels: ["Call"] },
      { phone: text, channels: "SMS, WhatsApp" },
      { phone: unknown, channels: ["SMS", "Fax"] }
    ])
    expect(items[0]).toMatchObject({ phone: listed, channels: ["Call"] })
    expect(items[1]).toMatchObject({ phone: text, channels: ["SMS", "WhatsApp"] })
    expect(items[2]!.error).toBe('Channels has "Fax", not one of SMS, WhatsApp, Call [item 2]')
    expect(await entryOf(unknown)).toBeNull()
  })

  it("an expression that finds nothing is an error on the item, never every channel or no reason", async () => {
    const phone = freshNumber()
    const channels = await runEach(optOutNode("Add", "add", { phone, channels: "={{ $json.channels }}" }), [{}, { channels: [] }])
    expect(channels.map((item) => item.error)).toEqual(
      [0, 1].map((index) => expect.stringMatching(new RegExp(`^Channels is empty: .*opt out of every channel \\[item ${index}\\]$`)))
    )
    const [reason] = await runEach(optOutNode("Add", "add", { phone, reason: "={{ $json.why }}" }))
    expect(reason!.error).toMatch(/^Reason is empty: .*record no reason \[item 0\]$/)
    expect(await entryOf(phone)).toBeNull()
    for (const operation of ["get", "add", "remove"]) {
      const [item] = await runEach(optOutNode("Opt-Out", operation, { phone: "={{ $json.phone }}" }))
      expect(item!.error, operation).toBe(
        "Phone is empty; if it is an expression, check that the field it reads exists in this item [item 0]"
      )
    }
  })

  it("Parley's refusal of the number names the node's Phone field", async () => {
    const [item] = await runEach(optOutNode("Get", "get", { phone: "not-a-number" }))
    expect(item).toMatchObject({ code: "INVALID_REQUEST", httpCode: "400" })
    expect(item!.error).toMatch(/^INVALID_REQUEST: Phone: .*\[item 0\]$/)
  })

  it("Remove of a carrier's opt-out is OPT_OUT_NOT_REMOVABLE on the error output, saying who can lift it", async () => {
    const twilio = await TwilioFake.start({ stepMs: 30 })
    const phone = TwilioFake.magic.unsubscribedTo
    try {
      const set = await server.admin([
        "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
        "--auth-token", twilio.authToken, "--api-base", twilio.url
      ])
      expect(set.code, set.stderr).toBe(0)
      // Twilio refuses the text (21610, unsubscribed) and Parley records the carrier's opt-out.
      const [sent] = await runEach(parleyNode("Send", sendParameters()), [{ to: phone }])
      expect(sent!.status).toBe("accepted")
      const deadline = Date.now() + 30_000
      while ((await entryOf(phone)) === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      const [got] = await runEach(optOutNode("Get", "get", { phone }))
      expect(got).toMatchObject({ phone, optedOut: true, channels: ["SMS"], source: "carrier" })

      const [success, failure] = await runToErrorOutput(optOutNode("Remove", "remove", { phone: "={{ $json.phone }}" }), [{ phone }])
      expect(success).toEqual([])
      expect(failure[0]!.json.error).toMatch(
        new RegExp(`^OPT_OUT_NOT_REMOVABLE: \\${phone} is unsubscribed at the carrier .*START.*\\[item 0\\]$`)
      )
      const details = failure[0]!.json.details as IDataObject
      expect(details).toMatchObject({ code: "OPT_OUT_NOT_REMOVABLE", httpCode: "409" })
      expect(details.description).toMatch(/^The carrier recorded this opt-out .*an API key cannot lift it/)
      expect(details.description).not.toMatch(/already dispatched/)
      expect(await entryOf(phone)).toMatchObject({ source: "carrier" })
    } finally {
      await server.admin(["providers", "clear", "--org", demo.orgId, "--kind", "twilio"])
      await twilio.stop()
    }
  })
})
