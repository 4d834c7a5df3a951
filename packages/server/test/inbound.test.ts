/** The carrier's inbound webhook: Twilio form fields, Twilio's signature, and what an inbound message changes. */
import twilioSdk from "twilio"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const TOKEN = "carrier-test-token"

describe("carrier inbound webhook", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_CARRIER_AUTH_TOKEN: TOKEN, PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  })
  afterAll(() => server.dispose())

  const post = (fields: Record<string, string>, signature?: string) => {
    const body = new URLSearchParams(fields).toString()
    const url = `${server.baseUrl}/carrier/inbound`
    const sign = signature ?? twilioSignature(TOKEN, url, Object.entries(fields))
    return fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sign },
      body
    })
  }

  it("refuses a request whose X-Twilio-Signature does not match (401 UNAUTHORIZED in the error shape)", async () => {
    const response = await post({ From: "+447700900001", To: "+14155550100", Body: "hi" }, "bm90IGEgc2lnbmF0dXJl")
    expect(response.status).toBe(401)
    const body = (await response.json()) as { error: { code: string; requestId: string } }
    expect(body.error.code).toBe("UNAUTHORIZED")
    expect(body.error.requestId).toBe(response.headers.get("x-request-id"))
  })

  it("turns a signed inbound text into an unread Received record in its conversation, linked to the CRM record", async () => {
    const response = await post({ From: "+447700900001", To: "+14155550100", Body: "Is my order ready?", MessageSid: "SMinbound1" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/xml")
    const page = (await (await server.fetch("/api/v1/conversations", { key: demo.keys.live })).json()) as {
      items: ReadonlyArray<{ phone: string; unread: boolean; unreadCount: number; name: string; preview?: string }>
    }
    const conversation = page.items.find((c) => c.phone === "+447700900001")
    expect(conversation).toMatchObject({ unread: true, unreadCount: 1, name: "Ada Lovelace", preview: "Is my order ready?" })
  })

  it("opens the 24-hour WhatsApp session: free-form WhatsApp text is then accepted without a content template", async () => {
    const send = () =>
      server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `wa-${Date.now()}-${Math.random()}` },
        body: JSON.stringify({ to: "+447700900002", fromNumberSid: demo.numbers[2]!.sid, channel: "WhatsApp", body: "Hello" })
      })
    const closed = await send()
    expect(closed.status).toBe(400)
    expect(((await closed.json()) as { error: { message: string } }).error.message).toContain("whatsAppContentSid")
    const inbound = await post({ From: "whatsapp:+447700900002", To: "whatsapp:+14155550199", Body: "Hi on WhatsApp" })
    expect(inbound.status).toBe(200)
    expect((await send()).status).toBe(202)
  })

  it("answers 404 for a number no organisation has, and 400 for malformed numbers", async () => {
    expect((await post({ From: "+447700900001", To: "+19995550100", Body: "hi" })).status).toBe(404)
    expect((await post({ From: "nobody", To: "+14155550100", Body: "hi" })).status).toBe(400)
  })

  it("takes a media-only MMS (Body empty), keeping its media URLs on the record the API shows", async () => {
    const media = "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"
    const response = await post({ From: "+447700900003", To: "+14155550100", Body: "", NumMedia: "1", MediaUrl0: media, MessageSid: "MMinbound1" })
    expect(response.status).toBe(200)
    const list = (await (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live })).json()) as {
      items: ReadonlyArray<{ body: string; sid?: string | null }>
    }
    expect(list.items.find((m) => m.sid === "MMinbound1")?.body).toBe(media)
  })

  it("takes a message from a short code, and lists its conversation (phone E.164 or short code)", async () => {
    // Signed by the official twilio package, independently of Parley's signer.
    const fields = { From: "89898", To: "+14155550100", Body: "Your code is 123456", MessageSid: "SMshortcode1" }
    const url = `${server.baseUrl}/carrier/inbound`
    const response = await post(fields, twilioSdk.getExpectedTwilioSignature(TOKEN, url, fields))
    expect(response.status).toBe(200)
    const conversations = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
    expect(conversations.status).toBe(200)
    const page = (await conversations.json()) as { items: ReadonlyArray<{ phone: string }> }
    expect(page.items.some((c) => c.phone === "89898")).toBe(true)
  })
})

describe("carrier inbound webhook without a token to check it with", () => {
  const fields = { From: "+447700900004", To: "+14155550100", Body: "unsigned", MessageSid: "SMunsigned1" }
  const post = (server: TestServer) =>
    fetch(`${server.baseUrl}/providers/twilio/inbound`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    })

  it("refuses unsigned inbound messages by default, and takes them once the operator opts in", async () => {
    const strict = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50" } })
    try {
      await strict.demo()
      const refused = await post(strict)
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED")
    } finally {
      await strict.dispose()
    }
    const open = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50", PARLEY_INBOUND_UNSIGNED: "accept" } })
    try {
      await open.demo()
      expect((await post(open)).status).toBe(200)
    } finally {
      await open.dispose()
    }
  }, 120_000)
})
