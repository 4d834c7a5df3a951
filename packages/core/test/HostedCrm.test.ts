// A hosted CRM behind the Crm port (Zoho, in the server): it keeps its own record of every live action,
// whose id is the one the API answers and is asked by; it is made before the unit of work, keyed so that a
// retry finds the same record; test keys never reach it; its record-level refusal is the contract's 403.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref, Schema } from "effect"
import { Actions, CreateMessageRequest, Crm, UnitOfWork } from "../src/internal.js"
import { DomainLayer, MemoryPortsLayer } from "../src/layers.js"
import * as Cursors from "../src/domain/Cursors.js"
import { RateLimitConfig } from "../src/domain/RateLimiter.js"
import { callerFor, SALES, seedDemo } from "./harness.js"

const message = (fields: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(CreateMessageRequest)({ to: "+14155550123", fromNumberSid: SALES, body: "hello", ...fields })

/** What the hosted CRM saw: the keys of its records, and whether each was asked for inside a unit of work. */
class Seen extends Effect.Service<Seen>()("test/HostedCrm/Seen", {
  effect: Effect.map(
    Effect.all([Ref.make<ReadonlyArray<{ readonly key: string; readonly id: string; readonly inUnitOfWork: boolean }>>([]), Ref.make(0)]),
    ([drafts, depth]) => ({ drafts, depth })
  )
}) {}

/** The memory unit of work, counting how deep inside one the current code runs. */
const CountingUnitOfWork = Layer.effect(
  UnitOfWork.UnitOfWork,
  Effect.gen(function*() {
    const inner = yield* UnitOfWork.UnitOfWork
    const { depth } = yield* Seen
    return UnitOfWork.UnitOfWork.of({
      ...inner,
      atomically: (effect) =>
        Effect.acquireUseRelease(Ref.update(depth, (d) => d + 1), () => inner.atomically(effect), () => Ref.update(depth, (d) => d - 1))
    })
  })
).pipe(Layer.provide(UnitOfWork.layerMemory))

const HostedCrm = Layer.effect(
  Crm.Crm,
  Effect.gen(function*() {
    const inner = yield* Crm.Crm
    const { depth, drafts } = yield* Seen
    const ids = new Map<string, string>()
    return Crm.Crm.of({
      ...inner,
      recordAction: (draft) =>
        Effect.gen(function*() {
          // Upsert on the key: the same key is the same record.
          const id = ids.get(draft.key) ?? `5725767000000${524001 + ids.size}`
          ids.set(draft.key, id)
          const inUnitOfWork = (yield* Ref.get(depth)) > 0
          yield* Ref.update(drafts, (all) => [...all, { key: draft.key, id, inUnitOfWork }])
          return Option.some(id)
        }),
      findRecord: (orgId, module, id, labels) =>
        id === "9999"
          ? Effect.fail(new Crm.CrmError({ operation: "findRecord", cause: "NO_PERMISSION", reason: "permission_denied" }))
          : inner.findRecord(orgId, module, id, labels)
    })
  })
).pipe(Layer.provide(Crm.layerMemory))

const TestLayer = DomainLayer.pipe(
  Layer.provideMerge(Layer.mergeAll(MemoryPortsLayer, HostedCrm, CountingUnitOfWork)),
  Layer.provideMerge(Seen.Default),
  Layer.provideMerge(Cursors.layerFromSecret("test-secret")),
  Layer.provideMerge(RateLimitConfig.layer(RateLimitConfig.default))
)

describe("a hosted CRM's records of actions", () => {
  it.effect("the CRM record's id is the action's id, read and cancelled by it; Parley's own id is not an API id", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(caller, message({ scheduledFor: "2026-03-02T12:00:00Z" }), "k1")
      expect(ack.id).toMatch(/^\d{19}$/)
      const record = yield* actions.get(caller, "message", ack.id)
      expect(record.id).toBe(ack.id)
      const cancelled = yield* actions.cancel(caller, "message", ack.id)
      expect(cancelled).toMatchObject({ id: ack.id, status: "cancelled" })
      const byParleyId = yield* Effect.flip(actions.get(caller, "message", "1000"))
      expect(byParleyId._tag).toBe("NotFound")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a replay asks nothing of the CRM; another key makes another record; test keys make none", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const live = yield* callerFor(demo.keys.live)
      const test = yield* callerFor(demo.keys.test)
      const actions = yield* Actions.Actions
      const { drafts } = yield* Seen
      const first = yield* actions.createMessage(live, message(), "same")
      const replay = yield* actions.createMessage(live, message(), "same")
      expect(replay).toMatchObject({ replayed: true, ack: { id: first.ack.id } })
      const other = yield* actions.createMessage(live, message(), "other")
      expect(other.ack.id).not.toBe(first.ack.id)
      yield* actions.createMessage(test, message(), "test-key")
      const seen = yield* Ref.get(drafts)
      expect(seen).toHaveLength(2)
      expect(new Set(seen.map((d) => d.key)).size).toBe(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("the CRM record is made outside the unit of work (a network call must not hold a transaction)", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { drafts } = yield* Seen
      yield* actions.createMessage(caller, message(), "k-outside")
      expect((yield* Ref.get(drafts)).map((d) => d.inUnitOfWork)).toEqual([false])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("the CRM's refusal of the linked record is 403 CRM_PERMISSION_DENIED", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const error = yield* Effect.flip(actions.createMessage(caller, message({ record: { module: "Leads", id: "9999" } }), "k-denied"))
      expect(error._tag).toBe("CrmPermissionDenied")
    }).pipe(Effect.provide(TestLayer)))
})
