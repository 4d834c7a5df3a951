// Scheduling windows and cancellation on the TestClock: the 30-second lead
// time for scheduledFor, the cancellation boundary, simulated cancellation
// for test keys and the cancelled event of a live cancellation.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, Option, Schema, TestClock } from "effect"
import {
  ActionStore,
  Actions,
  type CallerInfo,
  type CreateAiCallRequest,
  CreateMessageRequest,
  EventOutbox,
  Scheduling
} from "../src/internal.js"
import { callerFor, CoreTestLayer, MONDAY_10_UTC, seedDemo } from "./harness.js"

const SECOND = 1000
const MINUTE = 60 * SECOND

/** An ISO timestamp `ms` from the TestClock's now. */
const inFuture = (ms: number) => Effect.map(Clock.currentTimeMillis, (now) => new Date(now + ms).toISOString())

const setup = Effect.gen(function*() {
  const demo = yield* seedDemo
  const live = yield* callerFor(demo.keys.live)
  const test = yield* callerFor(demo.keys.test)
  const actions = yield* Actions.Actions
  const store = yield* ActionStore.ActionStore
  const outbox = yield* EventOutbox.EventOutbox
  const sid = demo.numbers[0]!.sid
  const message = (scheduledFor?: string): CreateMessageRequest => ({
    to: "+14155550123",
    fromNumberSid: sid,
    body: "hello",
    channel: "SMS",
    ...(scheduledFor === undefined ? {} : { scheduledFor })
  })
  const aiCall = (scheduledFor?: string): CreateAiCallRequest => ({
    to: "+14155550123",
    fromNumberSid: sid,
    botId: "bot_sales",
    mode: "follow_script",
    ...(scheduledFor === undefined ? {} : { scheduledFor })
  })
  let n = 0
  const nextKey = () => `idem-${++n}`
  /** A live message scheduled `leadMs` ahead of now; answers its id and scheduledFor (epoch ms). */
  const scheduleMessage = (leadMs: number, caller: CallerInfo = live) =>
    Effect.gen(function*() {
      const scheduledFor = yield* inFuture(leadMs)
      const { ack } = yield* actions.createMessage(caller, message(scheduledFor), nextKey())
      return { id: ack.id, ack, at: Date.parse(scheduledFor) }
    })
  const statusOf = (kind: ActionStore.ActionKind, id: string) => Effect.map(actions.get(live, kind, id), (r) => r.status)
  const eventTypes = Effect.map(outbox.list("org_demo"), (events) => events.map((e) => e.type))
  return { demo, live, test, actions, store, outbox, message, aiCall, nextKey, scheduleMessage, statusOf, eventTypes }
})

describe("scheduledFor lead time", () => {
  it.effect("29 s ahead is InvalidRequest naming scheduledFor; 31 s ahead is a scheduled ack", () =>
    Effect.gen(function*() {
      const { actions, live, message, nextKey } = yield* setup
      const early = yield* Effect.flip(actions.createMessage(live, message(yield* inFuture(29 * SECOND)), nextKey()))
      expect(early._tag).toBe("InvalidRequest")
      expect(early.message).toContain("scheduledFor")
      const scheduledFor = yield* inFuture(31 * SECOND)
      const { ack } = yield* actions.createMessage(live, message(scheduledFor), nextKey())
      expect(ack.status).toBe("scheduled")
      expect(ack.test).toBe(false)
      const record = yield* actions.get(live, "message", ack.id)
      expect(record.status).toBe("Queued")
      expect(record.scheduledFor).toBe(scheduledFor)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("at most 365 days ahead: a year and a day is InvalidRequest naming scheduledFor, 364 days is scheduled", () =>
    Effect.gen(function*() {
      const { actions, live, message, nextKey } = yield* setup
      const far = yield* Effect.flip(actions.createMessage(live, message(yield* inFuture(366 * 24 * 60 * MINUTE)), nextKey()))
      expect(far._tag).toBe("InvalidRequest")
      expect(far.message).toMatch(/scheduledFor: must be at most 365 days/)
      const year9999 = yield* Effect.flip(actions.createMessage(live, message("9999-12-31T23:59:59-14:00"), nextKey()))
      expect(year9999.message).toContain("scheduledFor")
      const { ack } = yield* actions.createMessage(live, message(yield* inFuture(364 * 24 * 60 * MINUTE)), nextKey())
      expect(ack.status).toBe("scheduled")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the rule is checked against the Clock: the same timestamp passes at one time and fails 2 s later", () =>
    Effect.gen(function*() {
      const { actions, live, message, nextKey } = yield* setup
      const scheduledFor = new Date(MONDAY_10_UTC + 31 * SECOND).toISOString()
      expect((yield* actions.createMessage(live, message(scheduledFor), nextKey())).ack.status).toBe("scheduled")
      yield* TestClock.adjust(2 * SECOND)
      const error = yield* Effect.flip(actions.createMessage(live, message(scheduledFor), nextKey()))
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toContain("scheduledFor")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a scheduledFor in the past is InvalidRequest", () =>
    Effect.gen(function*() {
      const { actions, live, message, nextKey } = yield* setup
      const error = yield* Effect.flip(actions.createMessage(live, message(yield* inFuture(-MINUTE)), nextKey()))
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toContain("scheduledFor")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("AI calls follow the same rule", () =>
    Effect.gen(function*() {
      const { actions, live, aiCall, nextKey } = yield* setup
      const early = yield* Effect.flip(actions.createAiCall(live, aiCall(yield* inFuture(29 * SECOND)), nextKey()))
      expect(early._tag).toBe("InvalidRequest")
      expect(early.message).toContain("scheduledFor")
      const { ack } = yield* actions.createAiCall(live, aiCall(yield* inFuture(31 * SECOND)), nextKey())
      expect(ack.status).toBe("scheduled")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("test keys follow the same rule and answer a simulated scheduled ack", () =>
    Effect.gen(function*() {
      const { actions, test, message, nextKey } = yield* setup
      const early = yield* Effect.flip(actions.createMessage(test, message(yield* inFuture(29 * SECOND)), nextKey()))
      expect(early._tag).toBe("InvalidRequest")
      const { ack } = yield* actions.createMessage(test, message(yield* inFuture(31 * SECOND)), nextKey())
      expect(ack.status).toBe("scheduled")
      expect(ack.test).toBe(true)
      expect(ack.id.startsWith("test_")).toBe(true)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("without scheduledFor the ack is accepted, due now", () =>
    Effect.gen(function*() {
      const { actions, live, message, nextKey, store } = yield* setup
      const { ack } = yield* actions.createMessage(live, message(), nextKey())
      expect(ack.status).toBe("accepted")
      const stored = Option.getOrThrow(yield* store.findAction("org_demo", ack.id))
      expect(stored.scheduledFor).toBeNull()
      expect(stored.dueAt).toBe(MONDAY_10_UTC)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("validateScheduledFor: dueAt is the scheduled instant, normalised to UTC", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      // 11:00+01:00 is 10:00Z: not ahead at all.
      const notAhead = yield* Effect.flip(Scheduling.validateScheduledFor("2026-03-02T11:00:00+01:00"))
      expect(notAhead._tag).toBe("InvalidRequest")
      const ok = yield* Scheduling.validateScheduledFor("2026-03-02T11:00:31+01:00")
      expect(ok).toEqual({ dueAt: MONDAY_10_UTC + 31 * SECOND, scheduledFor: "2026-03-02T10:00:31.000Z" })
    }))

  it("a WhatsApp message cannot be scheduled (400 naming scheduledFor)", () => {
    const decoded = Schema.decodeUnknownEither(CreateMessageRequest)({
      to: "+14155550123",
      fromNumberSid: "PN00000000000000000000000000000003",
      body: "hello",
      channel: "WhatsApp",
      scheduledFor: "2026-03-02T11:00:00Z"
    })
    expect(Either.isLeft(decoded)).toBe(true)
    if (Either.isLeft(decoded)) expect(String(decoded.left)).toContain("scheduledFor")
  })
})

describe("cancellation", () => {
  it.effect("cancellable 31 s before scheduledFor: Cancelled, and a message.cancelled event is emitted", () =>
    Effect.gen(function*() {
      const { actions, live, scheduleMessage, statusOf, outbox, eventTypes } = yield* setup
      const { id, at } = yield* scheduleMessage(10 * MINUTE)
      expect(yield* eventTypes).toEqual(["message.queued"])
      yield* TestClock.setTime(at - 31 * SECOND)
      const ack = yield* actions.cancel(live, "message", id)
      expect(ack.id).toBe(id)
      expect(ack.status).toBe("cancelled")
      expect(ack.test).toBeUndefined()
      expect(yield* statusOf("message", id)).toBe("Cancelled")
      const events = yield* outbox.list("org_demo")
      expect(events.map((e) => e.type)).toEqual(["message.queued", "message.cancelled"])
      const cancelled = events[1]!
      const payload: unknown = JSON.parse(cancelled.payload)
      expect(payload).toMatchObject({
        type: "message.cancelled",
        timestamp: new Date(at - 31 * SECOND).toISOString(),
        data: { id, status: "Cancelled" }
      })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("29 s before scheduledFor it is ActionNotCancellable and nothing changes", () =>
    Effect.gen(function*() {
      const { actions, live, scheduleMessage, statusOf, eventTypes } = yield* setup
      const { id, at } = yield* scheduleMessage(10 * MINUTE)
      yield* TestClock.setTime(at - 29 * SECOND)
      const error = yield* Effect.flip(actions.cancel(live, "message", id))
      expect(error._tag).toBe("ActionNotCancellable")
      expect(error.message).toContain("30 seconds")
      expect(yield* statusOf("message", id)).toBe("Queued")
      expect(yield* eventTypes).toEqual(["message.queued"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the boundary is strict: exactly 30 s before is refused, 30.001 s before is allowed", () =>
    Effect.gen(function*() {
      const { actions, live, scheduleMessage } = yield* setup
      const first = yield* scheduleMessage(10 * MINUTE)
      const second = yield* scheduleMessage(10 * MINUTE)
      yield* TestClock.setTime(first.at - 30 * SECOND - 1)
      expect((yield* actions.cancel(live, "message", first.id)).status).toBe("cancelled")
      yield* TestClock.adjust(1)
      expect((yield* Effect.flip(actions.cancel(live, "message", second.id)))._tag).toBe("ActionNotCancellable")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the same action: cancellable while more than 30 s ahead, not once the clock moves past that", () =>
    Effect.gen(function*() {
      const { actions, test, scheduleMessage } = yield* setup
      const { id, at } = yield* scheduleMessage(5 * MINUTE)
      yield* TestClock.setTime(at - 31 * SECOND)
      // A test key's cancellation changes nothing, so the same action can be probed twice.
      expect((yield* actions.cancel(test, "message", id)).status).toBe("cancelled")
      yield* TestClock.adjust(2 * SECOND)
      expect((yield* Effect.flip(actions.cancel(test, "message", id)))._tag).toBe("ActionNotCancellable")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an action whose status moved on (dispatch-like) is ActionNotCancellable even far ahead", () =>
    Effect.gen(function*() {
      const { actions, live, test, store, scheduleMessage, eventTypes } = yield* setup
      const { id } = yield* scheduleMessage(2 * 60 * MINUTE)
      const { id: _id, ...queued } = Option.getOrThrow(yield* store.findAction("org_demo", id))
      const sending = yield* store.insertAction({ ...queued, status: "Sending" })
      for (const caller of [live, test]) {
        const error = yield* Effect.flip(actions.cancel(caller, "message", sending.id))
        expect(error._tag).toBe("ActionNotCancellable")
        expect(error.message).toContain("Sending")
      }
      expect(Option.getOrThrow(yield* store.findAction("org_demo", sending.id)).status).toBe("Sending")
      expect(yield* eventTypes).toEqual(["message.queued"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a cancelled action cannot be cancelled again", () =>
    Effect.gen(function*() {
      const { actions, live, scheduleMessage, eventTypes } = yield* setup
      const { id } = yield* scheduleMessage(10 * MINUTE)
      yield* actions.cancel(live, "message", id)
      const error = yield* Effect.flip(actions.cancel(live, "message", id))
      expect(error._tag).toBe("ActionNotCancellable")
      expect(error.message).toContain("Cancelled")
      expect(yield* eventTypes).toEqual(["message.queued", "message.cancelled"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an accepted (non-scheduled) action is not cancellable, by live or test keys", () =>
    Effect.gen(function*() {
      const { actions, live, test, message, nextKey, statusOf } = yield* setup
      const { ack } = yield* actions.createMessage(live, message(), nextKey())
      expect(ack.status).toBe("accepted")
      for (const caller of [live, test]) {
        const error = yield* Effect.flip(actions.cancel(caller, "message", ack.id))
        expect(error._tag).toBe("ActionNotCancellable")
      }
      expect(yield* statusOf("message", ack.id)).toBe("Queued")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("test keys: a cancellable action answers test: true and stays Queued, with no event", () =>
    Effect.gen(function*() {
      const { actions, test, store, scheduleMessage, eventTypes } = yield* setup
      const { id, at } = yield* scheduleMessage(10 * MINUTE)
      const before = Option.getOrThrow(yield* store.findAction("org_demo", id))
      yield* TestClock.setTime(at - 31 * SECOND)
      const ack = yield* actions.cancel(test, "message", id)
      expect(ack).toMatchObject({ id, status: "cancelled", test: true })
      const after = Option.getOrThrow(yield* store.findAction("org_demo", id))
      expect(after).toEqual(before)
      expect(after.status).toBe("Queued")
      expect(yield* eventTypes).toEqual(["message.queued"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("test keys: the same rules refuse a cancellation 29 s before, and change nothing", () =>
    Effect.gen(function*() {
      const { actions, test, scheduleMessage, statusOf } = yield* setup
      const { id, at } = yield* scheduleMessage(10 * MINUTE)
      yield* TestClock.setTime(at - 29 * SECOND)
      const error = yield* Effect.flip(actions.cancel(test, "message", id))
      expect(error._tag).toBe("ActionNotCancellable")
      expect(yield* statusOf("message", id)).toBe("Queued")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an AI call is cancelled the same way and emits ai_call.cancelled", () =>
    Effect.gen(function*() {
      const { actions, live, aiCall, nextKey, statusOf, eventTypes } = yield* setup
      const scheduledFor = yield* inFuture(10 * MINUTE)
      const { ack } = yield* actions.createAiCall(live, aiCall(scheduledFor), nextKey())
      yield* TestClock.setTime(Date.parse(scheduledFor) - 29 * SECOND)
      expect((yield* Effect.flip(actions.cancel(live, "ai_call", ack.id)))._tag).toBe("ActionNotCancellable")
      yield* TestClock.setTime(Date.parse(scheduledFor) - 31 * SECOND)
      expect((yield* actions.cancel(live, "ai_call", ack.id)).status).toBe("cancelled")
      expect(yield* statusOf("ai_call", ack.id)).toBe("Cancelled")
      expect(yield* eventTypes).toEqual(["ai_call.queued", "ai_call.cancelled"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("cancelling with the wrong kind or an unknown id is NotFound", () =>
    Effect.gen(function*() {
      const { actions, live, scheduleMessage, statusOf } = yield* setup
      const { id } = yield* scheduleMessage(10 * MINUTE)
      expect((yield* Effect.flip(actions.cancel(live, "ai_call", id)))._tag).toBe("NotFound")
      expect((yield* Effect.flip(actions.cancel(live, "message", "999999")))._tag).toBe("NotFound")
      expect(yield* statusOf("message", id)).toBe("Queued")
    }).pipe(Effect.provide(CoreTestLayer)))
})
