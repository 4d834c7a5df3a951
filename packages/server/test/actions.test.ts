/**
 * Acceptance: creating, reading and cancelling texts and AI calls over real
 * HTTP — 202 acknowledgements and the records behind them, scheduling (29 s vs
 * 31 s), cancellation rules and 409s, idempotency (replay, reuse, missing,
 * too long, concurrent), templates and merging, the WhatsApp session, and the
 * organisation's allowances and AI settings for live keys.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, PN1, PN1_PHONE, WA, WA_PHONE, type Page } from "./support/demo.js"

interface CreationAck {
  readonly id: string
  readonly status: string
  readonly test: boolean
}
interface CancellationAck {
  readonly id: string
  readonly status: string
  readonly test?: boolean
}
interface LinkedRecord {
  readonly module: string
  readonly id: string
  readonly name: string | null
}
interface ActionRecord {
  readonly id: string
  readonly body: string
  readonly status?: string | null
  readonly from?: string | null
  readonly to?: string | null
  readonly direction?: string | null
  readonly type?: string | null
  readonly botId: string | null
  readonly scheduledFor?: string | null
  readonly record?: { readonly id: string; readonly name: string } | null
  readonly linkedRecords: ReadonlyArray<LinkedRecord>
}
interface TemplateItem {
  readonly id: string
  readonly crmId: string
  readonly name: string
  readonly body: string
}
interface ConversationSummary {
  readonly id: string
  readonly phone: string
  readonly line?: string
}
interface AddedTemplate {
  readonly id: string
  readonly name: string
}

const CONTENT_SID = "HX0123456789abcdef0123456789abcdef"
const MINUTE = 60_000

/** Statuses an accepted, unscheduled text may show as it moves through dispatch (never a failure or cancel). */
const ACCEPTED_TEXT_STATUSES = ["Queued", "Sending", "Sent", "Delivered"]
const ACCEPTED_CALL_STATUSES = ["Queued", "Ringing", "In Progress", "Completed"]

let phoneCounter = 0
/** A counterpart number no other test uses. */
const freshPhone = () => `+1303555${String(1000 + ++phoneCounter).padStart(4, "0")}`
let idemCounter = 0
const idem = () => `actions-${Date.now()}-${++idemCounter}`
const inFuture = (ms: number) => new Date(Date.now() + ms).toISOString()

describe("actions: texts and AI calls", () => {
  let server: TestServer
  let demo: DemoSummary
  const added = { zebra: "", birthday: "", shoeSize: "" }

  /** `idempotencyKey` null sends no Idempotency-Key header; omitted, a fresh key. */
  const post = (path: string, key: string, payload: unknown, idempotencyKey: string | null = idem()) =>
    server.fetch(path, {
      key,
      method: "POST",
      ...(idempotencyKey === null ? {} : { headers: { "idempotency-key": idempotencyKey } }),
      body: JSON.stringify(payload)
    })
  const sendMessage = (key: string, payload: Record<string, unknown>, idempotencyKey?: string | null) =>
    post("/api/v1/messages", key, payload, idempotencyKey)
  const startCall = (key: string, payload: Record<string, unknown>, idempotencyKey?: string | null) =>
    post("/api/v1/ai-calls", key, payload, idempotencyKey)
  const getMessage = (id: string, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/messages/${id}`, { key })
  const getCall = (id: string, key: string = demo.keys.live) => server.fetch(`/api/v1/ai-calls/${id}`, { key })
  const cancel = (kind: "messages" | "ai-calls", id: string, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/${kind}/${id}/cancel`, { key, method: "POST" })

  /** Every CRM message to `to` from `line`, via the conversations endpoints. */
  const messagesWith = async (to: string, line: string = PN1_PHONE): Promise<ReadonlyArray<ActionRecord>> => {
    const page = await readJson<Page<ConversationSummary>>(
      await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
      200
    )
    const conversation = page.items.find((c) => c.phone === to && c.line === line)
    if (conversation === undefined) return []
    const messages = await readJson<Page<ActionRecord>>(
      await server.fetch(`/api/v1/conversations/${encodeURIComponent(conversation.id)}`, { key: demo.keys.live }),
      200
    )
    return messages.items
  }

  beforeAll(async () => {
    // A raised limit: this file sends far more than 60 requests a minute with the demo keys.
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "10000" } })
    demo = await server.demo()
    const add = (name: string, body: string) =>
      server.adminJson<AddedTemplate>(["templates", "add", "--org", demo.orgId, "--name", name, "--body", body])
    added.zebra = (await add("Zebra crossing notice", "The office closes early today.")).id
    added.birthday = (await add("Birthday greeting", "Happy birthday, ${Leads.First Name}!")).id
    added.shoeSize = (await add("Shoe size check", "Your size is ${Leads.Shoe Size}, right?")).id
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  describe("creation and reading", () => {
    it("queues a text: 202 accepted, then GET /messages/{id} shows the record", async () => {
      const to = freshPhone()
      const response = await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "Hello from the tests" })
      expect(response.headers.get("idempotent-replayed")).toBeNull()
      const ack = await readJson<CreationAck>(response, 202)
      expect(ack).toEqual({ id: ack.id, status: "accepted", test: false })
      expect(ack.id).toMatch(/^[1-9]\d*$/)

      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record).toMatchObject({
        id: ack.id,
        body: "Hello from the tests",
        from: PN1_PHONE,
        to,
        direction: "Outbound",
        type: "SMS",
        botId: null,
        scheduledFor: null,
        linkedRecords: []
      })
      // 202 means accepted, never delivered: right after creation the record is Queued (or, once dispatch runs,
      // on its way) — never failed or cancelled.
      expect(ACCEPTED_TEXT_STATUSES).toContain(record.status)
    })

    it("starts an AI call: 202, then GET /ai-calls/{id} shows a Call record with its bot", async () => {
      const to = freshPhone()
      const ack = await readJson<CreationAck>(
        await startCall(demo.keys.live, { to, fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }),
        202
      )
      expect(ack.status).toBe("accepted")
      expect(ack.test).toBe(false)
      const record = await readJson<ActionRecord>(await getCall(ack.id), 200)
      expect(record).toMatchObject({ id: ack.id, type: "Call", botId: "bot_sales", direction: "Outbound", from: PN1_PHONE, to })
      expect(ACCEPTED_CALL_STATUSES).toContain(record.status)

      // an AI call is not a message, and a message is not an AI call
      await expectError(await getMessage(ack.id), 404, "NOT_FOUND")
      const text = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "text" }),
        202
      )
      await expectError(await getCall(text.id), 404, "NOT_FOUND")
      await expectError(await cancel("messages", ack.id), 404, "NOT_FOUND")
    })

    it("checks AI call requests: inactive bot, missing purposeMessage", async () => {
      const legacy = await expectError(
        await startCall(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_legacy", mode: "follow_script" }),
        400,
        "INVALID_REQUEST"
      )
      expect(legacy.message).toContain("botId")
      const purpose = await expectError(
        await startCall(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          botId: "bot_sales",
          mode: "deliver_specific_message"
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(purpose.message).toContain("purposeMessage")
      await readJson<CreationAck>(
        await startCall(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          botId: "bot_sales",
          mode: "deliver_specific_message",
          purposeMessage: "Your parcel arrives tomorrow."
        }),
        202
      )
    })

    it("answers 404 NOT_FOUND for ids that do not exist", async () => {
      await expectError(await getMessage("987654321"), 404, "NOT_FOUND")
      await expectError(await getCall("987654321"), 404, "NOT_FOUND")
      await expectError(await cancel("messages", "987654321"), 404, "NOT_FOUND")
    })
  })

  describe("scheduling", () => {
    let soon: { id: string; scheduledFor: string } | undefined

    it("schedules at 31 s ahead (202 scheduled) and refuses 29 s ahead (400 naming scheduledFor)", async () => {
      const scheduledFor = inFuture(31_000)
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "soon", scheduledFor }),
        202
      )
      expect(ack.status).toBe("scheduled")
      soon = { id: ack.id, scheduledFor }
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record.status).toBe("Queued")
      expect(Date.parse(record.scheduledFor ?? "")).toBe(Date.parse(scheduledFor))

      const early = await expectError(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "too soon", scheduledFor: inFuture(29_000) }),
        400,
        "INVALID_REQUEST"
      )
      expect(early.message).toContain("scheduledFor")
      const earlyCall = await expectError(
        await startCall(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          botId: "bot_sales",
          mode: "follow_script",
          scheduledFor: inFuture(29_000)
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(earlyCall.message).toContain("scheduledFor")
    })

    it("accepts a scheduledFor with any timezone offset, and refuses one without an offset", async () => {
      const at = Date.now() + 10 * MINUTE
      // the same instant written at UTC+02:00
      const local = new Date(at + 2 * 60 * MINUTE).toISOString().replace(/\.\d{3}Z$/, "+02:00")
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "offset", scheduledFor: local }),
        202
      )
      expect(ack.status).toBe("scheduled")
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(Math.abs(Date.parse(record.scheduledFor ?? "") - at)).toBeLessThan(1000)

      const naive = await expectError(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          body: "naive",
          scheduledFor: new Date(at).toISOString().replace(/Z$/, "")
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(naive.message).toContain("scheduledFor")
    })

    it("refuses to cancel a scheduled text once it is due within 30 seconds (409)", async () => {
      expect(soon).toBeDefined()
      const target = soon ?? { id: "0", scheduledFor: "" }
      // wait until the 31 s message is within 30 s of its time
      const horizon = Date.parse(target.scheduledFor) - 30_000
      while (Date.now() <= horizon + 200) await new Promise((resolve) => setTimeout(resolve, 100))
      await expectError(await cancel("messages", target.id), 409, "ACTION_NOT_CANCELLABLE")
      const record = await readJson<ActionRecord>(await getMessage(target.id), 200)
      expect(record.status).not.toBe("Cancelled")
    })
  })

  describe("cancellation", () => {
    const scheduleText = async (key: string = demo.keys.live) =>
      readJson<CreationAck>(
        await sendMessage(key, { to: freshPhone(), fromNumberSid: PN1, body: "later", scheduledFor: inFuture(10 * MINUTE) }),
        202
      )

    it("cancels a scheduled text (200 cancelled), the record shows Cancelled, and a second cancel is 409", async () => {
      const ack = await scheduleText()
      const response = await cancel("messages", ack.id)
      const cancelled = await readJson<CancellationAck>(response, 200)
      expect(cancelled).toEqual({ id: ack.id, status: "cancelled" })
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record.status).toBe("Cancelled")
      await expectError(await cancel("messages", ack.id), 409, "ACTION_NOT_CANCELLABLE")
    })

    it("refuses to cancel an unscheduled text (409 ACTION_NOT_CANCELLABLE)", async () => {
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "now" }),
        202
      )
      await expectError(await cancel("messages", ack.id), 409, "ACTION_NOT_CANCELLABLE")
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record.status).not.toBe("Cancelled")
    })

    it("simulates cancellation with a test key: test true, and the record unchanged", async () => {
      const ack = await scheduleText()
      const simulated = await readJson<CancellationAck>(await cancel("messages", ack.id, demo.keys.test), 200)
      expect(simulated).toEqual({ id: ack.id, status: "cancelled", test: true })
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record.status).toBe("Queued")
      // and still really cancellable
      expect((await readJson<CancellationAck>(await cancel("messages", ack.id), 200)).status).toBe("cancelled")
      // a test key follows the same rules: a cancelled message is not cancellable again
      await expectError(await cancel("messages", ack.id, demo.keys.test), 409, "ACTION_NOT_CANCELLABLE")
    })

    it("cancels a scheduled AI call, and refuses an unscheduled one", async () => {
      const scheduled = await readJson<CreationAck>(
        await startCall(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          botId: "bot_support",
          mode: "follow_script",
          scheduledFor: inFuture(10 * MINUTE)
        }),
        202
      )
      expect(scheduled.status).toBe("scheduled")
      expect(await readJson<CancellationAck>(await cancel("ai-calls", scheduled.id), 200)).toEqual({
        id: scheduled.id,
        status: "cancelled"
      })
      expect((await readJson<ActionRecord>(await getCall(scheduled.id), 200)).status).toBe("Cancelled")
      await expectError(await cancel("ai-calls", scheduled.id), 409, "ACTION_NOT_CANCELLABLE")

      const now = await readJson<CreationAck>(
        await startCall(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_support", mode: "follow_script" }),
        202
      )
      await expectError(await cancel("ai-calls", now.id), 409, "ACTION_NOT_CANCELLABLE")
    })
  })

  describe("idempotency", () => {
    it("replays the same key and payload: same id, Idempotent-Replayed: true, one action", async () => {
      const to = freshPhone()
      const key = idem()
      const first = await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "once" }, key)
      expect(first.headers.get("idempotent-replayed")).toBeNull()
      const ack = await readJson<CreationAck>(first, 202)
      // the same payload with its fields in another order is the same request
      const again = await sendMessage(demo.keys.live, { body: "once", fromNumberSid: PN1, to }, key)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(await readJson<CreationAck>(again, 202)).toEqual(ack)
      const messages = await messagesWith(to)
      expect(messages.map((m) => m.id)).toEqual([ack.id])
    })

    it("replays AI calls and test-key creations too", async () => {
      const callKey = idem()
      const payload = { to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }
      const first = await readJson<CreationAck>(await startCall(demo.keys.live, payload, callKey), 202)
      const replay = await startCall(demo.keys.live, payload, callKey)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect((await readJson<CreationAck>(replay, 202)).id).toBe(first.id)

      const testKey = idem()
      const simulated = { to: freshPhone(), fromNumberSid: PN1, body: "simulated" }
      const a = await readJson<CreationAck>(await sendMessage(demo.keys.test, simulated, testKey), 202)
      const b = await sendMessage(demo.keys.test, simulated, testKey)
      expect(b.headers.get("idempotent-replayed")).toBe("true")
      expect(await readJson<CreationAck>(b, 202)).toEqual(a)
    })

    it("scopes Idempotency-Key to the API key", async () => {
      const key = idem()
      const payload = { to: freshPhone(), fromNumberSid: PN1, body: "per key" }
      const live = await readJson<CreationAck>(await sendMessage(demo.keys.live, payload, key), 202)
      const other = await sendMessage(demo.keys.test, payload, key)
      expect(other.headers.get("idempotent-replayed")).toBeNull()
      const simulated = await readJson<CreationAck>(other, 202)
      expect(simulated.id).not.toBe(live.id)
      expect(simulated.test).toBe(true)
    })

    it("answers 400 IDEMPOTENCY_KEY_REUSED for the same key with another payload", async () => {
      const key = idem()
      const to = freshPhone()
      const ack = await readJson<CreationAck>(await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "first" }, key), 202)
      await expectError(
        await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "second" }, key),
        400,
        "IDEMPOTENCY_KEY_REUSED"
      )
      // the same key on the other creation endpoint is another request too
      await expectError(
        await startCall(demo.keys.live, { to, fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }, key),
        400,
        "IDEMPOTENCY_KEY_REUSED"
      )
      const messages = await messagesWith(to)
      expect(messages.map((m) => [m.id, m.body])).toEqual([[ack.id, "first"]])
    })

    it("answers 400 IDEMPOTENCY_KEY_REQUIRED without the header", async () => {
      const to = freshPhone()
      await expectError(
        await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "no key" }, null),
        400,
        "IDEMPOTENCY_KEY_REQUIRED"
      )
      await expectError(
        await startCall(demo.keys.live, { to, fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }, null),
        400,
        "IDEMPOTENCY_KEY_REQUIRED"
      )
      expect(await messagesWith(to)).toEqual([])
    })

    it("accepts a 128-character key and refuses a 129-character one (400)", async () => {
      const stem = `${Date.now()}-`
      const key128 = stem + "k".repeat(128 - stem.length)
      const key129 = stem + "k".repeat(129 - stem.length)
      expect(key128).toHaveLength(128)
      await readJson<CreationAck>(await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "128" }, key128), 202)
      const error = await expectError(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "129" }, key129),
        400,
        "INVALID_REQUEST"
      )
      expect(error.message.toLowerCase()).toContain("idempotency-key")
    })

    it("creates exactly one action for 20 concurrent requests with the same key", async () => {
      const to = freshPhone()
      const key = idem()
      const payload = { to, fromNumberSid: PN1, body: "concurrent" }
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => sendMessage(demo.keys.live, payload, key))
      )
      const ids = new Set<string>()
      let fresh = 0
      for (const response of responses) {
        if (response.status === 202) {
          if (response.headers.get("idempotent-replayed") === null) fresh++
          ids.add((await readJson<CreationAck>(response, 202)).id)
        } else {
          await expectError(response, 409, "ACTION_PROCESSING")
        }
      }
      expect(ids.size).toBe(1)
      expect(fresh).toBe(1)
      const [id] = [...ids]
      // a retry afterwards replays the one action
      const retry = await sendMessage(demo.keys.live, payload, key)
      expect(retry.headers.get("idempotent-replayed")).toBe("true")
      expect((await readJson<CreationAck>(retry, 202)).id).toBe(id)
      expect((await messagesWith(to)).map((m) => m.id)).toEqual([id])
    })
  })

  describe("templates", () => {
    it("lists at most 200 templates, ordered by name, with the ones added by the CLI", async () => {
      const page = await readJson<Page<TemplateItem>>(await server.fetch("/api/v1/templates", { key: demo.keys.live }), 200)
      expect(page.items.length).toBeLessThanOrEqual(200)
      const names = page.items.map((t) => t.name)
      expect(names).toEqual([...names].sort())
      expect(names).toEqual([
        "Appointment reminder",
        "Birthday greeting",
        "Follow-up",
        "Shoe size check",
        "Welcome",
        "Zebra crossing notice"
      ])
      const birthday = page.items.find((t) => t.id === added.birthday)
      expect(birthday).toMatchObject({ name: "Birthday greeting", body: "Happy birthday, ${Leads.First Name}!" })
      for (const t of page.items) expect(t.crmId.length).toBeGreaterThan(0)
    })

    it("merges ${Leads.First Name} from the linked record", async () => {
      const reminder = demo.templates.find((t) => t.name === "Appointment reminder")
      expect(reminder).toBeDefined()
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          templateUuid: reminder?.id,
          record: { module: "Leads", id: "5001" }
        }),
        202
      )
      const record = await readJson<ActionRecord>(await getMessage(ack.id), 200)
      expect(record.body).toBe("Hi Ada, a reminder of your appointment tomorrow.")
      expect(record.record).toEqual({ id: "5001", name: "Ada Lovelace" })
      expect(record.linkedRecords).toContainEqual({ module: "Leads", id: "5001", name: "Ada Lovelace" })

      const birthday = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          templateUuid: added.birthday,
          record: { module: "Leads", id: "5002" }
        }),
        202
      )
      expect((await readJson<ActionRecord>(await getMessage(birthday.id), 200)).body).toBe("Happy birthday, Alan!")
    })

    it("refuses a placeholder it cannot fill with 400 naming it", async () => {
      const shoe = await expectError(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          templateUuid: added.shoeSize,
          record: { module: "Leads", id: "5001" }
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(shoe.message).toContain("${Leads.Shoe Size}")
      // no record linked, and a record of another module
      for (const record of [undefined, { module: "Contacts", id: "6001" }]) {
        const error = await expectError(
          await sendMessage(demo.keys.live, {
            to: freshPhone(),
            fromNumberSid: PN1,
            templateUuid: added.birthday,
            ...(record === undefined ? {} : { record })
          }),
          400,
          "INVALID_REQUEST"
        )
        expect(error.message).toContain("${Leads.First Name}")
      }
      // test keys run the same checks
      await expectError(
        await sendMessage(demo.keys.test, { to: freshPhone(), fromNumberSid: PN1, templateUuid: added.shoeSize, record: { module: "Leads", id: "5001" } }),
        400,
        "INVALID_REQUEST"
      )
    })

    it("refuses an unknown template, body and template together, and an unknown record", async () => {
      const unknown = await expectError(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          templateUuid: "00000000-0000-4000-8000-00000000dead"
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(unknown.message).toContain("templateUuid")
      await expectError(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, templateUuid: added.zebra, body: "both" }),
        400,
        "INVALID_REQUEST"
      )
      const record = await expectError(
        await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: "x", record: { module: "Leads", id: "999999" } }),
        400,
        "INVALID_REQUEST"
      )
      expect(record.message).toContain("record")
    })
  })

  describe("WhatsApp", () => {
    it("needs whatsAppContentSid while the session is closed, and not after an inbound WhatsApp message", async () => {
      const customer = freshPhone()
      const bystander = freshPhone()
      const closed = await expectError(
        await sendMessage(demo.keys.live, { to: customer, fromNumberSid: WA, channel: "WhatsApp", body: "Hi!" }),
        400,
        "INVALID_REQUEST"
      )
      expect(closed.message).toContain("whatsAppContentSid")
      // an approved content template may be sent while closed
      const templated = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, {
          to: customer,
          fromNumberSid: WA,
          channel: "WhatsApp",
          body: "Hi!",
          whatsAppContentSid: CONTENT_SID,
          whatsAppContentVariables: { "{{1}}": "Ada" }
        }),
        202
      )
      expect(templated.status).toBe("accepted")

      await server.adminJson<unknown>([
        "inbound",
        "--org",
        demo.orgId,
        "--from",
        customer,
        "--to",
        WA_PHONE,
        "--body",
        "Hello there",
        "--channel",
        "WhatsApp"
      ])
      const open = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to: customer, fromNumberSid: WA, channel: "WhatsApp", body: "Hi!" }),
        202
      )
      expect(open.status).toBe("accepted")
      const record = await readJson<ActionRecord>(await getMessage(open.id), 200)
      expect(record).toMatchObject({ type: "WhatsApp", from: WA_PHONE, to: customer, body: "Hi!" })

      // the session is per counterpart
      const other = await expectError(
        await sendMessage(demo.keys.live, { to: bystander, fromNumberSid: WA, channel: "WhatsApp", body: "Hi!" }),
        400,
        "INVALID_REQUEST"
      )
      expect(other.message).toContain("whatsAppContentSid")
    }, CLI_HEAVY)

    it("refuses WhatsApp from a number not connected to it, and scheduled WhatsApp", async () => {
      const sms = await expectError(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: PN1,
          channel: "WhatsApp",
          body: "x",
          whatsAppContentSid: CONTENT_SID
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(sms.message).toContain("fromNumberSid")
      const scheduled = await expectError(
        await sendMessage(demo.keys.live, {
          to: freshPhone(),
          fromNumberSid: WA,
          channel: "WhatsApp",
          body: "x",
          whatsAppContentSid: CONTENT_SID,
          scheduledFor: inFuture(10 * MINUTE)
        }),
        400,
        "INVALID_REQUEST"
      )
      expect(scheduled.message).toContain("scheduledFor")
    })
  })

  // Last: these change the demo organisation's settings (and restore them).
  describe("allowances and AI settings (live keys only)", () => {
    const text = () => ({ to: freshPhone(), fromNumberSid: PN1, body: "allowance" })
    const aiCall = () => ({ to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" })
    const update = (...flags: ReadonlyArray<string>) =>
      server.adminJson<unknown>(["orgs", "update", demo.orgId, ...flags])

    it("answers 403 ALLOWANCE_EXHAUSTED to live keys when an allowance is used up", async () => {
      await update("--sms-allowance", "0", "--call-allowance", "0")
      await expectError(await sendMessage(demo.keys.live, text()), 403, "ALLOWANCE_EXHAUSTED")
      await expectError(await startCall(demo.keys.live, aiCall()), 403, "ALLOWANCE_EXHAUSTED")
      // test keys are not subject to allowances
      expect((await readJson<CreationAck>(await sendMessage(demo.keys.test, text()), 202)).test).toBe(true)
      expect((await readJson<CreationAck>(await startCall(demo.keys.test, aiCall()), 202)).test).toBe(true)

      await update("--sms-allowance", "unlimited", "--call-allowance", "unlimited")
      expect((await readJson<CreationAck>(await sendMessage(demo.keys.live, text()), 202)).test).toBe(false)
      expect((await readJson<CreationAck>(await startCall(demo.keys.live, aiCall()), 202)).test).toBe(false)
    }, CLI_HEAVY)

    it("answers 403 AI_CALLS_DISABLED to live keys while AI calls are off", async () => {
      await update("--ai-calls", "off")
      await expectError(await startCall(demo.keys.live, aiCall()), 403, "AI_CALLS_DISABLED")
      // texts are not affected, and test keys simulate as before
      await readJson<CreationAck>(await sendMessage(demo.keys.live, text()), 202)
      expect((await readJson<CreationAck>(await startCall(demo.keys.test, aiCall()), 202)).test).toBe(true)

      await update("--ai-calls", "on")
      await readJson<CreationAck>(await startCall(demo.keys.live, aiCall()), 202)
    }, CLI_HEAVY)
  })
})
