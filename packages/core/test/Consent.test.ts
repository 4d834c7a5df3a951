// Consent: a STOP recorded by an inbound text (or an administrator) refuses the next creation to that number
// with RECIPIENT_OPTED_OUT, for live and test keys; a text accepted before the STOP fails at dispatch instead
// of going out; START (or YES after an opt-out) lets sends through again; the keyword rules themselves.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { OptOutEventPayload } from "../src/contract/Events.js"
import * as Actions from "../src/domain/Actions.js"
import * as Consent from "../src/domain/Consent.js"
import * as Dispatch from "../src/domain/Dispatch.js"
import * as Inbound from "../src/domain/Inbound.js"
import * as ProviderReports from "../src/domain/ProviderReports.js"
import * as ActionStore from "../src/ports/ActionStore.js"
import * as EventOutbox from "../src/ports/EventOutbox.js"
import * as OptOuts from "../src/ports/OptOuts.js"
import * as Organisations from "../src/ports/Organisations.js"
import * as Simulator from "../src/simulator/Simulator.js"
import { callerFor, CoreTestLayer, seedDemo } from "./harness.js"

const TestLayer = Dispatch.layer.pipe(
  Layer.provideMerge(Simulator.layerProviders),
  Layer.provideMerge(ProviderReports.layer),
  Layer.provideMerge(Simulator.SimulatorStep.layer(1_000)),
  Layer.provideMerge(CoreTestLayer)
)

const CUSTOMER = "+14155550123"

const setup = Effect.gen(function*() {
  const demo = yield* seedDemo
  const live = yield* callerFor(demo.keys.live)
  const test = yield* callerFor(demo.keys.test)
  const actions = yield* Actions.Actions
  const inbound = yield* Inbound.Inbound
  const number = demo.numbers[0]!
  const whatsAppNumber = demo.numbers.find((n) => n.whatsApp)!
  let n = 0
  const text = (caller = live, to = CUSTOMER, channel: "SMS" | "WhatsApp" = "SMS", scheduledFor?: string) =>
    actions.createMessage(
      caller,
      { to, fromNumberSid: channel === "WhatsApp" ? whatsAppNumber.sid : number.sid, body: "Your appointment is tomorrow", channel, ...(scheduledFor === undefined ? {} : { scheduledFor }) },
      `consent-${++n}`
    )
  const call = (caller = live) =>
    actions.createAiCall(
      caller,
      { to: CUSTOMER, fromNumberSid: number.sid, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Hi" },
      `consent-${++n}`
    )
  const reply = (body: string, sid = `SM${++n}`) =>
    inbound.receive({ orgId: demo.orgId, from: CUSTOMER, to: number.phoneNumber, body, channel: "SMS", sid })
  return { demo, live, test, actions, text, call, reply }
})

describe("Consent keywords", () => {
  it("matches the whole text, trimmed, in any case, ignoring trailing punctuation", () => {
    const org = { optOutWords: ["Arrêt", "BAJA"] }
    for (const said of ["STOP", "stop", " Stop. ", "stop!!", "StopAll", "unsubscribe", "Cancel", "end", "QUIT", "revoke", "opt out", "Opt  Out", "optout"]) {
      expect(Consent.keywordOf(said, org), said).toBe("opt_out")
    }
    expect(Consent.keywordOf("ARRÊT", org)).toBe("opt_out")
    expect(Consent.keywordOf("baja", org)).toBe("opt_out")
    expect(Consent.keywordOf("arret", {})).toBeNull()
    for (const said of ["please stop", "STOP it", "stopping", "don't stop", ""]) expect(Consent.keywordOf(said, org), said).toBeNull()
    expect(Consent.keywordOf("start", org)).toBe("opt_in")
    expect(Consent.keywordOf("Unstop", org)).toBe("opt_in")
    expect(Consent.keywordOf("yes!", org)).toBe("opt_in_if_opted_out")
    expect(Consent.keywordOf("help", org)).toBe("help")
    expect(Consent.keywordOf("Info?", org)).toBe("help")
  })

  it("a keyword opt-out covers calls unless the organisation turned that off", () => {
    expect(Consent.keywordChannels({})).toEqual(["SMS", "WhatsApp", "Call"])
    expect(Consent.keywordChannels({ callsFollowOptOuts: false })).toEqual(["SMS", "WhatsApp"])
  })
})

describe("Consent (core)", () => {
  it.effect("STOP refuses the next text, WhatsApp and call with RECIPIENT_OPTED_OUT, for test keys too; START lifts it", () =>
    Effect.gen(function*() {
      const { call, reply, test, text } = yield* setup
      yield* text()
      yield* reply("Stop.")
      const refused = yield* Effect.flip(text())
      expect(refused._tag).toBe("RecipientOptedOut")
      expect(refused.message).toMatch(/^to: \+14155550123 opted out of SMS texts on .* by replying with an opt-out keyword \(inbound message \d+\)\.$/)
      expect((yield* Effect.flip(text(test)))._tag).toBe("RecipientOptedOut")
      expect((yield* Effect.flip(call()))._tag).toBe("RecipientOptedOut")
      expect((yield* Effect.flip(call(test)))._tag).toBe("RecipientOptedOut")
      // Another recipient is not affected.
      expect((yield* text(undefined, "+14155550124")).ack.status).toBe("accepted")
      yield* reply("START")
      expect((yield* text()).ack.status).toBe("accepted")
      expect((yield* call()).ack.status).toBe("accepted")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("YES opts back in only a number that opted out; the history keeps both changes", () =>
    Effect.gen(function*() {
      const { demo, reply, text } = yield* setup
      const optOuts = yield* OptOuts.OptOuts
      yield* reply("yes")
      expect(Option.isNone(yield* optOuts.find(demo.orgId, CUSTOMER))).toBe(true)
      yield* reply("QUIT")
      expect((yield* Effect.flip(text()))._tag).toBe("RecipientOptedOut")
      yield* reply("Yes")
      expect((yield* text()).ack.status).toBe("accepted")
      expect((yield* optOuts.history(demo.orgId, CUSTOMER)).map((c) => `${c.change} ${c.source}`)).toEqual(["removed keyword", "added keyword"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("with calls not following opt-outs, STOP stops texts but not calls", () =>
    Effect.gen(function*() {
      const { call, demo, reply, text } = yield* setup
      yield* Effect.flatMap(Organisations.Organisations, (o) => o.update(demo.orgId, { callsFollowOptOuts: false }))
      yield* reply("STOP")
      expect((yield* Effect.flip(text()))._tag).toBe("RecipientOptedOut")
      expect((yield* Effect.flip(text(undefined, CUSTOMER, "WhatsApp")))._tag).toBe("RecipientOptedOut")
      expect((yield* call()).ack.status).toBe("accepted")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a retried inbound STOP (the same carrier id) records one opt-out", () =>
    Effect.gen(function*() {
      const { demo, reply } = yield* setup
      yield* reply("STOP", "SMretry1")
      yield* reply("STOP", "SMretry1")
      const optOuts = yield* OptOuts.OptOuts
      expect((yield* optOuts.history(demo.orgId, CUSTOMER)).length).toBe(1)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a text accepted before the STOP fails at dispatch, naming the opt-out; an ordinary reply changes nothing", () =>
    Effect.gen(function*() {
      const { actions, live, reply, text } = yield* setup
      const dispatch = yield* Dispatch.Dispatch
      const before = yield* text()
      yield* reply("Thanks, see you then")
      yield* reply("STOP")
      yield* dispatch.runDue
      const record = yield* actions.get(live, "message", before.ack.id)
      expect(record.status).toBe("Failed")
      expect(record.errorMessage).toMatch(/^Not sent: \+14155550123 opted out of SMS texts on /)
    }).pipe(Effect.provide(TestLayer)))
})

describe("Keyword replies (core, embedded dispatch)", () => {
  const confirmations = (orgId: string, line: string) =>
    Effect.flatMap(ActionStore.ActionStore, (store) =>
      Effect.map(
        store.queryActions({
          orgId,
          kinds: ["message"],
          lines: null,
          ownerId: null,
          conversation: { line, counterpart: CUSTOMER },
          beforeId: null,
          limit: 50
        }),
        (found) => found.filter((a) => a.direction === "Outbound")
      ))

  it("answers with the organisation's text, else a default naming it; nothing unless Parley answers", () => {
    const org = { name: "Acme Dental", keywordReplies: "parley" as const }
    expect(Consent.keywordReply(org, "opt_out")).toBe("Acme Dental: You will receive no more messages. Reply START to opt back in.")
    expect(Consent.keywordReply(org, "help")).toBe("Acme Dental: Reply STOP to opt out, START to opt back in.")
    expect(Consent.keywordReply(org, "opt_in_if_opted_out")).toBe("Acme Dental: You will receive messages again. Reply STOP to opt out.")
    expect(Consent.keywordReply({ ...org, keywordTexts: { help: "Call us.", stop: null, start: null } }, "help")).toBe("Call us.")
    expect(Consent.keywordReply(org, null)).toBeNull()
    expect(Consent.keywordReply({ ...org, keywordReplies: "provider" }, "opt_out")).toBeNull()
    expect(Consent.keywordReply({ ...org, keywordReplies: "off" }, "opt_out")).toBeNull()
    expect(Consent.keywordReply({ name: "Acme Dental" }, "opt_out")).toBeNull()
  })

  it.effect("a STOP queues one confirmation with the inbound message, sent past the opt-out, the allowance, the sending hours and the recipient's hours; a retry queues none", () =>
    Effect.gen(function*() {
      const { demo, reply } = yield* setup
      const line = demo.numbers[0]!.phoneNumber
      // Closed now on both clocks (the test clock starts on a Thursday), and no allowance left.
      yield* Effect.flatMap(Organisations.Organisations, (o) =>
        o.update(demo.orgId, {
          keywordReplies: "parley",
          smsAllowance: 0,
          sendingHours: "Sun 03:00-03:01",
          recipientHours: "Sun 03:00-03:01",
          timezone: "Pacific/Kiritimati"
        }))
      yield* reply("STOP", "SMkeyword1")
      yield* reply("STOP", "SMkeyword1")
      const [queued, ...others] = yield* confirmations(demo.orgId, line)
      expect(others).toEqual([])
      expect(queued).toMatchObject({ status: "Queued", keywordReplyTo: "SMkeyword1", body: expect.stringMatching(/You will receive no more messages/) })
      yield* Effect.flatMap(Dispatch.Dispatch, (d) => d.runDue)
      const [sent] = yield* confirmations(demo.orgId, line)
      expect(sent?.status).not.toMatch(/^(Queued|Failed)$/)
      expect(sent?.errorMessage).toBeNull()
      const events = yield* Effect.flatMap(EventOutbox.EventOutbox, (o) => o.list(demo.orgId))
      const decode = Schema.decodeUnknownSync(Schema.parseJson(OptOutEventPayload))
      expect(events.filter((e) => e.type === "optout.created").map((e) => decode(e.payload).data)).toMatchObject([
        { phone: CUSTOMER, source: "keyword", cause: expect.stringMatching(/^inbound message /) }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("the provider's answers (the default) and off queue none; START's event is optout.deleted", () =>
    Effect.gen(function*() {
      const { demo, reply } = yield* setup
      const line = demo.numbers[0]!.phoneNumber
      yield* reply("STOP")
      yield* Effect.flatMap(Organisations.Organisations, (o) => o.update(demo.orgId, { keywordReplies: "off" }))
      yield* reply("START")
      expect(yield* confirmations(demo.orgId, line)).toEqual([])
      const events = yield* Effect.flatMap(EventOutbox.EventOutbox, (o) => o.list(demo.orgId))
      expect(events.map((e) => e.type).filter((t) => t.startsWith("optout."))).toEqual(["optout.created", "optout.deleted"])
    }).pipe(Effect.provide(TestLayer)))
})
