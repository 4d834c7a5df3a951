// The core's own dispatch over the memory ports and the simulator: live actions due now meet the organisation's
// rules and allowance, are handed to the organisation's provider (the Providers port; the simulator here), and
// then move by what a look at the provider finds (ProviderReports), one simulated step per step delay.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import * as Actions from "../src/domain/Actions.js"
import * as Dispatch from "../src/domain/Dispatch.js"
import * as DispatchRules from "../src/domain/DispatchRules.js"
import * as ProviderReports from "../src/domain/ProviderReports.js"
import * as EventOutbox from "../src/ports/EventOutbox.js"
import * as Organisations from "../src/ports/Organisations.js"
import * as Providers from "../src/ports/Providers.js"
import * as Simulator from "../src/simulator/Simulator.js"
import { callerFor, CoreTestLayer, seedDemo } from "./harness.js"

const STEP = 1_000

const DispatchTestLayer = Dispatch.layer.pipe(
  Layer.provideMerge(Simulator.layerProviders),
  Layer.provideMerge(ProviderReports.layer),
  Layer.provideMerge(Simulator.SimulatorStep.layer(STEP)),
  Layer.provideMerge(CoreTestLayer)
)

/** A provider that refuses every text as a real one would refuse an invalid number, and has nothing to recheck. */
const refusing: Providers.ProviderChoice = {
  name: "refusing",
  label: "The refusing carrier",
  client: {
    idempotent: false,
    lookAgainMs: STEP,
    cannotSend: (action) => action.kind === "ai_call" ? "No agent for this bot." : null,
    send: (action) =>
      Effect.fail(
        action.counterpart === "+14155550199"
          ? { _tag: "RefusingError", reason: "unavailable", status: 503, code: null, message: "Service Unavailable", retryAfterMs: null }
          : { _tag: "RefusingError", reason: "rejected", status: 400, code: 21211, message: "Invalid 'To'", retryAfterMs: null }
      ),
    candidates: () => Effect.succeed([]),
    recheck: () => Effect.succeed(Option.none())
  }
}
const RefusingTestLayer = Dispatch.layer.pipe(
  Layer.provideMerge(Layer.succeed(Providers.Providers, {
    session: Effect.succeed({ current: () => Effect.succeed(refusing), named: () => Effect.succeed(Option.none()) })
  })),
  Layer.provideMerge(ProviderReports.layer),
  Layer.provideMerge(CoreTestLayer)
)

const setup = Effect.gen(function*() {
  const demo = yield* seedDemo
  const live = yield* callerFor(demo.keys.live)
  const actions = yield* Actions.Actions
  const dispatch = yield* Dispatch.Dispatch
  const sid = demo.numbers[0]!.sid
  let n = 0
  const text = (to: string) =>
    Effect.map(
      actions.createMessage(live, { to, fromNumberSid: sid, body: "hello", channel: "SMS" }, `dispatch-${++n}`),
      (r) => r.ack.id
    )
  const call = (to: string) =>
    Effect.map(
      actions.createAiCall(
        live,
        { to, fromNumberSid: sid, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Confirm at 10" },
        `dispatch-${++n}`
      ),
      (r) => r.ack.id
    )
  const status = (kind: "message" | "ai_call", id: string) => Effect.map(actions.get(live, kind, id), (r) => r)
  const events = (id: string) =>
    Effect.map(
      Effect.flatMap(EventOutbox.EventOutbox, (o) => o.list(demo.orgId)),
      (all) => all.filter((e) => e.payload.includes(`"id":"${id}"`)).map((e) => e.type)
    )
  return { demo, live, dispatch, text, call, status, events }
})

describe("Dispatch (core, embedded)", () => {
  it.effect("a live text goes Queued → Sent at dispatch, then Delivered one step later, by the carrier's reports", () =>
    Effect.gen(function*() {
      const { dispatch, events, status, text } = yield* setup
      const id = yield* text("+14155550123")
      expect((yield* status("message", id)).status).toBe("Queued")
      expect(yield* dispatch.runDue).toBe(1)
      const sent = yield* status("message", id)
      expect(sent.status).toBe("Sent")
      expect(sent.sid).toBe(`SM${id.padStart(32, "0")}`)
      // nothing due any more: a second run works nothing and sends nothing twice
      expect(yield* dispatch.runDue).toBe(0)
      yield* TestClock.adjust(STEP - 1)
      expect(yield* dispatch.runDue).toBe(0)
      yield* TestClock.adjust(1)
      // one step after it was sent, a look at the simulator finds it delivered
      expect(yield* dispatch.runDue).toBe(1)
      expect((yield* status("message", id)).status).toBe("Delivered")
      // final: never looked at again
      yield* TestClock.adjust(10 * STEP)
      expect(yield* dispatch.runDue).toBe(0)
      expect(yield* events(id)).toEqual(["message.queued", "message.sent", "message.delivered"])
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("the simulator's failure numbers: Failed at send, Undelivered after Sent", () =>
    Effect.gen(function*() {
      const { dispatch, status, text } = yield* setup
      const failed = yield* text("+15005550001")
      const undelivered = yield* text("+15005550002")
      yield* dispatch.runDue
      expect((yield* status("message", failed)).status).toBe("Failed")
      expect((yield* status("message", failed)).errorMessage).toContain("21211")
      yield* TestClock.adjust(STEP)
      yield* dispatch.runDue
      expect((yield* status("message", undelivered)).status).toBe("Undelivered")
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("an AI call rings, is answered and completes with a transcript of its purpose", () =>
    Effect.gen(function*() {
      const { call, dispatch, events, status } = yield* setup
      const id = yield* call("+14155550123")
      yield* dispatch.runDue
      expect((yield* status("ai_call", id)).status).toBe("Ringing")
      yield* TestClock.adjust(STEP)
      yield* dispatch.runDue
      expect((yield* status("ai_call", id)).status).toBe("In Progress")
      yield* TestClock.adjust(STEP)
      yield* dispatch.runDue
      const done = yield* status("ai_call", id)
      expect(done.status).toBe("Completed")
      expect(done.body).toContain("Confirm at 10")
      expect(done.audioFileId).toBe(`AF${id.padStart(32, "0")}`)
      expect(yield* events(id)).toEqual(["ai_call.queued", "ai_call.started", "ai_call.completed"])
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("live rules at dispatch: outside sending hours the text waits; AI calls turned off fail; no allowance fails", () =>
    Effect.gen(function*() {
      const { call, demo, dispatch, status, text } = yield* setup
      const organisations = yield* Organisations.Organisations
      // 10:00 UTC on a Monday: a window from 12:00 is closed now
      yield* organisations.update(demo.orgId, { sendingHours: "12:00-13:00", timezone: "UTC" })
      const held = yield* text("+14155550123")
      yield* dispatch.runDue
      expect((yield* status("message", held)).status).toBe("Queued")
      yield* TestClock.adjust(2 * 3_600_000)
      yield* dispatch.runDue
      expect((yield* status("message", held)).status).toBe("Sent")

      yield* organisations.update(demo.orgId, { sendingHours: "always", aiCallsEnabled: true, smsAllowance: 0 })
      const noUnits = yield* text("+14155550124")
      const offCall = yield* call("+14155550125")
      yield* organisations.update(demo.orgId, { aiCallsEnabled: false })
      yield* dispatch.runDue
      expect((yield* status("message", noUnits)).errorMessage).toBe(DispatchRules.ALLOWANCE_FAILURE.message)
      const off = yield* status("ai_call", offCall)
      expect(off.status).toBe("Failed")
      expect(off.errorMessage).toContain("AI calls are turned off")
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("recipient-local hours: a text to New York at 22:00 there waits for 08:00 there, +44 for London's, others the organisation's", () =>
    Effect.gen(function*() {
      const { call, demo, dispatch, status } = yield* setup
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { destinationCountries: ["*"], timezone: "Asia/Tokyo", recipientHours: "08:00-21:00" })
      // 2026-03-03T03:00Z: 22:00 on Monday in New York, 03:00 in London, 12:00 in Tokyo.
      yield* TestClock.setTime(Date.parse("2026-03-03T03:00:00Z"))
      const live = yield* callerFor(demo.keys.live) // with the settings above
      const actions = yield* Actions.Actions
      const text = (to: string) =>
        Effect.map(actions.createMessage(live, { to, fromNumberSid: demo.numbers[0]!.sid, body: "hi", channel: "SMS" }, `quiet-${to}`), (r) => r.ack.id)
      const newYork = yield* text("+12125550123")
      const newYorkCall = yield* call("+12125550124")
      const london = yield* text("+442079460123")
      const australia = yield* text("+61491570156") // Australia spans zones: the organisation's (Tokyo, open)
      const tollFree = yield* text("+18005550123") // no area code's zone: the organisation's
      yield* dispatch.runDue
      expect((yield* status("message", newYork)).status).toBe("Queued")
      expect((yield* status("ai_call", newYorkCall)).status).toBe("Queued")
      expect((yield* status("message", london)).status).toBe("Queued")
      expect((yield* status("message", australia)).status).toBe("Sent")
      expect((yield* status("message", tollFree)).status).toBe("Sent")

      yield* TestClock.setTime(Date.parse("2026-03-03T07:59:00Z"))
      yield* dispatch.runDue
      expect((yield* status("message", london)).status).toBe("Queued")
      yield* TestClock.setTime(Date.parse("2026-03-03T08:00:00Z")) // 08:00 in London, 03:00 in New York
      yield* dispatch.runDue
      expect((yield* status("message", london)).status).toBe("Sent")
      expect((yield* status("message", newYork)).status).toBe("Queued")
      yield* TestClock.setTime(Date.parse("2026-03-03T12:59:00Z"))
      yield* dispatch.runDue
      expect((yield* status("message", newYork)).status).toBe("Queued")
      yield* TestClock.setTime(Date.parse("2026-03-03T13:00:00Z")) // 08:00 in New York
      yield* dispatch.runDue
      expect((yield* status("message", newYork)).status).toBe("Sent")
      expect((yield* status("ai_call", newYorkCall)).status).not.toBe("Queued")
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("recipient-local hours: a live WhatsApp message (sent at once) outside them is refused, naming the opening", () =>
    Effect.gen(function*() {
      const { demo } = yield* setup
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { destinationCountries: ["*"], recipientHours: "08:00-21:00" })
      yield* TestClock.setTime(Date.parse("2026-03-03T03:00:00Z")) // 22:00 in New York
      const live = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const whatsApp = (to: string) =>
        actions.createMessage(live, {
          to,
          fromNumberSid: "PN00000000000000000000000000000003",
          channel: "WhatsApp",
          whatsAppContentSid: "HX0123456789abcdef0123456789abcdef"
        }, `quiet-wa-${to}`)
      const refused = yield* Effect.flip(whatsApp("+12125550125"))
      expect(refused._tag).toBe("OutsideSendingHours")
      expect(refused.message).toContain("recipient-local hours (08:00-21:00) on +12125550125's clock; send it after 2026-03-03T13:00:00.000Z")
      // 12:00 in Tokyo, the organisation's zone after this update, and Australia's zones differ: accepted.
      yield* organisations.update(demo.orgId, { timezone: "Asia/Tokyo" })
      const tokyo = yield* callerFor(demo.keys.live)
      const accepted = yield* actions.createMessage(tokyo, {
        to: "+61491570156",
        fromNumberSid: "PN00000000000000000000000000000003",
        channel: "WhatsApp",
        whatsAppContentSid: "HX0123456789abcdef0123456789abcdef"
      }, "quiet-wa-au")
      expect(accepted.ack.status).toBe("accepted")
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("destination rules at dispatch: a text or call accepted before the rules narrowed fails naming the rule", () =>
    Effect.gen(function*() {
      const { call, demo, dispatch, events, status, text } = yield* setup
      const organisations = yield* Organisations.Organisations
      yield* organisations.update(demo.orgId, { destinationCountries: ["GB", "US"], sendingHours: "always" })
      const ukText = yield* text("+447700900123")
      const ukCall = yield* call("+447700900456")
      const usText = yield* text("+14155550126")
      yield* organisations.update(demo.orgId, { destinationCountries: ["US"] })
      yield* dispatch.runDue
      const refused = yield* status("message", ukText)
      expect(refused.status).toBe("Failed")
      expect(refused.errorMessage).toBe(
        "The organisation's destination rules no longer allow this recipient: +447700900123 is in GB; the organisation sends only to US."
      )
      expect(yield* events(ukText)).toEqual(["message.queued", "message.failed"])
      expect((yield* status("ai_call", ukCall)).status).toBe("Failed")
      expect((yield* status("message", usText)).status).toBe("Sent")
    }).pipe(Effect.provide(DispatchTestLayer)))

  it.effect("a provider's refusal fails the action with its message; a client's cannotSend fails it before any request", () =>
    Effect.gen(function*() {
      const { call, dispatch, events, status, text } = yield* setup
      const id = yield* text("+14155550123")
      const callId = yield* call("+14155550124")
      // a 5xx may have sent: with no journal to reconcile it, the embedded dispatcher never tries again
      const unavailable = yield* text("+14155550199")
      expect(yield* dispatch.runDue).toBe(3)
      const refused = yield* status("message", id)
      expect(refused.status).toBe("Failed")
      expect(refused.errorMessage).toBe("21211: Invalid 'To'")
      expect((yield* status("message", unavailable)).errorMessage).toBe(
        "The refusing carrier did not accept it after 1 attempt (last: Service Unavailable)."
      )
      expect(yield* events(id)).toEqual(["message.queued", "message.failed"])
      expect((yield* status("ai_call", callId)).errorMessage).toBe("No agent for this bot.")
      // failed, not retried: nothing is due again
      yield* TestClock.adjust(10 * STEP)
      expect(yield* dispatch.runDue).toBe(0)
    }).pipe(Effect.provide(RefusingTestLayer)))

  it.effect("the simulator answers a repeated action id with its first outcome and sends nothing again", () =>
    Effect.gen(function*() {
      const { demo } = yield* setup
      const simulator = yield* Effect.provide(Simulator.client, Simulator.SimulatorStep.layer(STEP))
      const action: Providers.Handoff = {
        id: "4242",
        orgId: demo.orgId,
        kind: "message",
        type: "SMS",
        status: "Sending",
        line: demo.numbers[0]!.phoneNumber,
        counterpart: "+15005550001",
        body: "hello",
        botId: null,
        mode: null,
        purposeMessage: null,
        whatsAppContentSid: null,
        whatsAppContentVariables: null,
        sid: null,
        at: new Date(0).toISOString()
      }
      const first = yield* simulator.send(action, 0)
      // the same action id later, with a recipient the simulator would have sent to: still the first answer
      const again = yield* simulator.send({ ...action, counterpart: "+14155550123" }, 5_000)
      expect(first).toMatchObject({ status: "Failed", sid: `SM${"4242".padStart(32, "0")}`, workAt: null })
      expect(again).toEqual(first)
    }).pipe(Effect.provide(DispatchTestLayer)))
})
