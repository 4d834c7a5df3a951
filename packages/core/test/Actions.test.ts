// Creation and reading of texts and AI calls through the Actions service, and
// the resource lists of the Directory: test keys simulate, live keys write the
// CRM action and its event; every resource, capability, template, WhatsApp
// session, allowance, AI setting and CRM permission rule of the contract.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema, TestClock } from "effect"
import {
  ActionStore,
  ALL_SCOPES,
  Actions,
  AllowancePeriods,
  ApiKeys,
  CreateAiCallRequest,
  CreateMessageRequest,
  Crm,
  Demo,
  Directory,
  type Scope,
  Organisations
} from "../src/internal.js"
import { callerFor, CoreTestLayer, crmActions, events, failureOf, SALES, SALES_LINE, seedDemo, SUPPORT, WHATSAPP, WHATSAPP_LINE } from "./harness.js"

const RECIPIENT = "+14155550123"
const REMINDER_TEMPLATE = "6f1c2a3e-0000-4000-8000-000000000001"
const FOLLOW_UP_TEMPLATE = "6f1c2a3e-0000-4000-8000-000000000002"
const CONTENT_SID = "HX0123456789abcdef0123456789abcdef"

/** Request bodies go through the contract's schema, as the server decodes them. */
const message = (fields: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(CreateMessageRequest)({ to: RECIPIENT, fromNumberSid: SALES, body: "hello", ...fields })

const aiCall = (fields: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(CreateAiCallRequest)({
    to: RECIPIENT,
    fromNumberSid: SALES,
    botId: "bot_sales",
    mode: "follow_script",
    ...fields
  })

/** Mints a key of the demo organisation with restrictions. */
const restrictedKey = (
  orgId: string,
  mode: "test" | "live",
  restriction: { readonly numberSids?: ReadonlyArray<string>; readonly botIds?: ReadonlyArray<string> },
  scopes: ReadonlyArray<Scope> = ALL_SCOPES
) =>
  Effect.map(
    Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
      keys.create({
        orgId,
        name: "restricted",
        mode,
        scopes,
        numberSids: restriction.numberSids ?? [],
        botIds: restriction.botIds ?? [],
        expiresAt: null
      })),
    (created) => created.token
  )

/** Replaces the connected CRM account (takes effect for every key on its next request). */
const connectAccount = (
  orgId: string,
  account: { readonly id: string; readonly name: string; readonly permissions: Partial<Crm.CrmPermissions> }
) =>
  Effect.flatMap(Crm.Crm, (crm) =>
    crm.setConnection(orgId, {
      state: "connected",
      account: { id: account.id, name: account.name, permissions: { ...Crm.FULL_PERMISSIONS, ...account.permissions } }
    }))

const DEMO_ACCOUNT = { id: "crm_user_demo", name: "Dana Demo" }

/** An inbound WhatsApp message from `counterpart` to `line`, received now. */
const inboundWhatsApp = (orgId: string, line: string, counterpart: string, at: string): ActionStore.NewAction => ({
  orgId,
  kind: "message",
  type: "WhatsApp",
  direction: "Inbound",
  status: "Received",
  line,
  counterpart,
  fromNumberSid: null,
  body: "Hi, any news?",
  mediaUrls: [],
  ...ActionStore.NO_SENDING_DETAILS,
  read: null,
  at,
  scheduledFor: null,
  dueAt: Date.parse(at),
  owner: null,
  ...ActionStore.UNTOUCHED,
  modified: at
})

const nowIso = Effect.map(TestClock.currentTimeMillis, (ms) => new Date(ms).toISOString())

describe("test keys simulate", () => {
  it.effect("a text answers test_ id and test: true, writes no CRM action and no event", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(caller, message(), "k1")
      expect(ack.id.startsWith("test_")).toBe(true)
      expect(ack.test).toBe(true)
      expect(ack.status).toBe("accepted")
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
      expect(yield* events(demo.orgId)).toHaveLength(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an AI call answers test_ id and test: true, writes no CRM action and no event", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createAiCall(caller, aiCall(), "k1")
      expect(ack.id.startsWith("test_")).toBe(true)
      expect(ack.test).toBe(true)
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
      expect(yield* events(demo.orgId)).toHaveLength(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a scheduled simulated text is acknowledged as scheduled", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const at = new Date((yield* TestClock.currentTimeMillis) + 3_600_000).toISOString()
      const { ack } = yield* actions.createMessage(caller, message({ scheduledFor: at }), "k1")
      expect(ack.status).toBe("scheduled")
      expect(ack.test).toBe(true)
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("live keys act", () => {
  it.effect("a text creates a Queued CRM action and a message.queued event", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(caller, message({ body: "live hello" }), "k1")
      expect(ack.test).toBe(false)
      expect(ack.status).toBe("accepted")
      expect(ack.id).toMatch(/^[1-9]\d*$/)
      const stored = yield* crmActions(demo.orgId)
      expect(stored.map((a) => a.id)).toEqual([ack.id])
      expect(stored[0]).toMatchObject({
        kind: "message",
        type: "SMS",
        direction: "Outbound",
        status: "Queued",
        line: SALES_LINE,
        counterpart: RECIPIENT,
        body: "live hello",
        botId: null
      })
      const emitted = yield* events(demo.orgId)
      expect(emitted.map((e) => e.type)).toEqual(["message.queued"])
      const payload: unknown = JSON.parse(emitted[0]!.payload)
      expect(payload).toMatchObject({ type: "message.queued", data: { id: ack.id, status: "Queued" } })
      const record = yield* actions.get(caller, "message", ack.id)
      expect(record).toMatchObject({ id: ack.id, status: "Queued", type: "SMS", botId: null, body: "live hello" })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an AI call creates a Queued Call action with its bot and an ai_call.queued event", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createAiCall(
        caller,
        aiCall({ botId: "bot_support", mode: "deliver_specific_message", purposeMessage: "Confirm Tuesday." }),
        "k1"
      )
      expect(ack.test).toBe(false)
      const stored = yield* crmActions(demo.orgId)
      expect(stored).toHaveLength(1)
      expect(stored[0]).toMatchObject({
        id: ack.id,
        kind: "ai_call",
        type: "Call",
        status: "Queued",
        botId: "bot_support",
        mode: "deliver_specific_message",
        purposeMessage: "Confirm Tuesday."
      })
      expect((yield* events(demo.orgId)).map((e) => e.type)).toEqual(["ai_call.queued"])
      const record = yield* actions.get(caller, "ai_call", ack.id)
      expect(record).toMatchObject({ id: ack.id, type: "Call", botId: "bot_support", status: "Queued" })
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("sender numbers named in a request", () => {
  it.effect("an unknown fromNumberSid is InvalidRequest naming fromNumberSid (text and call)", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const onText = yield* failureOf(actions.createMessage(caller, message({ fromNumberSid: "PN_nope" }), "k1"))
      expect(onText._tag).toBe("InvalidRequest")
      expect(onText.message).toMatch(/^fromNumberSid:/)
      const onCall = yield* failureOf(actions.createAiCall(caller, aiCall({ fromNumberSid: "PN_nope" }), "k2"))
      expect(onCall._tag).toBe("InvalidRequest")
      expect(onCall.message).toMatch(/^fromNumberSid:/)
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("another organisation's number is InvalidRequest, not ResourceDenied", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* Demo.seedDemo("org_other")
      yield* organisations.upsertNumber({
        orgId: "org_other", sid: "PN_other_only", phoneNumber: "+14155550777", friendlyName: "Other",
        sms: true, voice: true, whatsApp: false, voiceOutboundBotId: null
      })
      const caller = yield* callerFor(demo.keys.live)
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(caller, message({ fromNumberSid: "PN_other_only" }), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/fromNumberSid/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a number outside the key's restriction is ResourceDenied; the permitted one works", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const token = yield* restrictedKey(demo.orgId, "live", { numberSids: [SALES] })
      const caller = yield* callerFor(token)
      const actions = yield* Actions.Actions
      const denied = yield* failureOf(actions.createMessage(caller, message({ fromNumberSid: SUPPORT }), "k1"))
      expect(denied._tag).toBe("ResourceDenied")
      expect(denied.message).toMatch(/fromNumberSid/)
      const deniedCall = yield* failureOf(actions.createAiCall(caller, aiCall({ fromNumberSid: SUPPORT }), "k2"))
      expect(deniedCall._tag).toBe("ResourceDenied")
      const { ack } = yield* actions.createMessage(caller, message({ fromNumberSid: SALES }), "k3")
      expect(ack.test).toBe(false)
      expect((yield* crmActions(demo.orgId)).map((a) => a.id)).toEqual([ack.id])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("WhatsApp from a number without WhatsApp is InvalidRequest saying so", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(
          caller,
          message({ channel: "WhatsApp", whatsAppContentSid: CONTENT_SID }),
          "k1"
        )
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^fromNumberSid:.*WhatsApp/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an AI call from the WhatsApp-only (no voice) number is InvalidRequest saying so", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const error = yield* failureOf((yield* Actions.Actions).createAiCall(caller, aiCall({ fromNumberSid: WHATSAPP }), "k1"))
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^fromNumberSid:.*voice/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an SMS from a number without SMS is InvalidRequest saying so", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.upsertNumber({
        orgId: demo.orgId, sid: "PN_voice_only", phoneNumber: "+14155550188", friendlyName: "Voice only",
        sms: false, voice: true, whatsApp: false, voiceOutboundBotId: null
      })
      const caller = yield* callerFor(demo.keys.test)
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(caller, message({ fromNumberSid: "PN_voice_only" }), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^fromNumberSid:.*SMS/)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("bots named in a request", () => {
  it.effect("an unknown, inactive or inbound bot is InvalidRequest naming botId", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.upsertBot({
        orgId: demo.orgId, id: "bot_inbound", name: "Receptionist", description: null, active: true,
        direction: "inbound"
      })
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      for (const [i, botId] of ["bot_nope", "bot_legacy", "bot_inbound"].entries()) {
        const error = yield* failureOf(actions.createAiCall(caller, aiCall({ botId }), `k${i}`))
        expect(error._tag, botId).toBe("InvalidRequest")
        expect(error.message, botId).toMatch(/^botId:/)
      }
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a bot outside the key's restriction is ResourceDenied naming botId; the permitted one works", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const token = yield* restrictedKey(demo.orgId, "live", { botIds: ["bot_sales"] })
      const caller = yield* callerFor(token)
      const actions = yield* Actions.Actions
      const error = yield* failureOf(actions.createAiCall(caller, aiCall({ botId: "bot_support" }), "k1"))
      expect(error._tag).toBe("ResourceDenied")
      expect(error.message).toMatch(/botId/)
      const { ack } = yield* actions.createAiCall(caller, aiCall({ botId: "bot_sales" }), "k2")
      expect(ack.test).toBe(false)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("templates and merge", () => {
  it.effect("merges ${Leads.First Name} from the linked Leads record", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(
        caller,
        message({ body: undefined, templateUuid: REMINDER_TEMPLATE, record: { module: "Leads", id: "5001" } }),
        "k1"
      )
      const record = yield* actions.get(caller, "message", ack.id)
      expect(record.body).toBe("Hi Ada, a reminder of your appointment tomorrow.")
      expect(record.record).toEqual({ id: "5001", name: "Ada Lovelace" })
      expect(record.linkedRecords).toEqual([{ module: "Leads", id: "5001", name: "Ada Lovelace" }])
      const other = yield* actions.createMessage(
        caller,
        message({ body: undefined, templateUuid: REMINDER_TEMPLATE, record: { module: "Leads", id: "5002" } }),
        "k2"
      )
      expect((yield* actions.get(caller, "message", other.ack.id)).body).toBe(
        "Hi Alan, a reminder of your appointment tomorrow."
      )
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a template without placeholders needs no record", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(
        caller,
        message({ body: undefined, templateUuid: FOLLOW_UP_TEMPLATE }),
        "k1"
      )
      expect((yield* actions.get(caller, "message", ack.id)).body).toBe(
        "Thanks for your time today. Reply here if you have any questions."
      )
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an unresolvable placeholder (no record, or a record of another module) is InvalidRequest naming it", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const noRecord = yield* failureOf(
        actions.createMessage(caller, message({ body: undefined, templateUuid: REMINDER_TEMPLATE }), "k1")
      )
      expect(noRecord._tag).toBe("InvalidRequest")
      expect(noRecord.message).toContain("${Leads.First Name}")
      const otherModule = yield* failureOf(
        actions.createMessage(
          caller,
          message({ body: undefined, templateUuid: REMINDER_TEMPLATE, record: { module: "Contacts", id: "6001" } }),
          "k2"
        )
      )
      expect(otherModule._tag).toBe("InvalidRequest")
      expect(otherModule.message).toContain("${Leads.First Name}")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a placeholder for a field the record lacks is InvalidRequest naming it", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const crm = yield* Crm.Crm
      yield* crm.upsertTemplate({
        orgId: demo.orgId, id: "tpl-company", crmId: "9000009", recordType: "Leads", name: "Company",
        body: "Hello ${Leads.First Name} of ${Leads.Company}"
      })
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const error = yield* failureOf(
        actions.createMessage(
          caller,
          message({ body: undefined, templateUuid: "tpl-company", record: { module: "Leads", id: "5002" } }),
          "k1"
        )
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toContain("${Leads.Company}")
      expect(error.message).not.toContain("${Leads.First Name}")
      // The record that has the field merges fine.
      yield* actions.createMessage(
        caller,
        message({ body: undefined, templateUuid: "tpl-company", record: { module: "Leads", id: "5001" } }),
        "k2"
      )
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an unknown templateUuid or record is InvalidRequest naming the field", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const template = yield* failureOf(
        actions.createMessage(caller, message({ body: undefined, templateUuid: "no-such-template" }), "k1")
      )
      expect(template._tag).toBe("InvalidRequest")
      expect(template.message).toMatch(/^templateUuid:/)
      const record = yield* failureOf(
        actions.createMessage(caller, message({ record: { module: "Leads", id: "999999" } }), "k2")
      )
      expect(record._tag).toBe("InvalidRequest")
      expect(record.message).toMatch(/^record/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("another organisation's template is unknown here", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const crm = yield* Crm.Crm
      yield* Demo.seedDemo("org_other")
      yield* crm.upsertTemplate({
        orgId: "org_other", id: "tpl-other", crmId: "1", recordType: null, name: "Other", body: "Other org"
      })
      const caller = yield* callerFor(demo.keys.test)
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(caller, message({ body: undefined, templateUuid: "tpl-other" }), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^templateUuid:/)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("WhatsApp 24-hour session", () => {
  it.effect("closed session: without whatsAppContentSid InvalidRequest, with it accepted", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const closed = yield* failureOf(
        actions.createMessage(caller, message({ fromNumberSid: WHATSAPP, channel: "WhatsApp" }), "k1")
      )
      expect(closed._tag).toBe("InvalidRequest")
      expect(closed.message).toMatch(/^whatsAppContentSid:/)
      const { ack } = yield* actions.createMessage(
        caller,
        message({
          fromNumberSid: WHATSAPP,
          channel: "WhatsApp",
          whatsAppContentSid: CONTENT_SID,
          whatsAppContentVariables: { "{{1}}": "Ada" }
        }),
        "k2"
      )
      expect(ack.status).toBe("accepted")
      const stored = yield* crmActions(demo.orgId)
      expect(stored[0]).toMatchObject({
        id: ack.id,
        type: "WhatsApp",
        line: WHATSAPP_LINE,
        whatsAppContentSid: CONTENT_SID,
        whatsAppContentVariables: { "{{1}}": "Ada" },
        scheduledFor: null
      })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an inbound WhatsApp from the recipient opens the session for 24 hours, then it closes", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const store = yield* ActionStore.ActionStore
      const actions = yield* Actions.Actions
      yield* store.insertAction(inboundWhatsApp(demo.orgId, WHATSAPP_LINE, RECIPIENT, yield* nowIso))
      const freeText = message({ fromNumberSid: WHATSAPP, channel: "WhatsApp", body: "Happy to help" })

      const open = yield* actions.createMessage(yield* callerFor(demo.keys.test), freeText, "k1")
      expect(open.ack.test).toBe(true)

      yield* TestClock.adjust(Duration.millis(24 * 3_600_000 - 1_000))
      const stillOpen = yield* actions.createMessage(yield* callerFor(demo.keys.test), freeText, "k2")
      expect(stillOpen.ack.status).toBe("accepted")

      yield* TestClock.adjust(Duration.seconds(1))
      const closed = yield* failureOf(actions.createMessage(yield* callerFor(demo.keys.test), freeText, "k3"))
      expect(closed._tag).toBe("InvalidRequest")
      expect(closed.message).toMatch(/^whatsAppContentSid:/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the session is per recipient and per line", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const store = yield* ActionStore.ActionStore
      const organisations = yield* Organisations.Organisations
      yield* organisations.upsertNumber({
        orgId: demo.orgId, sid: "PN_wa_2", phoneNumber: "+14155550198", friendlyName: "WhatsApp 2",
        sms: true, voice: false, whatsApp: true, voiceOutboundBotId: null
      })
      const now = yield* nowIso
      yield* store.insertAction(inboundWhatsApp(demo.orgId, WHATSAPP_LINE, "+447700900001", now))
      yield* store.insertAction(inboundWhatsApp(demo.orgId, "+14155550198", RECIPIENT, now))
      const caller = yield* callerFor(demo.keys.test)
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(caller, message({ fromNumberSid: WHATSAPP, channel: "WhatsApp" }), "k1")
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toMatch(/^whatsAppContentSid:/)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("allowances and AI settings (live keys only)", () => {
  it.effect("smsAllowance 0: live text is AllowanceExhausted, test key unaffected", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { smsAllowance: 0 })
      const actions = yield* Actions.Actions
      const error = yield* failureOf(actions.createMessage(yield* callerFor(demo.keys.live), message(), "k1"))
      expect(error._tag).toBe("AllowanceExhausted")
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
      const { ack } = yield* actions.createMessage(yield* callerFor(demo.keys.test), message(), "k2")
      expect(ack.test).toBe(true)
      // AI calls draw on their own allowance.
      const call = yield* actions.createAiCall(yield* callerFor(demo.keys.live), aiCall(), "k3")
      expect(call.ack.test).toBe(false)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an allowance is per calendar month in the organisation's time zone: used up, then whole again at the month's start there", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { callAllowance: 1, timezone: "Europe/Berlin" })
      // January in Berlin; the one call of the month is used.
      yield* TestClock.setTime(Date.parse("2027-01-15T12:00:00Z"))
      const january = AllowancePeriods.periodOf(yield* TestClock.currentTimeMillis, "Europe/Berlin")
      expect(january).toBe("2027-01")
      expect(yield* organisations.takeAllowance(demo.orgId, "call", 1, january)).toBe(true)
      expect(yield* organisations.takeAllowance(demo.orgId, "call", 1, january)).toBe(false)
      expect(yield* organisations.usage(demo.orgId, january)).toEqual({ period: "2027-01", sms: 0, calls: 1 })
      const actions = yield* Actions.Actions
      // 23:59 on 31 January in Berlin (22:59 UTC): still January there.
      yield* TestClock.setTime(Date.parse("2027-01-31T22:59:00Z"))
      const error = yield* failureOf(actions.createAiCall(yield* callerFor(demo.keys.live), aiCall(), "k1"))
      expect(error._tag).toBe("AllowanceExhausted")
      expect(error.message).toContain("this month")
      // Midnight in Berlin, 23:00 UTC: February there, and the allowance is whole again.
      yield* TestClock.setTime(Date.parse("2027-01-31T23:00:00Z"))
      const call = yield* actions.createAiCall(yield* callerFor(demo.keys.live), aiCall(), "k2")
      expect(call.ack.test).toBe(false)
      expect(yield* organisations.usage(demo.orgId, "2027-02")).toEqual({ period: "2027-02", sms: 0, calls: 0 })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("callAllowance 0: live AI call is AllowanceExhausted, test key unaffected", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { callAllowance: 0 })
      const actions = yield* Actions.Actions
      const error = yield* failureOf(actions.createAiCall(yield* callerFor(demo.keys.live), aiCall(), "k1"))
      expect(error._tag).toBe("AllowanceExhausted")
      const { ack } = yield* actions.createAiCall(yield* callerFor(demo.keys.test), aiCall(), "k2")
      expect(ack.test).toBe(true)
      const text = yield* actions.createMessage(yield* callerFor(demo.keys.live), message(), "k3")
      expect(text.ack.test).toBe(false)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("AI calls disabled: live AI call is AiCallsDisabled, test key simulates", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { aiCallsEnabled: false })
      const actions = yield* Actions.Actions
      const error = yield* failureOf(actions.createAiCall(yield* callerFor(demo.keys.live), aiCall(), "k1"))
      expect(error._tag).toBe("AiCallsDisabled")
      expect(yield* crmActions(demo.orgId)).toHaveLength(0)
      const { ack } = yield* actions.createAiCall(yield* callerFor(demo.keys.test), aiCall(), "k2")
      expect(ack.test).toBe(true)
      // Texts are not AI calls.
      const text = yield* actions.createMessage(yield* callerFor(demo.keys.live), message(), "k3")
      expect(text.ack.test).toBe(false)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("CRM permissions of the connected account", () => {
  it.effect("actionsWrite false: creation (text, call, test or live) and cancellation are CrmPermissionDenied", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      const scheduled = new Date((yield* TestClock.currentTimeMillis) + 3_600_000).toISOString()
      const { ack } = yield* actions.createMessage(
        yield* callerFor(demo.keys.live),
        message({ scheduledFor: scheduled }),
        "k0"
      )
      yield* connectAccount(demo.orgId, { ...DEMO_ACCOUNT, permissions: { actionsWrite: false } })
      const live = yield* callerFor(demo.keys.live)
      const test = yield* callerFor(demo.keys.test)
      const failures = [
        yield* failureOf(actions.createMessage(live, message(), "k1")),
        yield* failureOf(actions.createAiCall(live, aiCall(), "k2")),
        yield* failureOf(actions.createMessage(test, message(), "k3")),
        yield* failureOf(actions.cancel(live, "message", ack.id))
      ]
      expect(failures.map((e) => e._tag)).toEqual(Array(4).fill("CrmPermissionDenied"))
      expect((yield* crmActions(demo.orgId)).map((a) => [a.id, a.status])).toEqual([[ack.id, "Queued"]])
      // Reading is still allowed.
      expect((yield* actions.get(live, "message", ack.id)).id).toBe(ack.id)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("linking a record of a module the account cannot read is CrmPermissionDenied", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* connectAccount(demo.orgId, { ...DEMO_ACCOUNT, permissions: { modules: ["Contacts"] } })
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const error = yield* failureOf(
        actions.createMessage(caller, message({ record: { module: "Leads", id: "5001" } }), "k1")
      )
      expect(error._tag).toBe("CrmPermissionDenied")
      expect(error.message).toMatch(/record\.module/)
      const onCall = yield* failureOf(
        actions.createAiCall(caller, aiCall({ record: { module: "Leads", id: "5001" } }), "k2")
      )
      expect(onCall._tag).toBe("CrmPermissionDenied")
      // The readable module links fine.
      const { ack } = yield* actions.createMessage(caller, message({ record: { module: "Contacts", id: "6001" } }), "k3")
      expect((yield* actions.get(caller, "message", ack.id)).record).toEqual({ id: "6001", name: "Katherine Johnson" })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("actionsView none: get is CrmPermissionDenied", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(yield* callerFor(demo.keys.live), message(), "k1")
      yield* connectAccount(demo.orgId, { ...DEMO_ACCOUNT, permissions: { actionsView: "none" } })
      const error = yield* failureOf(actions.get(yield* callerFor(demo.keys.live), "message", ack.id))
      expect(error._tag).toBe("CrmPermissionDenied")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("templates false: merging a template is CrmPermissionDenied", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* connectAccount(demo.orgId, { ...DEMO_ACCOUNT, permissions: { templates: false } })
      const error = yield* failureOf(
        (yield* Actions.Actions).createMessage(
          yield* callerFor(demo.keys.live),
          message({ body: undefined, templateUuid: FOLLOW_UP_TEMPLATE }),
          "k1"
        )
      )
      expect(error._tag).toBe("CrmPermissionDenied")
      expect(error.message).toMatch(/templateUuid/)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("actionsView own: other owners' actions read as NotFound, own ones are found", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      // Created while Dana is connected: owned by Dana.
      const danas = yield* actions.createMessage(yield* callerFor(demo.keys.live), message(), "k1")
      // Reconnect as Olga, who sees only her own actions; she creates one.
      yield* connectAccount(demo.orgId, { id: "crm_user_olga", name: "Olga Own", permissions: { actionsView: "own" } })
      const olga = yield* callerFor(demo.keys.live)
      const olgas = yield* actions.createMessage(olga, message({ body: "from Olga" }), "k2")
      const hidden = yield* failureOf(actions.get(olga, "message", danas.ack.id))
      expect(hidden._tag).toBe("NotFound")
      expect((yield* actions.get(olga, "message", olgas.ack.id)).owner).toEqual({ id: "crm_user_olga", name: "Olga Own" })
      // With "all" the same action is visible.
      yield* connectAccount(demo.orgId, { id: "crm_user_olga", name: "Olga Own", permissions: { actionsView: "all" } })
      expect((yield* actions.get(yield* callerFor(demo.keys.live), "message", danas.ack.id)).id).toBe(danas.ack.id)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("reading actions", () => {
  it.effect("another organisation's action id is NotFound, like a missing one", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const other = yield* Demo.seedDemo("org_other")
      const actions = yield* Actions.Actions
      const otherCaller = yield* callerFor(other.keys.live)
      const { ack } = yield* actions.createMessage(otherCaller, message(), "k1")
      // The other organisation reads it...
      expect((yield* actions.get(otherCaller, "message", ack.id)).id).toBe(ack.id)
      // ...the demo organisation does not, and cannot tell it from a missing id.
      const caller = yield* callerFor(demo.keys.live)
      const foreign = yield* failureOf(actions.get(caller, "message", ack.id))
      expect(foreign._tag).toBe("NotFound")
      const missing = yield* failureOf(actions.get(caller, "message", "987654"))
      expect(missing._tag).toBe("NotFound")
      expect(foreign.message.replace(ack.id, "ID")).toBe(missing.message.replace("987654", "ID"))
      const cancel = yield* failureOf(actions.cancel(caller, "message", ack.id))
      expect(cancel._tag).toBe("NotFound")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a message id read as an AI call (and the reverse) is NotFound", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const text = yield* actions.createMessage(caller, message(), "k1")
      const call = yield* actions.createAiCall(caller, aiCall(), "k2")
      expect((yield* failureOf(actions.get(caller, "ai_call", text.ack.id)))._tag).toBe("NotFound")
      expect((yield* failureOf(actions.get(caller, "message", call.ack.id)))._tag).toBe("NotFound")
      expect((yield* actions.get(caller, "message", text.ack.id)).id).toBe(text.ack.id)
      expect((yield* actions.get(caller, "ai_call", call.ack.id)).id).toBe(call.ack.id)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a key restricted to other numbers cannot read an action on a line it may not use", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(yield* callerFor(demo.keys.live), message({ fromNumberSid: SALES }), "k1")
      const supportOnly = yield* callerFor(yield* restrictedKey(demo.orgId, "live", { numberSids: [SUPPORT] }))
      expect((yield* failureOf(actions.get(supportOnly, "message", ack.id)))._tag).toBe("NotFound")
      const salesOnly = yield* callerFor(yield* restrictedKey(demo.orgId, "live", { numberSids: [SALES] }))
      expect((yield* actions.get(salesOnly, "message", ack.id)).id).toBe(ack.id)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("Directory lists", () => {
  it.effect("templates: at most 200, ordered by name", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const crm = yield* Crm.Crm
      const names = Array.from({ length: 205 }, (_, i) => `Template ${String(i).padStart(3, "0")}`)
      // Insert in a scrambled order (7 is coprime with 205).
      for (let i = 0; i < names.length; i++) {
        const name = names[(i * 7) % names.length]!
        yield* crm.upsertTemplate({
          orgId: demo.orgId, id: `tpl-${name}`, crmId: String(100_000 + i), recordType: null, name, body: name
        })
      }
      const caller = yield* callerFor(demo.keys.live)
      const listed = yield* (yield* Directory.Directory).templates(caller)
      expect(listed).toHaveLength(200)
      // The demo's three plus 205: the first 200 by name.
      const expected = ["Appointment reminder", "Follow-up", ...names.slice(0, 198)]
      expect(listed.map((t) => t.name)).toEqual(expected)
      expect(listed[0]).toMatchObject({ id: REMINDER_TEMPLATE, crmId: "9000001", recordType: "Leads" })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("templates: only the organisation's own, and CrmPermissionDenied without the templates permission", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* Demo.seedDemo("org_other")
      yield* (yield* Crm.Crm).upsertTemplate({
        orgId: "org_other", id: "tpl-other", crmId: "1", recordType: null, name: "AAA other", body: "x"
      })
      const directory = yield* Directory.Directory
      const listed = yield* directory.templates(yield* callerFor(demo.keys.live))
      expect(listed.map((t) => t.name)).toEqual(["Appointment reminder", "Follow-up", "Welcome"])
      yield* connectAccount(demo.orgId, { ...DEMO_ACCOUNT, permissions: { templates: false } })
      const error = yield* failureOf(directory.templates(yield* callerFor(demo.keys.live)))
      expect(error._tag).toBe("CrmPermissionDenied")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("numbers follow the key's restriction; empty restriction lists all", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const directory = yield* Directory.Directory
      const all = yield* directory.numbers(yield* callerFor(demo.keys.live))
      expect(all.map((n) => n.sid).sort()).toEqual([SALES, SUPPORT, WHATSAPP])
      const sales = all.find((n) => n.sid === SALES)
      expect(sales).toMatchObject({
        phoneNumber: SALES_LINE,
        friendlyName: "Sales line",
        capabilities: { sms: true, voice: true, whatsapp: false },
        voiceOutboundBotId: "bot_sales"
      })
      // WhatsApp is reported too, so that clients (the n8n From picker) can offer the right lines.
      expect(all.find((n) => n.sid === WHATSAPP)?.capabilities.whatsapp).toBe(true)
      const restricted = yield* callerFor(yield* restrictedKey(demo.orgId, "test", { numberSids: [SUPPORT, WHATSAPP] }))
      expect((yield* directory.numbers(restricted)).map((n) => n.sid).sort()).toEqual([SUPPORT, WHATSAPP])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("bots: only active outbound bots, narrowed by the key's restriction", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const organisations = yield* Organisations.Organisations
      yield* organisations.upsertBot({
        orgId: demo.orgId, id: "bot_inbound", name: "Receptionist", description: null, active: true,
        direction: "inbound"
      })
      const directory = yield* Directory.Directory
      const all = yield* directory.bots(yield* callerFor(demo.keys.live))
      expect(all.map((b) => b.id).sort()).toEqual(["bot_sales", "bot_support"])
      const restricted = yield* callerFor(
        yield* restrictedKey(demo.orgId, "live", { botIds: ["bot_support", "bot_legacy"] })
      )
      expect((yield* directory.bots(restricted)).map((b) => b.id)).toEqual(["bot_support"])
    }).pipe(Effect.provide(CoreTestLayer)))
})
