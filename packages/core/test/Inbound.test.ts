// Inbound messages: a text arriving on one of the organisation's lines becomes
// a Received, unread, Inbound CRM action on that line, linked to the CRM
// record with the sender's phone, with a `message.received` event; it shows in
// conversations as unread. Mis-addressed messages are InboundRejected. An
// inbound WhatsApp message opens the 24-hour session with its sender.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Schema, TestClock } from "effect"
import {
  ActionStore,
  ActionRecord,
  ActionRecords,
  Actions,
  CreateMessageRequest,
  Conversations,
  Inbound
} from "../src/internal.js"
import { callerFor, CoreTestLayer, crmActions, events, failureOf, MONDAY_10_UTC, SALES, SALES_LINE, seedDemo, SUPPORT, SUPPORT_LINE, WHATSAPP, WHATSAPP_LINE } from "./harness.js"

const ADA = "+447700900001"
const KATHERINE = "+14155550124"
const STRANGER = "+16505550199"

const receive = (message: Omit<Inbound.InboundMessage, "orgId"> & { readonly orgId?: string }) =>
  Effect.flatMap(Inbound.Inbound, (inbound) => inbound.receive({ orgId: "org_demo", ...message }))

const whatsAppText = (fields: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(CreateMessageRequest)({
    to: ADA,
    fromNumberSid: WHATSAPP,
    channel: "WhatsApp",
    body: "Happy to help",
    ...fields
  })

describe("Inbound.receive", () => {
  it.effect("creates a Received, unread, Inbound record on the line, linked to the sender's CRM record", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* TestClock.adjust(Duration.minutes(5))
      const created = yield* receive({ from: ADA, to: SALES_LINE, body: "Can we move it to 3pm?", channel: "SMS", sid: "SM_in_1" })
      const now = new Date(MONDAY_10_UTC + 5 * 60_000).toISOString()
      expect(created).toMatchObject({
        orgId: demo.orgId,
        kind: "message",
        type: "SMS",
        direction: "Inbound",
        status: "Received",
        read: null,
        line: SALES_LINE,
        counterpart: ADA,
        fromNumberSid: SALES,
        body: "Can we move it to 3pm?",
        sid: "SM_in_1",
        at: now,
        modified: now,
        record: { module: "Leads", id: "5001", name: "Ada Lovelace" },
        linkedRecords: [{ module: "Leads", id: "5001", name: "Ada Lovelace" }]
      })
      // It is stored in the CRM as answered.
      const stored = yield* (yield* ActionStore.ActionStore).findAction(demo.orgId, created.id)
      expect(Option.getOrNull(stored)).toEqual(created)
      expect((yield* crmActions(demo.orgId)).map((a) => a.id)).toEqual([created.id])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("reads as an inbound message through GET /messages/{id}: from the sender, to the line, unread", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const created = yield* receive({ from: ADA, to: SALES_LINE, body: "Hello?", channel: "SMS" })
      const record = yield* (yield* Actions.Actions).get(yield* callerFor(demo.keys.live), "message", created.id)
      expect(record).toMatchObject({
        id: created.id,
        from: ADA,
        to: SALES_LINE,
        direction: "Inbound",
        status: "Received",
        read: null,
        name: "Ada Lovelace",
        senderName: "Ada Lovelace",
        linkedSenders: { Lead: "Ada Lovelace", Contact: null, Account: null, Vendor: null }
      })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("lands on the line it was sent to and links the right record", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const created = yield* receive({ from: KATHERINE, to: SUPPORT_LINE, body: "Is my order ready?", channel: "SMS" })
      expect(created).toMatchObject({
        line: SUPPORT_LINE,
        fromNumberSid: SUPPORT,
        counterpart: KATHERINE,
        record: { module: "Contacts", id: "6001", name: "Katherine Johnson" }
      })
      expect(created.orgId).toBe(demo.orgId)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a sender with no CRM record: no link", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const created = yield* receive({ from: STRANGER, to: SALES_LINE, body: "Who is this?", channel: "SMS" })
      expect(created).toMatchObject({ counterpart: STRANGER, record: null, linkedRecords: [], status: "Received", read: null })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("emits exactly one message.received event whose data is the record", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const before = (yield* events(demo.orgId)).length
      const created = yield* receive({ from: ADA, to: SALES_LINE, body: "Ping", channel: "SMS" })
      const after = yield* events(demo.orgId)
      expect(after.length).toBe(before + 1)
      const event = after.at(-1)!
      expect(event.type).toBe("message.received")
      expect(event.timestamp).toBe(new Date(MONDAY_10_UTC).toISOString())
      expect(JSON.parse(event.payload)).toEqual({
        type: "message.received",
        timestamp: new Date(MONDAY_10_UTC).toISOString(),
        data: JSON.parse(JSON.stringify(Schema.encodeSync(ActionRecord)(ActionRecords.toActionRecord(created))))
      })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("keeps media apart from the text: a media-only message (empty text) and text with two media items", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const media = (n: number) => `https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME${n}`
      const only = yield* receive({ from: ADA, to: SALES_LINE, body: "", mediaUrls: [media(1)], channel: "SMS" })
      const both = yield* receive({ from: ADA, to: SALES_LINE, body: "Two photos", mediaUrls: [media(2), media(3)], channel: "SMS" })
      const plain = yield* receive({ from: ADA, to: SALES_LINE, body: "No photos", channel: "SMS" })
      expect([only, both, plain].map((a) => ({ body: a.body, mediaUrls: a.mediaUrls }))).toEqual([
        { body: "", mediaUrls: [media(1)] },
        { body: "Two photos", mediaUrls: [media(2), media(3)] },
        { body: "No photos", mediaUrls: [] }
      ])
      const actions = yield* Actions.Actions
      expect(yield* actions.get(caller, "message", only.id)).toMatchObject({ body: "", mediaUrls: [media(1)] })
      expect(yield* actions.get(caller, "message", both.id)).toMatchObject({ body: "Two photos", mediaUrls: [media(2), media(3)] })
      const payloads = (yield* events(demo.orgId)).slice(-3).map((e) => JSON.parse(e.payload) as { data: { body: string; mediaUrls: unknown } })
      expect(payloads.map((p) => [p.data.body, p.data.mediaUrls])).toEqual([["", [media(1)]], ["Two photos", [media(2), media(3)]], ["No photos", []]])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("neither text nor media, a media URL that is not absolute http(s), or over 10 media: InboundRejected", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const empty = yield* failureOf(receive({ from: ADA, to: SALES_LINE, body: " ", mediaUrls: [], channel: "SMS" }))
      expect(empty._tag).toBe("InboundRejected")
      for (const url of ["javascript:alert(1)", "/Media/ME1", "file:///etc/passwd"]) {
        const error = yield* failureOf(receive({ from: ADA, to: SALES_LINE, body: "hi", mediaUrls: [url], channel: "SMS" }))
        expect(error.message).toContain(JSON.stringify(url))
      }
      const many = Array.from({ length: 11 }, (_, i) => `https://example.com/${i}.jpg`)
      const tooMany = yield* failureOf(receive({ from: ADA, to: SALES_LINE, body: "hi", mediaUrls: many, channel: "SMS" }))
      expect(tooMany.message).toContain("at most 10")
      expect(yield* crmActions(demo.orgId)).toEqual([])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("shows in Conversations.list as unread, unreadCount 1", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* receive({ from: ADA, to: SALES_LINE, body: "Are you open on Saturday?", channel: "SMS" })
      const page = yield* (yield* Conversations.Conversations).list(yield* callerFor(demo.keys.live), undefined)
      expect(page.items).toHaveLength(1)
      expect(page.items[0]).toMatchObject({
        phone: ADA,
        line: SALES_LINE,
        name: "Ada Lovelace",
        preview: "Are you open on Saturday?",
        unread: true,
        unreadCount: 1,
        direction: "Inbound",
        status: "Received",
        type: "SMS"
      })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("WhatsApp to a number not connected to WhatsApp is InboundRejected; nothing is stored or emitted", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const before = (yield* events(demo.orgId)).length
      const error = yield* failureOf(receive({ from: ADA, to: SALES_LINE, body: "hi", channel: "WhatsApp" }))
      expect(error._tag).toBe("InboundRejected")
      expect(error.message).toContain(SALES_LINE)
      expect(error.message).toMatch(/WhatsApp/)
      expect(yield* crmActions(demo.orgId)).toEqual([])
      expect((yield* events(demo.orgId)).length).toBe(before)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an unknown `to` is InboundRejected naming it; nothing is stored or emitted", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const before = (yield* events(demo.orgId)).length
      for (const channel of ["SMS", "WhatsApp"] as const) {
        const error = yield* failureOf(receive({ from: ADA, to: "+19995550000", body: "hi", channel }))
        expect(error._tag).toBe("InboundRejected")
        expect(error.message).toContain("+19995550000")
      }
      // The sender's number is not one of the lines either.
      const reversed = yield* failureOf(receive({ from: SALES_LINE, to: ADA, body: "hi", channel: "SMS" }))
      expect(reversed._tag).toBe("InboundRejected")
      expect(yield* crmActions(demo.orgId)).toEqual([])
      expect((yield* events(demo.orgId)).length).toBe(before)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a number of another organisation is not this organisation's line", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const error = yield* failureOf(receive({ orgId: "org_unknown", from: ADA, to: SALES_LINE, body: "hi", channel: "SMS" }))
      expect(error._tag).toBe("InboundRejected")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("WhatsApp to the WhatsApp line is accepted as a WhatsApp record", () =>
    Effect.gen(function*() {
      yield* seedDemo
      const created = yield* receive({ from: ADA, to: WHATSAPP_LINE, body: "Hola", channel: "WhatsApp" })
      expect(created).toMatchObject({ type: "WhatsApp", line: WHATSAPP_LINE, fromNumberSid: WHATSAPP, status: "Received" })
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("an inbound WhatsApp message opens the 24-hour session", () => {
  it.effect("free-form WhatsApp is refused, then accepted after an inbound, then refused again 24 h later", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      const caller = yield* callerFor(demo.keys.live)

      const before = yield* failureOf(actions.createMessage(caller, whatsAppText(), "k0"))
      expect(before._tag).toBe("InvalidRequest")
      expect(before.message).toMatch(/^whatsAppContentSid:/)

      yield* receive({ from: ADA, to: WHATSAPP_LINE, body: "Hi, quick question", channel: "WhatsApp" })
      const open = yield* actions.createMessage(caller, whatsAppText(), "k1")
      expect(open.ack.status).toBe("accepted")
      expect(open.ack.test).toBe(false)

      yield* TestClock.adjust(Duration.hours(24))
      const after = yield* failureOf(actions.createMessage(yield* callerFor(demo.keys.live), whatsAppText(), "k2"))
      expect(after._tag).toBe("InvalidRequest")
      expect(after.message).toMatch(/^whatsAppContentSid:/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the session stays open until just before 24 h", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      yield* receive({ from: ADA, to: WHATSAPP_LINE, body: "Hi", channel: "WhatsApp" })
      yield* TestClock.adjust(Duration.millis(24 * 3_600_000 - 1_000))
      const stillOpen = yield* actions.createMessage(yield* callerFor(demo.keys.live), whatsAppText(), "k1")
      expect(stillOpen.ack.status).toBe("accepted")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an inbound SMS does not open a WhatsApp session", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* receive({ from: ADA, to: WHATSAPP_LINE, body: "Hi by SMS", channel: "SMS" })
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(yield* callerFor(demo.keys.live), whatsAppText(), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^whatsAppContentSid:/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the session is with the sender only", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* receive({ from: KATHERINE, to: WHATSAPP_LINE, body: "Hi", channel: "WhatsApp" })
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(yield* callerFor(demo.keys.live), whatsAppText({ to: ADA }), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      const ok = yield* (yield* Actions.Actions).createMessage(
        yield* callerFor(demo.keys.live),
        whatsAppText({ to: KATHERINE }),
        "k2"
      )
      expect(ok.ack.status).toBe("accepted")
    }).pipe(Effect.provide(CoreTestLayer)))
})
