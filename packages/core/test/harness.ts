/**
 * The core under test: every domain service over the memory ports, with a
 * fixed cursor secret and the default rate limit. Tests run with TestClock,
 * whose time starts at 0 (1970-01-01T00:00:00Z) unless a test sets it.
 */
import { Effect, Layer, TestClock } from "effect"
import { Demo } from "../src/internal.js"
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
