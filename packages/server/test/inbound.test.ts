/** The carrier's inbound webhook: Twilio form fields, Twilio's signature, and what an inbound message changes. */
import twilioSdk from "twilio"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { CallbackReceiver } from "./support/fakes/CallbackReceiver.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const TOKEN = "carrier-test-token"

describe("carrier inbound webhook", () => {
  let server: TestServer
  let demo: DemoSummary
  let events: CallbackReceiver

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_CARRIER_AUTH_TOKEN: TOKEN, PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
    events = await CallbackReceiver.start()
    await server.adminJson(["webhooks", "add", "--org", demo.orgId, "--url", events.at("/events"), "--events", "message.received"])
  })
  afterAll(async () => {
    await server.dispose()
    await events.stop()
  })

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
    expect((await post({ From: "nobody@example.com", To: "+14155550100", Body: "hi" })).status).toBe(400)
  })

  describe("MMS: media URLs in mediaUrls, apart from the text in body", () => {
    interface Message { readonly id: string; readonly body: string; readonly mediaUrls?: ReadonlyArray<string>; readonly sid?: string | null }
    const media = (sid: string, n: number) => `https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/${sid}/Media/ME${n}`
    const received = async (sid: string): Promise<Message> => {
      const list = (await (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live })).json()) as {
        items: ReadonlyArray<Message>
      }
      const found = list.items.find((m) => m.sid === sid)
      if (found === undefined) throw new Error(`no received message ${sid}`)
      return found
    }
    /** What every reader shows for the message: the list, GET /messages/{id}, its conversation and its event. */
    const everyView = async (sid: string, phone: string) => {
      const listed = await received(sid)
      const read = (await (await server.fetch(`/api/v1/messages/${listed.id}`, { key: demo.keys.live })).json()) as Message
      const conversations = (await (await server.fetch("/api/v1/conversations", { key: demo.keys.live })).json()) as {
        items: ReadonlyArray<{ id: string; phone: string }>
      }
      const conversation = conversations.items.find((c) => c.phone === phone)
      const page = (await (await server.fetch(`/api/v1/conversations/${conversation?.id ?? "none"}`, { key: demo.keys.live })).json()) as {
        items: ReadonlyArray<Message>
      }
      const inConversation = page.items.find((m) => m.id === listed.id)
      const event = await until(async () =>
        events.received
          .map((e) => JSON.parse(e.body) as { type: string; data: Message })
          .find((e) => e.type === "message.received" && e.data.sid === sid))
      return [listed, read, inConversation, event.data].map((m) => ({ body: m?.body, mediaUrls: m?.mediaUrls }))
    }

    it("takes a media-only MMS (Body empty): body is empty, the URL is in mediaUrls everywhere", async () => {
      const response = await post({ From: "+447700900003", To: "+14155550100", Body: "", NumMedia: "1", MediaUrl0: media("MMinbound1", 0), MessageSid: "MMinbound1" })
      expect(response.status).toBe(200)
      const views = await everyView("MMinbound1", "+447700900003")
      for (const view of views) expect(view).toEqual({ body: "", mediaUrls: [media("MMinbound1", 0)] })
    })

    it("takes text with two media items (a third that is not an http(s) URL is dropped); a retry stores nothing", async () => {
      const fields = {
        From: "+447700900005",
        To: "+14155550100",
        Body: "Here are the photos",
        NumMedia: "3",
        MediaUrl0: media("MMinbound2", 0),
        MediaContentType0: "image/jpeg",
        MediaUrl1: media("MMinbound2", 1),
        MediaContentType1: "image/png",
        MediaUrl2: "javascript:alert(1)",
        MessageSid: "MMinbound2"
      }
      expect((await post(fields)).status).toBe(200)
      const views = await everyView("MMinbound2", "+447700900005")
      for (const view of views) {
        expect(view).toEqual({ body: "Here are the photos", mediaUrls: [media("MMinbound2", 0), media("MMinbound2", 1)] })
      }
      // Twilio's retry of the same message: answered 200, stored and announced once.
      const first = await received("MMinbound2")
      expect((await post(fields)).status).toBe(200)
      const list = (await (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live })).json()) as {
        items: ReadonlyArray<Message>
      }
      expect(list.items.filter((m) => m.sid === "MMinbound2").map((m) => m.id)).toEqual([first.id])
      // Events are delivered in the background: once a later message's event has arrived, a second one for the
      // retry would have been written before it.
      expect((await post({ From: "+447700900005", To: "+14155550100", Body: "after the retry", MessageSid: "SMinbound7" })).status).toBe(200)
      await until(async () => events.received.find((e) => e.body.includes(`"sid":"SMinbound7"`)))
      expect(events.received.filter((e) => e.body.includes(`"sid":"MMinbound2"`))).toHaveLength(1)
    })

    it("shows an empty mediaUrls on a text without media and on outbound messages", async () => {
      expect((await post({ From: "+447700900006", To: "+14155550100", Body: "just text", MessageSid: "SMinbound6" })).status).toBe(200)
      expect(await received("SMinbound6")).toMatchObject({ body: "just text", mediaUrls: [] })
      const sent = await server.fetch("/api/v1/messages", {
        method: "POST",
        key: demo.keys.live,
        headers: { "idempotency-key": `media-outbound-${Date.now()}` },
        body: JSON.stringify({ to: "+447700900006", fromNumberSid: demo.numbers[0]!.sid, body: "a reply" })
      })
      expect(sent.status).toBe(202)
      const { id } = (await sent.json()) as { id: string }
      const outbound = (await (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).json()) as Message
      expect(outbound).toMatchObject({ body: "a reply", mediaUrls: [] })
    })
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
  describe("what Twilio delivers beyond text and media (issue 35)", () => {
    interface Listed { readonly id: string; readonly body: string; readonly sid?: string | null; readonly mediaUrls?: ReadonlyArray<string> }
    const listed = async (sid: string): Promise<Listed | undefined> => {
      const list = (await (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live })).json()) as {
        items: ReadonlyArray<Listed>
      }
      return list.items.find((m) => m.sid === sid)
    }
    const conversationPhones = async (): Promise<ReadonlyArray<string>> => {
      const response = await server.fetch("/api/v1/conversations", { key: demo.keys.live })
      expect(response.status).toBe(200)
      return ((await response.json()) as { items: ReadonlyArray<{ phone: string }> }).items.map((c) => c.phone)
    }

    it("takes a WhatsApp location (empty Body, no media): its label, address and coordinates are the record's text", async () => {
      // The fields of Twilio's inbound WhatsApp location message, signed by the official SDK.
      const fields = {
        From: "whatsapp:+447700900011",
        To: "whatsapp:+14155550199",
        Body: "",
        NumMedia: "0",
        Latitude: "51.5034070",
        Longitude: "-0.1275920",
        Address: "10 Downing Street, London",
        Label: "Number 10",
        MessageSid: "SMlocation1"
      }
      const response = await post(fields, twilioSdk.getExpectedTwilioSignature(TOKEN, `${server.baseUrl}/carrier/inbound`, fields))
      expect(response.status).toBe(200)
      const message = await listed("SMlocation1")
      expect(message).toMatchObject({
        body: "Location: Number 10, 10 Downing Street, London (geo:51.5034070,-0.1275920)",
        mediaUrls: []
      })
      // A bare pin (no label, no address) still says where.
      const pin = { From: "whatsapp:+447700900011", To: "whatsapp:+14155550199", Body: "", Latitude: "-33.8688", Longitude: "151.2093", MessageSid: "SMlocation2" }
      expect((await post(pin)).status).toBe(200)
      expect((await listed("SMlocation2"))?.body).toBe("Location: (geo:-33.8688,151.2093)")
      // Coordinates that are not degrees are no location: with nothing else, the message is still refused.
      const bogus = { From: "whatsapp:+447700900011", To: "whatsapp:+14155550199", Body: "", Latitude: "91", Longitude: "0", MessageSid: "SMlocation3" }
      expect((await post(bogus)).status).toBe(400)
    })

    it("takes what the official SDK's validateRequest takes: the URL signed without the port Parley is reached on, a repeated key", async () => {
      // Twilio signed the URL it was given (no port); a proxy forwards it to Parley's port. `MediaUrl0` twice:
      // the SDK signs each distinct value once, in value order.
      const pairs: ReadonlyArray<readonly [string, string]> = [
        ["From", "+447700900012"],
        ["To", "+14155550100"],
        ["Body", "two takes"],
        ["MessageSid", "SMsdk1"],
        ["Tag", "b"],
        ["Tag", "a"]
      ]
      const seen = `${server.baseUrl}/carrier/inbound`
      const signedUrl = seen.replace(/:\d+\//, "/")
      const params = { From: "+447700900012", To: "+14155550100", Body: "two takes", MessageSid: "SMsdk1", Tag: ["b", "a"] }
      const signature = twilioSdk.getExpectedTwilioSignature(TOKEN, signedUrl, params)
      expect(twilioSdk.validateRequest(TOKEN, signature, seen, params)).toBe(true)
      const response = await fetch(seen, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
        body: new URLSearchParams(pairs.map(([k, v]): [string, string] => [k, v])).toString()
      })
      expect(response.status).toBe(200)
      expect(await listed("SMsdk1")).toMatchObject({ body: "two takes" })
    })

    it("takes messages from an alphanumeric sender ID and from a 7-digit number (Niue +6834002), and lists their conversations", async () => {
      const fromSenderId = { From: "MyBank", To: "+14155550100", Body: "Your card was used", MessageSid: "SMsenderid1" }
      expect((await post(fromSenderId)).status).toBe(200)
      const fromNiue = { From: "+6834002", To: "+14155550100", Body: "Fakaalofa lahi atu", MessageSid: "SMniue1" }
      expect((await post(fromNiue)).status).toBe(200)
      expect(await listed("SMsenderid1")).toMatchObject({ body: "Your card was used" })
      expect(await listed("SMniue1")).toMatchObject({ body: "Fakaalofa lahi atu" })
      const phones = await conversationPhones()
      expect(phones).toContain("MyBank")
      expect(phones).toContain("+6834002")
      // Still refused: what no carrier sends as a sender.
      for (const from of ["+123456", "A very long sender", "<script>", "+0123456789"]) {
        expect((await post({ From: from, To: "+14155550100", Body: "hi" })).status, from).toBe(400)
      }
    })
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
