/**
 * The core under test: every domain service over the memory ports, with a
 * fixed cursor secret and the default rate limit. Tests run with TestClock,
 * whose time starts at 0 (1970-01-01T00:00:00Z) unless a test sets it.
 */
import { Effect, Layer, TestClock } from "effect"
import { ActionStore, Demo, EventOutbox } from "../src/internal.js"
import * as Authenticator from "../src/domain/Authenticator.js"
import * as Cursors from "../src/domain/Cursors.js"
import { RateLimitConfig } from "../src/domain/RateLimiter.js"
import { DomainLayer, MemoryPortsLayer } from "../src/layers.js"
import { type Action, NO_SENDING_DETAILS } from "../src/ports/ActionStore.js"

export const CoreTestLayer = DomainLayer.pipe(
  Layer.provideMerge(MemoryPortsLayer),
  Layer.provideMerge(Cursors.layerFromSecret("test-secret")),
  Layer.provideMerge(RateLimitConfig.layer(RateLimitConfig.default))
)

/** The demo organisation's numbers (sid, then line): two SMS lines and a WhatsApp one. */
export const SALES = "PN00000000000000000000000000000001"
export const SALES_LINE = "+14155550100"
export const SUPPORT = "PN00000000000000000000000000000002"
export const SUPPORT_LINE = "+14155550101"
export const WHATSAPP = "PN00000000000000000000000000000003"
export const WHATSAPP_LINE = "+14155550199"

/** Every CRM action of the organisation, newest first. */
export const crmActions = (orgId: string) =>
  Effect.flatMap(ActionStore.ActionStore, (store) =>
    store.queryActions({
      orgId,
      kinds: ["message", "ai_call"],
      lines: null,
      ownerId: null,
      conversation: null,
      beforeId: null,
      limit: 10_000
    }))

/** The organisation's events in the outbox. */
export const events = (orgId: string) => Effect.flatMap(EventOutbox.EventOutbox, (outbox) => outbox.list(orgId))

/**
 * The failure of `effect`. A success fails the test with a plain message: an
 * Effect failing with a Schema.Class-laden value can stall vitest's reporter.
 */
export const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<E, string, R> =>
  Effect.flip(Effect.as(effect, "expected a failure, but the effect succeeded"))

/** 2026-03-02T10:00:00Z, a Monday. */
export const MONDAY_10_UTC = Date.parse("2026-03-02T10:00:00Z")

/** Sets the clock, seeds the demo organisation and answers its summary (with fresh test and live keys). */
export const seedDemo = Effect.gen(function*() {
  yield* TestClock.setTime(MONDAY_10_UTC)
  return yield* Demo.seedDemo()
})

/** The caller a token authenticates as (also consumes one rate-limit unit). */
export const callerFor = (token: string) =>
  Effect.map(Effect.flatMap(Authenticator.Authenticator, (a) => a.authenticate(token)), (r) => r.caller)

/** A delivered outbound text as the CRM port holds it, for tests that build records and events from one. */
export const sampleText: Action = {
  id: "1001",
  orgId: "org_sample",
  kind: "message",
  type: "SMS",
  direction: "Outbound",
  status: "Delivered",
  line: "+14155550100",
  counterpart: "+447700900001",
  fromNumberSid: "PN00000000000000000000000000000001",
  body: "Hi Ada, see you tomorrow.",
  mediaUrls: [],
  ...NO_SENDING_DETAILS,
  read: "2026-03-02T09:59:00.000Z",
  at: "2026-03-02T09:59:00.000Z",
  scheduledFor: null,
  dueAt: MONDAY_10_UTC - 60_000,
  owner: { id: "crm_user_demo", name: "Dana Demo" },
  record: { module: "Leads", id: "5001", name: "Ada Lovelace" },
  linkedRecords: [{ module: "Leads", id: "5001", name: "Ada Lovelace" }],
  sid: "SM0123456789",
  audioFileId: null,
  errorMessage: null,
  sentBy: "API key key_123",
  modified: "2026-03-02T09:59:30.000Z",
  apiKeyId: "key_123"
}
