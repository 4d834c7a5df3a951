// Idempotent creation: replay, canonical payloads, key reuse, in-flight
// requests, released failures, retention on the TestClock, crashed
// reservations and the Idempotency-Key header limit.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Layer, Option, Ref, Schema, TestClock } from "effect"
import {
  ActionStore,
  Actions,
  type CallerInfo,
  type CreateMessageRequest,
  Idempotency,
  IdempotencyHeaders,
  IdempotencyStore,
  UnitOfWork
} from "../src/internal.js"
import { callerFor, CoreTestLayer, MONDAY_10_UTC, seedDemo } from "./harness.js"

const HOUR = 60 * 60 * 1000
const MINUTE = 60 * 1000

const Result = Schema.Struct({ n: Schema.Number })

const request = (overrides: Partial<Idempotency.IdempotentRequest> = {}): Idempotency.IdempotentRequest => ({
  keyId: "key_1",
  idempotencyKey: "idem-1",
  method: "POST",
  path: "/api/v1/messages",
  payload: { to: "+14155550123", body: "hello" },
  ...overrides
})

const run = <E, R>(req: Idempotency.IdempotentRequest, create: Effect.Effect<{ readonly n: number }, E, R>) =>
  Effect.flatMap(Idempotency.Idempotency, (idempotency) => idempotency.run(req, { schema: Result, status: 202 }, create))

/** A `create` that counts its runs and answers the run number. */
const counter = Effect.map(Ref.make(0), (runs) => ({
  runs,
  create: Ref.updateAndGet(runs, (n) => n + 1).pipe(Effect.map((n) => ({ n })))
}))

/** The store, as the exclusion the test expects it to use. */
const reservingStore = Effect.flatMap(IdempotencyStore.IdempotencyStore, (store) =>
  store.exclusion === "reservation" ? Effect.succeed(store) : Effect.dieMessage("expected the reservation exclusion"))
const recordingStore = Effect.flatMap(IdempotencyStore.IdempotencyStore, (store) =>
  store.exclusion === "record" ? Effect.succeed(store) : Effect.dieMessage("expected the record exclusion"))

/** The CRM actions of the demo organisation. */
const crmActions = Effect.flatMap(ActionStore.ActionStore, (store) =>
  store.queryActions({
    orgId: "org_demo",
    kinds: ["message", "ai_call"],
    lines: null,
    ownerId: null,
    conversation: null,
    beforeId: null,
    limit: 1000
  }))

const setup = Effect.gen(function*() {
  const demo = yield* seedDemo
  const caller = yield* callerFor(demo.keys.live)
  const actions = yield* Actions.Actions
  const message: CreateMessageRequest = {
    to: "+14155550123",
    fromNumberSid: demo.numbers[0]!.sid,
    body: "hello",
    channel: "SMS"
  }
  const create = (c: CallerInfo, body: CreateMessageRequest, key: string) => actions.createMessage(c, body, key)
  return { demo, caller, actions, message, create }
})

describe("idempotent replay", () => {
  it.effect("the same payload replays the first ack with replayed=true and creates one CRM action", () =>
    Effect.gen(function*() {
      const { caller, create, message } = yield* setup
      const first = yield* create(caller, message, "k-replay")
      expect(first.replayed).toBe(false)
      const second = yield* create(caller, message, "k-replay")
      const third = yield* create(caller, message, "k-replay")
      expect(second.replayed).toBe(true)
      expect(third.replayed).toBe(true)
      expect(second.ack).toEqual(first.ack)
      expect(third.ack).toEqual(first.ack)
      const all = yield* crmActions
      expect(all.map((a) => a.id)).toEqual([first.ack.id])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a replay does not run the creation again", () =>
    Effect.gen(function*() {
      const { runs, create } = yield* counter
      const first = yield* run(request(), create)
      const second = yield* run(request(), create)
      expect(first).toEqual({ value: { n: 1 }, replayed: false })
      expect(second).toEqual({ value: { n: 1 }, replayed: true })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("key order in the payload does not matter, at any depth", () =>
    Effect.gen(function*() {
      const { runs, create } = yield* counter
      const payloadA = { to: "+14155550123", record: { module: "Leads", id: "5001" }, body: "hi" }
      const payloadB = { body: "hi", record: { id: "5001", module: "Leads" }, to: "+14155550123" }
      yield* run(request({ payload: payloadA }), create)
      const second = yield* run(request({ payload: payloadB }), create)
      expect(second.replayed).toBe(true)
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("key order does not matter for a real message request either", () =>
    Effect.gen(function*() {
      const { caller, create, demo } = yield* setup
      const first = yield* create(caller, {
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        record: { module: "Leads", id: "5003" },
        body: "hello",
        channel: "SMS"
      }, "k-order")
      const second = yield* create(caller, {
        channel: "SMS",
        body: "hello",
        record: { id: "5003", module: "Leads" },
        fromNumberSid: demo.numbers[0]!.sid,
        to: "+14155550123"
      }, "k-order")
      expect(second).toEqual({ ack: first.ack, replayed: true })
      expect((yield* crmActions).length).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the same Idempotency-Key with a different payload is IdempotencyKeyReused", () =>
    Effect.gen(function*() {
      const { caller, create, message } = yield* setup
      yield* create(caller, message, "k-reused")
      const error = yield* Effect.flip(create(caller, { ...message, body: "a different text" }, "k-reused"))
      expect(error._tag).toBe("IdempotencyKeyReused")
      expect(error.message).toContain("different")
      expect((yield* crmActions).length).toBe(1)
      // A different endpoint with the same key is a different request too.
      const { runs, create: count } = yield* counter
      const direct = yield* Effect.flip(run(request({ keyId: caller.keyId, idempotencyKey: "k-reused",
        path: "/api/v1/ai-calls", payload: message }), count))
      expect(direct._tag).toBe("IdempotencyKeyReused")
      expect(yield* Ref.get(runs)).toBe(0)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("Idempotency-Keys are scoped to the API key: another key may use the same value", () =>
    Effect.gen(function*() {
      const { caller, create, message, demo } = yield* setup
      const other = yield* callerFor(demo.keys.test)
      const first = yield* create(caller, message, "k-shared")
      const second = yield* create(other, message, "k-shared")
      expect(second.replayed).toBe(false)
      expect(second.ack.id).not.toBe(first.ack.id)
      expect(second.ack.test).toBe(true)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("requests in flight and failures", () => {
  it.effect("a request arriving while the first is in flight is ActionProcessing; afterwards it replays", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const latch = yield* Deferred.make<void>()
      const runs = yield* Ref.make(0)
      const slow = Effect.gen(function*() {
        yield* Ref.update(runs, (n) => n + 1)
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(latch)
        return { n: 7 }
      })
      const first = yield* Effect.fork(run(request(), slow))
      yield* Deferred.await(started)
      const error = yield* Effect.flip(run(request(), slow))
      expect(error._tag).toBe("ActionProcessing")
      expect(error.message).toContain("still being processed")
      // A different payload under the in-flight key is still a reuse.
      const reused = yield* Effect.flip(run(request({ payload: { other: true } }), slow))
      expect(reused._tag).toBe("IdempotencyKeyReused")
      yield* Deferred.succeed(latch, undefined)
      expect(yield* Fiber.join(first)).toEqual({ value: { n: 7 }, replayed: false })
      expect(yield* run(request(), slow)).toEqual({ value: { n: 7 }, replayed: true })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a failed first request releases the key: a retry runs again", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const failing = Effect.zipRight(Ref.update(attempts, (n) => n + 1), Effect.fail("boom" as const))
      const error = yield* Effect.flip(run(request(), failing))
      expect(error).toBe("boom")
      const { runs, create } = yield* counter
      const retry = yield* run(request(), create)
      expect(retry).toEqual({ value: { n: 1 }, replayed: false })
      expect(yield* Ref.get(attempts)).toBe(1)
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a failed message creation releases the key, even for a corrected payload", () =>
    Effect.gen(function*() {
      const { caller, create, message } = yield* setup
      const bad = yield* Effect.flip(create(caller, { ...message, fromNumberSid: "PN_unknown" }, "k-fail"))
      expect(bad._tag).toBe("InvalidRequest")
      expect((yield* crmActions).length).toBe(0)
      const good = yield* create(caller, message, "k-fail")
      expect(good.replayed).toBe(false)
      expect(good.ack.status).toBe("accepted")
      expect((yield* crmActions).map((a) => a.id)).toEqual([good.ack.id])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a crashed in-flight reservation blocks the key until LOCK_MS, then is taken over", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const store = yield* reservingStore
      const req = request()
      // A process reserved the key and died before completing or releasing it.
      const reserved = yield* store.reserve({
        keyId: req.keyId,
        idempotencyKey: req.idempotencyKey,
        fingerprint: Idempotency.fingerprint(req),
        now: MONDAY_10_UTC,
        lockedUntil: MONDAY_10_UTC + Idempotency.LOCK_MS,
        expiresAt: MONDAY_10_UTC + Idempotency.RETENTION_MS
      })
      expect(reserved._tag).toBe("Reserved")
      const { runs, create } = yield* counter
      expect((yield* Effect.flip(run(req, create)))._tag).toBe("ActionProcessing")
      yield* TestClock.adjust(Idempotency.LOCK_MS - 1)
      expect((yield* Effect.flip(run(req, create)))._tag).toBe("ActionProcessing")
      expect(yield* Ref.get(runs)).toBe(0)
      yield* TestClock.adjust(1)
      expect(yield* run(req, create)).toEqual({ value: { n: 1 }, replayed: false })
      expect(yield* run(req, create)).toEqual({ value: { n: 1 }, replayed: true })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the host's IdempotencyLock replaces LOCK_MS: a reservation lapses after it", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const started = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      const hung = Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(never)).pipe(Effect.as({ n: 0 }))
      yield* Effect.fork(run(request(), hung))
      yield* Deferred.await(started)
      const { runs, create } = yield* counter
      yield* TestClock.adjust(5_000 - 1)
      expect((yield* Effect.flip(run(request(), create)))._tag).toBe("ActionProcessing")
      yield* TestClock.adjust(1)
      expect(yield* run(request(), create)).toEqual({ value: { n: 1 }, replayed: false })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(
      Effect.provide(Idempotency.layer.pipe(
        Layer.provideMerge(Layer.mergeAll(IdempotencyStore.makeMemory("reservation"), UnitOfWork.layerMemory)),
        Layer.provide(Layer.succeed(Idempotency.IdempotencyLock, { lockMs: 5_000 }))
      ))
    ))

  it.effect("a request that hangs inside run holds its key only for LOCK_MS", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const started = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      const hung = Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(never)).pipe(
        Effect.as({ n: 0 })
      )
      // Neither completes nor fails nor is interrupted: as if its process stalled.
      yield* Effect.fork(run(request(), hung))
      yield* Deferred.await(started)
      const { runs, create } = yield* counter
      yield* TestClock.adjust(Idempotency.LOCK_MS - 1)
      expect((yield* Effect.flip(run(request(), create)))._tag).toBe("ActionProcessing")
      yield* TestClock.adjust(1)
      expect(yield* run(request(), create)).toEqual({ value: { n: 1 }, replayed: false })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(CoreTestLayer)))
})

/**
 * The "record" exclusion (the embedded SQLite store's): no reservation before the work; the completed
 * record is written in the work's unit of work, and a request that recorded the key meanwhile wins.
 */
describe("the record exclusion", () => {
  const RecordLayer = Idempotency.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(IdempotencyStore.makeMemory("record"), UnitOfWork.layerMemory))
  )
  const claimOf = (req: Idempotency.IdempotentRequest, now: number): IdempotencyStore.ReserveRequest => ({
    keyId: req.keyId,
    idempotencyKey: req.idempotencyKey,
    fingerprint: Idempotency.fingerprint(req),
    now,
    lockedUntil: now + Idempotency.LOCK_MS,
    expiresAt: now + Idempotency.RETENTION_MS
  })

  it.effect("replays, refuses a changed payload, and frees a failed key, with no reservation", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const store = yield* recordingStore
      const failing = Effect.fail("boom" as const)
      expect(yield* Effect.flip(run(request(), failing))).toBe("boom")
      expect(yield* store.find("key_1", "idem-1", MONDAY_10_UTC)).toEqual(Option.none())
      const { runs, create } = yield* counter
      expect(yield* run(request(), create)).toEqual({ value: { n: 1 }, replayed: false })
      expect(yield* run(request(), create)).toEqual({ value: { n: 1 }, replayed: true })
      expect((yield* Effect.flip(run(request({ payload: { x: 1 } }), create)))._tag).toBe("IdempotencyKeyReused")
      yield* TestClock.adjust(Idempotency.RETENTION_MS)
      expect(yield* run(request(), create)).toEqual({ value: { n: 2 }, replayed: false })
      expect(yield* Ref.get(runs)).toBe(2)
    }).pipe(Effect.provide(RecordLayer)))

  it.effect("a request that recorded the key while this one worked wins: this one's result is dropped for its replay", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const store = yield* recordingStore
      const req = request()
      const racing = Effect.gen(function*() {
        // Another process completes the same request between this one's find and its record.
        expect(yield* store.record(claimOf(req, MONDAY_10_UTC), { status: 202, body: JSON.stringify({ n: 41 }) }))
          .toBe(true)
        return { n: 99 }
      })
      expect(yield* run(req, racing)).toEqual({ value: { n: 41 }, replayed: true })
      // With a different payload the winner's key is a reuse, not a replay.
      const other = request({ idempotencyKey: "idem-2" })
      const racingOther = Effect.as(
        store.record(claimOf(request({ idempotencyKey: "idem-2", payload: { other: 1 } }), MONDAY_10_UTC), {
          status: 202,
          body: JSON.stringify({ n: 5 })
        }),
        { n: 6 }
      )
      expect((yield* Effect.flip(run(other, racingOther)))._tag).toBe("IdempotencyKeyReused")
    }).pipe(Effect.provide(RecordLayer)))

  it.effect("retention is exact: replayed 1 ms before it ends, free when it has", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const { runs, create } = yield* counter
      yield* run(request({ retainUntil: MONDAY_10_UTC + HOUR }), create)
      yield* TestClock.adjust(HOUR + Idempotency.RETENTION_MS - 1)
      expect((yield* run(request(), create)).replayed).toBe(true)
      yield* TestClock.adjust(1)
      expect(yield* run(request(), create)).toEqual({ value: { n: 2 }, replayed: false })
      expect(yield* Ref.get(runs)).toBe(2)
    }).pipe(Effect.provide(RecordLayer)))
})

describe("retention", () => {
  it.effect("a record is replayed 23h59m later; after 24 h the key is free and a new action is created", () =>
    Effect.gen(function*() {
      const { caller, create, message } = yield* setup
      const first = yield* create(caller, message, "k-retention")
      yield* TestClock.adjust(23 * HOUR + 59 * MINUTE)
      const replay = yield* create(caller, message, "k-retention")
      expect(replay).toEqual({ ack: first.ack, replayed: true })
      yield* TestClock.adjust(MINUTE)
      const fresh = yield* create(caller, message, "k-retention")
      expect(fresh.replayed).toBe(false)
      expect(fresh.ack.id).not.toBe(first.ack.id)
      expect((yield* crmActions).length).toBe(2)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("retention is exact: replayed 1 ms before 24 h, free at 24 h", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const { runs, create } = yield* counter
      yield* run(request(), create)
      yield* TestClock.adjust(Idempotency.RETENTION_MS - 1)
      expect((yield* run(request(), create)).replayed).toBe(true)
      // A changed payload is still refused while the record is kept...
      expect((yield* Effect.flip(run(request({ payload: { x: 1 } }), create)))._tag).toBe("IdempotencyKeyReused")
      yield* TestClock.adjust(1)
      // ...and accepted once it has lapsed.
      expect(yield* run(request({ payload: { x: 1 } }), create)).toEqual({ value: { n: 2 }, replayed: false })
      expect(yield* Ref.get(runs)).toBe(2)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a scheduled action's record is kept until 24 h after its scheduledFor", () =>
    Effect.gen(function*() {
      const { caller, create, message } = yield* setup
      const scheduledFor = MONDAY_10_UTC + 48 * HOUR
      const scheduled: CreateMessageRequest = { ...message, scheduledFor: new Date(scheduledFor).toISOString() }
      const first = yield* create(caller, scheduled, "k-scheduled")
      expect(first.ack.status).toBe("scheduled")
      // Past the usual 24 hours, and past the scheduled time itself: still replayed.
      yield* TestClock.adjust(25 * HOUR)
      expect(yield* create(caller, scheduled, "k-scheduled")).toEqual({ ack: first.ack, replayed: true })
      yield* TestClock.setTime(scheduledFor + 24 * HOUR - 1)
      expect(yield* create(caller, scheduled, "k-scheduled")).toEqual({ ack: first.ack, replayed: true })
      const reused = yield* Effect.flip(create(caller, message, "k-scheduled"))
      expect(reused._tag).toBe("IdempotencyKeyReused")
      yield* TestClock.adjust(1)
      // Lapsed: the key is free for a new request.
      const fresh = yield* create(caller, message, "k-scheduled")
      expect(fresh.replayed).toBe(false)
      expect(fresh.ack.status).toBe("accepted")
      expect((yield* crmActions).length).toBe(2)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("retainUntil extends retention to 24 h after it (direct)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MONDAY_10_UTC)
      const { runs, create } = yield* counter
      const req = request({ retainUntil: MONDAY_10_UTC + 10 * HOUR })
      yield* run(req, create)
      yield* TestClock.adjust(34 * HOUR - 1)
      expect((yield* run(req, create)).replayed).toBe(true)
      yield* TestClock.adjust(1)
      expect((yield* run(req, create)).replayed).toBe(false)
      expect(yield* Ref.get(runs)).toBe(2)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("Idempotency-Key header", () => {
  const decode = Schema.decodeUnknownEither(IdempotencyHeaders)

  it("accepts 128 characters and refuses 129", () => {
    const ok = decode({ "idempotency-key": "k".repeat(128) })
    expect(Either.isRight(ok)).toBe(true)
    const tooLong = decode({ "idempotency-key": "k".repeat(129) })
    expect(Either.isLeft(tooLong)).toBe(true)
    if (Either.isLeft(tooLong)) expect(String(tooLong.left)).toContain("at most 128 characters")
  })

  it("refuses an empty key and accepts a one-character key", () => {
    // A missing header is the server's 400 IDEMPOTENCY_KEY_REQUIRED (raised by the handler, not by this schema).
    const empty = decode({ "idempotency-key": "" })
    expect(Either.isLeft(empty)).toBe(true)
    if (Either.isLeft(empty)) expect(String(empty.left)).toContain("must not be empty")
    expect(Either.isRight(decode({ "idempotency-key": "a" }))).toBe(true)
  })
})
