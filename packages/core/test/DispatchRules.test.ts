// Dispatch rules: the live rules an action meets when it comes due. Outside
// the organisation's sending hours (read in its own time zone) the action is
// held until the window opens; an AI call of an organisation with AI calls off
// fails; a sending-hours spec that no longer parses does not block sending.
// `decide` is pure in its inputs: `now` is passed in, so no clock is involved.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { decide, type DispatchDecision } from "../src/domain/DispatchRules.js"
import { isOpen, parseSendingHours } from "../src/domain/SendingHours.js"
import type { ActionKind } from "../src/ports/ActionStore.js"
import { OPEN_ORGANISATION, type Organisation } from "../src/ports/Organisations.js"

const org = (overrides: Partial<Organisation> = {}): Organisation => ({
  id: "org_rules",
  name: "Rules Ltd",
  ...OPEN_ORGANISATION,
  smsAllowance: null,
  callAllowance: null,
  destinationCountries: null,
  premiumNumbersAllowed: false,
  internationalNetworksAllowed: false,
  botsManagementUrl: null,
  templatesManagementUrl: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  ...overrides
})

const at = (iso: string): number => Date.parse(iso)
const KINDS: ReadonlyArray<ActionKind> = ["message", "ai_call"]
const HOUR = 3_600_000

/** The hold instant as an ISO string, or the decision's tag when it is not a hold. */
const heldUntil = (decision: DispatchDecision): string =>
  decision._tag === "Hold" ? new Date(decision.until).toISOString() : decision._tag

describe("DispatchRules.decide: sending hours", () => {
  it("always-open hours send at once, at any hour, for both kinds", () => {
    for (const kind of KINDS) {
      for (const iso of ["2026-03-01T03:00:00Z", "2026-03-02T10:00:00Z", "2026-03-07T23:59:59Z"]) {
        expect(decide(org(), kind, at(iso))).toEqual({ _tag: "Send" })
      }
    }
  })

  it("inside the window: Send", () => {
    const o = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "Europe/Berlin" })
    // Monday 2026-03-02 10:00 UTC is 11:00 in Berlin.
    for (const kind of KINDS) expect(decide(o, kind, at("2026-03-02T10:00:00Z"))).toEqual({ _tag: "Send" })
  })

  it("before the window opens: held until it opens the same day, in the organisation's zone", () => {
    const o = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "America/New_York" })
    // Monday 10:00 UTC is 05:00 EST; the window opens at 09:00 EST = 14:00 UTC.
    for (const kind of KINDS) {
      expect(heldUntil(decide(o, kind, at("2026-03-02T10:00:00Z")))).toBe("2026-03-02T14:00:00.000Z")
    }
  })

  it("the time zone decides: the same instant and spec send in UTC but hold in New York and Tokyo", () => {
    const now = at("2026-03-02T10:00:00Z") // Monday
    const spec = "Mon-Fri 09:00-17:00"
    expect(decide(org({ sendingHours: spec, timezone: "UTC" }), "message", now)).toEqual({ _tag: "Send" })
    expect(heldUntil(decide(org({ sendingHours: spec, timezone: "America/New_York" }), "message", now)))
      .toBe("2026-03-02T14:00:00.000Z")
    // 19:00 Monday in Tokyo, after closing: opens Tuesday 09:00 JST = Tuesday 00:00 UTC.
    expect(heldUntil(decide(org({ sendingHours: spec, timezone: "Asia/Tokyo" }), "message", now)))
      .toBe("2026-03-03T00:00:00.000Z")
  })

  it("after Friday's closing: held over the weekend until Monday's opening, across a DST change", () => {
    const o = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "America/New_York" })
    // Friday 2026-03-06 17:30 EST. New York springs forward on Sunday 2026-03-08,
    // so Monday 09:00 is EDT (UTC-4) = 13:00 UTC, not 14:00.
    expect(heldUntil(decide(o, "message", at("2026-03-06T22:30:00Z")))).toBe("2026-03-09T13:00:00.000Z")
    // Saturday afternoon in Berlin: Monday 09:00 CET = 08:00 UTC.
    const berlin = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "Europe/Berlin" })
    expect(heldUntil(decide(berlin, "ai_call", at("2026-03-07T14:00:00Z")))).toBe("2026-03-09T08:00:00.000Z")
  })

  it("the window's edges: open at the opening instant, held a millisecond before, held from the closing instant", () => {
    const o = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "Europe/Berlin" })
    const opening = at("2026-03-02T08:00:00Z") // Monday 09:00 CET
    expect(decide(o, "message", opening)).toEqual({ _tag: "Send" })
    expect(decide(o, "message", opening - 1)).toEqual({ _tag: "Hold", until: opening })
    // Monday 17:00 CET = 16:00 UTC is closed; next opening Tuesday 08:00 UTC.
    expect(heldUntil(decide(o, "message", at("2026-03-02T16:00:00Z")))).toBe("2026-03-03T08:00:00.000Z")
    expect(decide(o, "message", at("2026-03-02T16:00:00Z") - 1)).toEqual({ _tag: "Send" })
  })

  it("over a week of instants, Send exactly when open and a Hold always ends at the next open instant", () => {
    const spec = "Mon-Fri 09:00-12:00; Sat 10:00-14:00; 22:00-23:30"
    const timezone = "Australia/Adelaide" // a half-hour offset
    const o = org({ sendingHours: spec, timezone })
    const hours = Either.getOrThrow(parseSendingHours(spec, timezone))
    const start = at("2026-03-01T00:00:00Z")
    let holds = 0
    let sends = 0
    for (let t = start; t < start + 7 * 24 * HOUR; t += 17 * 60_000) {
      const decision = decide(o, "message", t)
      const open = isOpen(hours, new Date(t))
      if (decision._tag === "Send") {
        sends++
        expect(open).toBe(true)
      } else if (decision._tag === "Hold") {
        holds++
        expect(open).toBe(false)
        expect(decision.until).toBeGreaterThan(t)
        expect(isOpen(hours, new Date(decision.until))).toBe(true)
        // Nothing open between now and `until`: the hold ends at the *next* opening.
        expect(isOpen(hours, new Date(decision.until - 60_000))).toBe(false)
        expect(decision.until - t).toBeLessThanOrEqual(7 * 24 * HOUR)
      } else {
        expect.fail(`unexpected ${decision._tag} for a text`)
      }
    }
    expect(sends).toBeGreaterThan(0)
    expect(holds).toBeGreaterThan(0)
  })
})

describe("DispatchRules.decide: AI settings", () => {
  it("AI calls off: an AI call fails with a reason", () => {
    const decision = decide(org({ aiCallsEnabled: false }), "ai_call", at("2026-03-02T10:00:00Z"))
    expect(decision._tag).toBe("Fail")
    if (decision._tag === "Fail") expect(decision.reason).toMatch(/AI call/i)
  })

  it("AI calls off: a call outside the window is never sent", () => {
    const o = org({ aiCallsEnabled: false, sendingHours: "Mon-Fri 09:00-17:00", timezone: "UTC" })
    expect(decide(o, "ai_call", at("2026-03-07T12:00:00Z"))._tag).not.toBe("Send")
  })

  it("AI calls off does not touch texts", () => {
    expect(decide(org({ aiCallsEnabled: false }), "message", at("2026-03-02T10:00:00Z"))).toEqual({ _tag: "Send" })
    const closed = org({ aiCallsEnabled: false, sendingHours: "Mon-Fri 09:00-17:00", timezone: "UTC" })
    expect(heldUntil(decide(closed, "message", at("2026-03-02T07:00:00Z")))).toBe("2026-03-02T09:00:00.000Z")
  })

  it("AI calls on: an AI call is sent", () => {
    expect(decide(org({ aiCallsEnabled: true }), "ai_call", at("2026-03-02T10:00:00Z"))).toEqual({ _tag: "Send" })
  })
})

describe("DispatchRules.decide: an unparsable spec is treated as open", () => {
  const badSpecs = ["Mon-Fri 9-17", "weekdays", "Mon-Fri 09:00-09:00", "Mon-Fri 25:00-26:00", "", "always; Mon 09:00-10:00"]

  it.each(badSpecs)("spec %j: Send at any time, for both kinds", (spec) => {
    expect(Either.isLeft(parseSendingHours(spec, "UTC"))).toBe(true)
    const o = org({ sendingHours: spec, timezone: "UTC" })
    for (const kind of KINDS) {
      // Sunday night, when any sensible window would be closed.
      expect(decide(o, kind, at("2026-03-01T23:30:00Z"))).toEqual({ _tag: "Send" })
    }
  })

  it("an unknown time zone makes the spec unreadable: Send", () => {
    const o = org({ sendingHours: "Mon-Fri 09:00-17:00", timezone: "Mars/Olympus_Mons" })
    expect(Either.isLeft(parseSendingHours(o.sendingHours, o.timezone))).toBe(true)
    expect(decide(o, "message", at("2026-03-01T23:30:00Z"))).toEqual({ _tag: "Send" })
  })

  it("an unparsable spec does not override AI settings", () => {
    const o = org({ sendingHours: "garbage", aiCallsEnabled: false })
    expect(decide(o, "ai_call", at("2026-03-02T10:00:00Z"))._tag).toBe("Fail")
  })
})
