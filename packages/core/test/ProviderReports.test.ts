// ProviderReports: forward-only application of providers' reports, and the race between two reports about one
// action (Twilio posts `sent` and `delivered` close together): the loser is judged again against what the
// winner left, so a later status is never dropped.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as ProviderReports from "../src/domain/ProviderReports.js"
import * as ActionStore from "../src/ports/ActionStore.js"
import * as EventOutbox from "../src/ports/EventOutbox.js"
import * as UnitOfWork from "../src/ports/UnitOfWork.js"
import { sampleText } from "./harness.js"

/** A memory store in which, once, another report (`sent`) lands between a report's read and its update. */
const racingStore = Layer.effect(
  ActionStore.ActionStore,
  Effect.gen(function*() {
    const inner = yield* ActionStore.ActionStore
    let raced = false
    return ActionStore.ActionStore.of({
      ...inner,
      applyProviderReport: (orgId, id, expected, change) =>
        Effect.gen(function*() {
          if (!raced) {
            raced = true
            yield* inner.applyProviderReport(orgId, id, expected, {
              status: "Sent",
              providerStatus: "sent",
              workAt: null,
              modified: change.modified
            })
          }
          return yield* inner.applyProviderReport(orgId, id, expected, change)
        })
    })
  })
).pipe(Layer.provideMerge(ActionStore.layerMemory))

const TestLayer = ProviderReports.layer.pipe(
  Layer.provideMerge(racingStore),
  Layer.provideMerge(Layer.mergeAll(EventOutbox.layerMemory, UnitOfWork.layerMemory))
)

describe("ProviderReports", () => {
  it.effect("a report that loses a race to an earlier step is judged again and applied after it", () =>
    Effect.gen(function*() {
      const store = yield* ActionStore.ActionStore
      const { id: _id, ...base } = sampleText
      const action = yield* store.insertAction({ ...base, status: "Sending", sid: null })
      const reports = yield* ProviderReports.ProviderReports
      const outcome = yield* reports.report({
        orgId: action.orgId,
        actionId: action.id,
        kind: "message",
        status: "Delivered",
        providerStatus: "delivered"
      })
      expect(outcome._tag).toBe("Applied")
      const now = yield* store.findAction(action.orgId, action.id)
      expect(Option.map(now, (a) => a.status)).toEqual(Option.some("Delivered"))
      const events = yield* Effect.flatMap(EventOutbox.EventOutbox, (o) => o.list(action.orgId))
      expect(events.map((e) => e.type)).toEqual(["message.delivered"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reports only move forward: a late `sent` after `delivered` changes nothing", () =>
    Effect.gen(function*() {
      const store = yield* ActionStore.ActionStore
      const { id: _id, ...base } = sampleText
      const action = yield* store.insertAction({ ...base, status: "Delivered" })
      const reports = yield* ProviderReports.ProviderReports
      const outcome = yield* reports.report({
        orgId: action.orgId,
        actionId: action.id,
        kind: "message",
        status: "Sent",
        providerStatus: "sent"
      })
      expect(outcome).toEqual({ _tag: "Ignored", current: "Delivered" })
    }).pipe(Effect.provide(ProviderReports.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(ActionStore.layerMemory, EventOutbox.layerMemory, UnitOfWork.layerMemory))
    ))))
})
