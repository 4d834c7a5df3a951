// Signed events: which event each status change of a text or an AI call
// emits, and the outbox entry `emit` writes — `{type, timestamp, data}` where
// data is the record GET /messages/{id} or /ai-calls/{id} answers
// (ActionRecords.toActionRecord) and timestamp is the clock's time.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema, TestClock } from "effect"
import { EventType } from "../src/contract/Events.js"
import { openApiDocument } from "../src/contract/OpenApiDocument.js"
import { ActionRecord } from "../src/contract/Resources.js"
import { CallStatus, MessageStatus } from "../src/contract/Statuses.js"
import { toActionRecord } from "../src/domain/ActionRecords.js"
import { emit, eventForStatus } from "../src/domain/Events.js"
import type { Action } from "../src/ports/ActionStore.js"
import { EventOutbox, layerMemory as EventOutboxMemory } from "../src/ports/EventOutbox.js"
import { sampleText } from "./harness.js"

const MESSAGE_EVENTS: Record<MessageStatus, EventType | null> = {
  Queued: "message.queued",
  Sending: null,
  Sent: "message.sent",
  Delivered: "message.delivered",
  Undelivered: "message.failed",
  Failed: "message.failed",
  Cancelled: "message.cancelled",
  Received: "message.received"
}

const CALL_EVENTS: Record<CallStatus, EventType | null> = {
  Queued: "ai_call.queued",
  Ringing: null,
  "In Progress": "ai_call.started",
  Completed: "ai_call.completed",
  "No Answer": "ai_call.failed",
  Busy: "ai_call.failed",
  Failed: "ai_call.failed",
  Cancelled: "ai_call.cancelled"
}

describe("eventForStatus", () => {
  it.each(MessageStatus.literals)("message status %s", (status) => {
    expect(eventForStatus("message", status)).toBe(MESSAGE_EVENTS[status])
  })

  it.each(CallStatus.literals)("AI call status %s", (status) => {
    expect(eventForStatus("ai_call", status)).toBe(CALL_EVENTS[status])
  })

  it("every event kind but the CRM's is emitted by some status, and each kind only emits its own events", () => {
    const emitted = new Set<string>()
    for (const status of MessageStatus.literals) {
      const type = eventForStatus("message", status)
      if (type !== null) {
        expect(type.startsWith("message.")).toBe(true)
        emitted.add(type)
      }
    }
    for (const status of CallStatus.literals) {
      const type = eventForStatus("ai_call", status)
      if (type !== null) {
        expect(type.startsWith("ai_call.")).toBe(true)
        emitted.add(type)
      }
    }
    // crm.record_refused is not a status change: the CRM connector emits it when it gives a record up; nor are
    // the opt-out list's changes (Consent emits them).
    expect([...emitted].sort()).toEqual(
      EventType.literals.filter((type) => !type.startsWith("crm.") && !type.startsWith("optout.")).sort()
    )
  })

  it("a status of the other kind, or an unknown one, emits nothing", () => {
    expect(eventForStatus("message", "In Progress")).toBeNull()
    expect(eventForStatus("message", "No Answer")).toBeNull()
    expect(eventForStatus("ai_call", "Delivered")).toBeNull()
    expect(eventForStatus("ai_call", "Received")).toBeNull()
    expect(eventForStatus("message", "queued")).toBeNull()
  })
})

const T0 = Date.parse("2026-03-02T10:00:00Z")

const outboundText: Action = { ...sampleText, orgId: "org_events", dueAt: T0 - 60_000 }

const completedCall: Action = {
  ...outboundText,
  id: "1002",
  kind: "ai_call",
  type: "Call",
  status: "Completed",
  body: "Bot (Sales qualifier): Hello…\nBot: Goodbye.",
  botId: "bot_sales",
  mode: "follow_script",
  purposeMessage: "Book a demo",
  sid: "CA0123456789",
  audioFileId: "audio_1",
  scheduledFor: "2026-03-02T09:30:00.000Z",
  record: { module: "Contacts", id: "6001", name: "Katherine Johnson" },
  linkedRecords: [
    { module: "Contacts", id: "6001", name: "Katherine Johnson" },
    { module: "Deals", id: "8001", name: "Acme renewal" }
  ]
}

const inboundText: Action = {
  ...outboundText,
  id: "1003",
  direction: "Inbound",
  status: "Received",
  body: "Thanks!",
  mediaUrls: ["https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"],
  read: null,
  owner: null,
  sentBy: null,
  apiKeyId: null
}

const failedText: Action = {
  ...outboundText,
  id: "1004",
  counterpart: "+15005550002",
  status: "Undelivered",
  errorMessage: "30003: Unreachable destination handset",
  record: null,
  linkedRecords: []
}

/** The record as it goes over the wire (what GET /messages/{id} would answer). */
const wire = (action: Action): unknown => JSON.parse(JSON.stringify(Schema.encodeSync(ActionRecord)(toActionRecord(action))))

const outboxEvents = Effect.flatMap(EventOutbox, (outbox) => outbox.list("org_events"))

describe("emit", () => {
  it.effect("writes one outbox event {type, timestamp, data} whose data is the action's record", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* emit("message.delivered", outboundText)
      const events = yield* outboxEvents
      expect(events).toHaveLength(1)
      const event = events[0]!
      expect(event.id).toMatch(/^evt_/)
      expect(event.orgId).toBe("org_events")
      expect(event.type).toBe("message.delivered")
      expect(event.timestamp).toBe("2026-03-02T10:00:00.000Z")
      const payload: unknown = JSON.parse(event.payload)
      expect(Object.keys(payload as object).sort()).toEqual(["data", "timestamp", "type"])
      expect(payload).toEqual({ type: "message.delivered", timestamp: "2026-03-02T10:00:00.000Z", data: wire(outboundText) })
    }).pipe(Effect.provide(EventOutboxMemory)))

  it.effect("data reads as GET /messages/{id} does: from/to by direction, status, sid, modified", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* emit("message.delivered", outboundText)
      yield* emit("message.received", inboundText)
      yield* emit("message.failed", failedText)
      const [out, inn, failed] = (yield* outboxEvents).map((e) => JSON.parse(e.payload) as { data: Record<string, unknown> })
      expect(out!.data).toMatchObject({
        id: "1001",
        from: "+14155550100",
        to: "+447700900001",
        direction: "Outbound",
        status: "Delivered",
        type: "SMS",
        sid: "SM0123456789",
        modified: "2026-03-02T09:59:30.000Z",
        sentBy: "API key key_123",
        owner: { id: "crm_user_demo", name: "Dana Demo" },
        record: { id: "5001", name: "Ada Lovelace" }
      })
      expect(inn!.data).toMatchObject({
        id: "1003",
        from: "+447700900001",
        to: "+14155550100",
        read: null,
        status: "Received",
        body: "Thanks!",
        mediaUrls: ["https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"]
      })
      // Every record carries the field: an outbound text's is empty.
      expect(out!.data["mediaUrls"]).toEqual([])
      expect(inn!.data).toEqual(wire(inboundText))
      expect(failed!.data).toMatchObject({ status: "Undelivered", errorMessage: "30003: Unreachable destination handset" })
      expect(failed!.data).toEqual(wire(failedText))
    }).pipe(Effect.provide(EventOutboxMemory)))

  it.effect("an AI call's data carries the transcript, audioFileId and linked records", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* emit("ai_call.completed", completedCall)
      const [event] = yield* outboxEvents
      const payload = JSON.parse(event!.payload) as { type: string; data: Record<string, unknown> }
      expect(payload.type).toBe("ai_call.completed")
      expect(payload.data).toEqual(wire(completedCall))
      expect(payload.data).toMatchObject({
        body: completedCall.body,
        audioFileId: "audio_1",
        botId: "bot_sales",
        status: "Completed",
        linkedSenders: { Contact: "Katherine Johnson", Account: "Acme renewal", Vendor: null, Lead: null }
      })
    }).pipe(Effect.provide(EventOutboxMemory)))

  it.effect("each event has its own id and the timestamp of the clock when it was written", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* emit("message.sent", { ...outboundText, status: "Sent" })
      yield* TestClock.adjust(Duration.seconds(90))
      yield* emit("message.delivered", outboundText)
      const events = yield* outboxEvents
      expect(events.map((e) => [e.type, e.timestamp])).toEqual([
        ["message.sent", "2026-03-02T10:00:00.000Z"],
        ["message.delivered", "2026-03-02T10:01:30.000Z"]
      ])
      expect(events.map((e) => (JSON.parse(e.payload) as { timestamp: string }).timestamp)).toEqual([
        "2026-03-02T10:00:00.000Z",
        "2026-03-02T10:01:30.000Z"
      ])
      expect(events.map((e) => (JSON.parse(e.payload) as { data: { status: string } }).data.status))
        .toEqual(["Sent", "Delivered"])
      expect(new Set(events.map((e) => e.id)).size).toBe(2)
    }).pipe(Effect.provide(EventOutboxMemory)))

  it.effect("the event goes to the action's organisation only", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* emit("message.delivered", { ...outboundText, orgId: "org_other" })
      expect(yield* outboxEvents).toEqual([])
      const outbox = yield* EventOutbox
      expect((yield* outbox.list("org_other")).map((e) => e.orgId)).toEqual(["org_other"])
    }).pipe(Effect.provide(EventOutboxMemory)))
})

describe("the opt-out events in the OpenAPI document", () => {
  it("optout.created and optout.deleted carry OptOutEventPayload (the entry as data); the others EventPayload", () => {
    const document = JSON.parse(JSON.stringify(openApiDocument())) as {
      readonly webhooks: Record<string, { readonly post: { readonly requestBody: { readonly content: Record<string, { readonly schema: { readonly $ref?: string } }> } } }>
      readonly components: { readonly schemas: Record<string, { readonly properties?: Record<string, { readonly $ref?: string }> }> }
    }
    const schemaOf = (type: string) => document.webhooks[type]?.post.requestBody.content["application/json"]?.schema.$ref
    expect(schemaOf("optout.created")).toBe("#/components/schemas/OptOutEventPayload")
    expect(schemaOf("optout.deleted")).toBe("#/components/schemas/OptOutEventPayload")
    expect(schemaOf("message.received")).toBe("#/components/schemas/EventPayload")
    expect(document.components.schemas["OptOutEventPayload"]?.properties?.["data"]?.$ref).toBe("#/components/schemas/OptOut")
  })
})
