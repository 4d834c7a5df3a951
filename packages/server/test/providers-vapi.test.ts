/**
 * Real AI calls through Vapi (issue 16), end to end without the internet: a
 * live key of an organisation connected (`parley providers set --kind vapi
 * --api-base …`) to a local fake of Vapi's API, written from its
 * documentation. Calls are created with the bot's assistant and the number's
 * Vapi phone number, the mode and purpose as assistant variables; Vapi's
 * server messages (authenticated with the organisation's secret) move them to
 * Ringing, In Progress and Completed with the transcript and recording, or to
 * No Answer, Busy, Failed; unauthenticated, duplicated and reordered messages
 * change nothing they should not; an outage is waited out without calling twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createHmac } from "node:crypto"
import {
  AiCallSuite,
  FINAL,
  PN1,
  VAPI,
  VAPI_ASSISTANT as ASSISTANT,
  VAPI_PHONE,
  VAPI_SECRET as SECRET
} from "./support/aiCallSuite.js"
import { VapiFake } from "./support/fakes/VapiFake.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"

const HEAVY = 180_000

describe("Vapi", () => {
  let vapi: VapiFake
  let server: TestServer
  let demo: DemoSummary
  const suite = new AiCallSuite(VAPI, { recheckMs: 5_000 })
  const { call, eventsOf, idem, read, settle } = suite
  const createsFor = (to: string) =>
    vapi.requests.filter((r) =>
      r.method === "POST" && typeof r.body === "object" && r.body !== null && JSON.stringify(r.body).includes(to)
    )
  /** A record that has Vapi's call id but whose server messages were all refused is still where the 201 left it. */
  const refusedAll = async (to: string, id: string) => {
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await vapi.settled()
    const placed = vapi.calls.find((c) => c.customer.number === to)
    const deliveries = vapi.deliveriesFor(placed?.id ?? "")
    expect(deliveries.length).toBeGreaterThan(0)
    expect(deliveries.every((d) => d.delivery.answered === 401)).toBe(true)
    expect((await read(id)).status).toBe("Queued")
  }

  beforeAll(async () => {
    const started = await suite.start()
    vapi = started.fake
    server = started.server
    demo = started.demo
  }, HEAVY)
  afterAll(suite.dispose)

  it("places the call with the bot's assistant and the number's Vapi id, and completes it with transcript and recording", async () => {
    const to = "+14155550201"
    const id = await call(to)
    const record = await settle(id)
    expect(record.status).toBe("Completed")
    const [created] = createsFor(to)
    expect(created?.authenticated).toBe(true)
    expect(created?.body).toMatchObject({
      assistantId: ASSISTANT,
      phoneNumberId: VAPI_PHONE,
      customer: { number: to },
      assistantOverrides: {
        variableValues: { mode: "deliver_specific_message", purposeMessage: "Confirm tomorrow at 10" },
        metadata: { parleyActionId: id }
      }
    })
    const placed = vapi.calls.find((c) => c.customer.number === to)
    expect(record.sid).toBe(placed?.id)
    expect(record.body).toContain("Confirm tomorrow at 10")
    expect(record.audioFileId).toBe(placed?.recordingUrl)
    expect(await eventsOf(id)).toEqual(["ai_call.queued", "ai_call.started", "ai_call.completed"])
  }, HEAVY)

  it.each([
    [VapiFake.magic.noAnswer, "No Answer"],
    [VapiFake.magic.busy, "Busy"],
    [VapiFake.magic.failsToConnect, "Failed"],
    [VapiFake.magic.voicemail, "No Answer"]
  ])("maps the call to %s onto %s", async (to, status) => {
    const id = await call(to)
    const record = await settle(id)
    expect(record.status).toBe(status)
    expect(record.errorMessage).toBe(vapi.calls.find((c) => c.customer.number === to)?.endedReason)
    expect((await eventsOf(id)).at(-1)).toBe("ai_call.failed")
  }, HEAVY)

  it.each(["none", "wrong"] as const)("refuses server messages with secret %s, changing nothing", async (signature) => {
    vapi.tweakNextCallbacks({ signature })
    const to = signature === "none" ? "+14155550202" : "+14155550203"
    await refusedAll(to, await call(to))
  }, HEAVY)

  it("ignores duplicated and reordered server messages: a completed call stays completed", async () => {
    vapi.tweakNextCallbacks({ duplicate: true, reverse: true })
    const to = "+14155550204"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.status === "Completed")
    await vapi.settled()
    const record = await read(id)
    expect(record.status).toBe("Completed")
    expect(await eventsOf(id)).toEqual(["ai_call.queued", "ai_call.completed"])
  }, HEAVY)

  it("waits out Vapi being down and calls once when it is back", async () => {
    await vapi.down()
    const to = "+14155550205"
    let id = ""
    try {
      id = await call(to)
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect((await read(id)).status).toBe("Queued")
    } finally {
      await vapi.up()
    }
    expect((await settle(id)).status).toBe("Completed")
    expect(vapi.calls.filter((c) => c.customer.number === to)).toHaveLength(1)
  }, HEAVY)

  it("completes a call whose server messages were all lost, by asking Vapi itself", async () => {
    vapi.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550208"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await server.restart("SIGKILL")
    const record = await readUntil(() => read(id), (r) => FINAL.has(r.status ?? ""), 60_000)
    expect(record.status).toBe("Completed")
    expect(record.body).toContain("Confirm tomorrow at 10")
    expect(vapi.calls.filter((c) => c.customer.number === to)).toHaveLength(1)
  }, HEAVY)

  it("reconciles a creation whose answer was lost instead of calling twice", async () => {
    vapi.dropNextAfterAccept()
    vapi.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550206"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    expect(vapi.calls.filter((c) => c.customer.number === to)).toHaveLength(1)
    expect(createsFor(to)).toHaveLength(1)
    expect((await read(id)).sid).toBe(vapi.calls.find((c) => c.customer.number === to)?.id)
  }, HEAVY)

  it("fails a call whose bot has no Vapi assistant id, saying how to add it", async () => {
    const response = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to: "+14155550207", fromNumberSid: PN1, botId: "bot_support", mode: "follow_script" })
    })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }
    const record = await settle(id)
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toContain("--provider-id")
    expect(createsFor("+14155550207")).toHaveLength(0)
  }, HEAVY)
  describe("against Vapi's official API (issue 24)", () => {
    const { connect, eventsUrl: events } = suite

    it.each([
      ["assistant-not-valid", "+14155550211"],
      ["manually-canceled", "+14155550212"],
      ["worker-shutdown", "+14155550213"],
      ["call.forwarding.operator-busy", "+14155550214"]
    ] as const)("an ending of %s is Failed with Vapi's reason, not Completed", async (reason, to) => {
      vapi.endWith(to, reason)
      const id = await call(to)
      const record = await settle(id)
      expect(record.status).toBe("Failed")
      expect(record.errorMessage).toBe(reason)
    }, HEAVY)

    it.each([
      ["sha512", "base64", "sha512=", "+14155550225"],
      ["sha256", "base64", "", "+14155550226"],
      ["sha256", "hex", "sha256=", "+14155550227"],
      ["sha1", "hex", "", "+14155550228"],
      ["sha256", "hex", "sha256:", "+14155550229"],
      ["sha256", "base64", "v1,", "+14155550230"]
    ] as const)("accepts HMAC credentials in %s, %s, prefix %j", async (algorithm, signatureEncoding, signaturePrefix, to) => {
      vapi.setServer(events(), SECRET, "hmac", { algorithm, signatureEncoding, signaturePrefix })
      try {
        const id = await call(to)
        expect((await settle(id)).status).toBe("Completed")
        await vapi.settled()
        const deliveries = vapi.deliveriesFor(vapi.calls.find((c) => c.customer.number === to)?.id ?? "")
        expect(deliveries.every((d) => d.delivery.answered === 200)).toBe(true)
      } finally {
        vapi.setServer(events(), SECRET)
      }
    }, HEAVY)

    it("accepts HMAC and Bearer credentials with the header names and payload format set for the organisation", async () => {
      await connect(
        "--signature-header", "x-vapi-signature", "--timestamp-header", "x-vapi-timestamp",
        "--payload-format", "{timestamp}:{body}", "--credential-header", "x-api-token"
      )
      // The server reads an organisation's verification settings at most once a second (CallbackGate.KEY_CACHE_MS).
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      const answered = (to: string) =>
        vapi.deliveriesFor(vapi.calls.find((c) => c.customer.number === to)?.id ?? "").map((d) => d.delivery.answered)
      try {
        vapi.setServer(events(), SECRET, "hmac", {
          signatureHeader: "x-vapi-signature",
          timestampHeader: "x-vapi-timestamp",
          payloadFormat: "{timestamp}:{body}"
        })
        expect((await settle(await call("+14155550216"))).status).toBe("Completed")
        vapi.setServer(events(), SECRET, "bearer", { bearerHeader: "x-api-token" })
        expect((await settle(await call("+14155550217"))).status).toBe("Completed")
        await vapi.settled()
        // Completed by the server messages themselves, not by Parley asking Vapi later.
        expect([...answered("+14155550216"), ...answered("+14155550217")].every((status) => status === 200)).toBe(true)
      } finally {
        vapi.setServer(events(), SECRET)
        await connect()
        // The settings just restored apply once the cached ones expire (CallbackGate.KEY_CACHE_MS): the
        // tests below sign with the default headers.
        await new Promise((resolve) => setTimeout(resolve, 1_100))
      }
    }, HEAVY)

    it("refuses an HMAC-signed message whose timestamp is older than 5 minutes", async () => {
      vapi.setServer(events(), SECRET, "hmac", { timestampOffsetMs: -6 * 60_000 })
      try {
        const to = "+14155550218"
        await refusedAll(to, await call(to))
      } finally {
        vapi.setServer(events(), SECRET)
      }
    }, HEAVY)

    it("finds the call by Vapi's id when the server message carries no Parley metadata", async () => {
      vapi.messagesWithoutMetadata = true
      try {
        const to = "+14155550219"
        const id = await call(to)
        const record = await settle(id)
        expect(record.status).toBe("Completed")
        expect(record.body).toContain("Confirm tomorrow at 10")
        await vapi.settled()
        // Completed by the end-of-call report itself, not by Parley asking Vapi later.
        const report = vapi.deliveriesFor(vapi.calls.find((c) => c.customer.number === to)?.id ?? "")
          .find(({ json }) => JSON.stringify(json).includes("end-of-call-report"))
        expect(report?.delivery.answered).toBe(200)
      } finally {
        vapi.messagesWithoutMetadata = false
      }
    }, HEAVY)

    it("follows server messages that arrive before Vapi's answer to the create", async () => {
      vapi.tweakNextCallbacks({ beforeAnswer: true })
      const to = "+14155550220"
      const id = await call(to)
      const record = await settle(id)
      expect(record.status).toBe("Completed")
      expect(record.sid).toBe(vapi.calls.find((c) => c.customer.number === to)?.id)
      expect(createsFor(to)).toHaveLength(1)
    }, HEAVY)
  })

  describe("forged server messages (issue 22)", () => {
    /** A server message authenticated with the organisation's secret, as an HMAC credential signs it. */
    const post = (message: Record<string, unknown>, orgId = demo.orgId, secret = SECRET, at = Date.now()) => {
      const body = JSON.stringify({ message })
      const timestamp = String(at)
      return fetch(`${server.baseUrl}/providers/vapi/events?org=${orgId}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-timestamp": timestamp,
          "x-signature": createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")
        },
        body
      })
    }
    const report = (actionId: string, callId: string) => ({
      type: "end-of-call-report",
      endedReason: "customer-ended-call",
      artifact: { transcript: "forged" },
      call: { id: callId, assistantOverrides: { metadata: { parleyActionId: actionId } } }
    })

    it("a signed report moves no call Vapi never got, nor one under another call id", async () => {
      const scheduled = await call("+14155550221", { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() })
      expect((await post(report(scheduled, "forged-call"))).status).toBe(200)
      expect((await read(scheduled)).status).toBe("Queued")
      vapi.tweakNextCallbacks({ signature: "none" })
      const placed = await call("+14155550222")
      await readUntil(() => read(placed), (r) => r.sid !== null && r.sid !== undefined)
      expect((await post(report(placed, "another-call"))).status).toBe(200)
      expect((await read(placed)).status).toBe("Queued")
    }, HEAVY)

    it("answers the same 401 for an unknown organisation, a wrong secret and a timestamp from 2001", async () => {
      const message = report("1", "some-call")
      const answers = await Promise.all([
        post(message, "org_does_not_exist"),
        post(message, demo.orgId, "not-the-secret"),
        post(message, demo.orgId, SECRET, Date.parse("2001-09-09T01:46:40Z"))
      ])
      const bodies = await Promise.all(answers.map(async (a) => {
        const json = await a.json() as { error: { code: string; message: string } }
        return [a.status, json.error.code, json.error.message]
      }))
      expect(bodies).toEqual([bodies[0], bodies[0], bodies[0]])
      expect(bodies[0]?.[0]).toBe(401)
    }, HEAVY)
  })
})
