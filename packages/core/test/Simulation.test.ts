// The simulated carrier and AI-call provider: the documented lifecycles
// (texts Queued → Sending → Sent → Delivered, calls Queued → Ringing →
// In Progress → Completed), the deterministic failure numbers, and the
// transcript of a completed call, driven by the bot, the mode and the purpose.
import { describe, expect, it } from "@effect/vitest"
import type { CallMode } from "../src/contract/Primitives.js"
import { type CallStatus, FINAL_STATUSES, type MessageStatus } from "../src/contract/Statuses.js"
import { CallStatus as CallStatusSchema, MessageStatus as MessageStatusSchema } from "../src/contract/Statuses.js"
import {
  callStartOutcome,
  FAILURE_NUMBERS,
  nextCallStep,
  nextTextStep,
  type SendOutcome,
  textSendOutcome,
  transcript
} from "../src/domain/Simulation.js"

const ORDINARY = "+14155550123"

/** Every outcome of a text from the carrier's answer to its final status. */
const textLifecycle = (to: string): ReadonlyArray<SendOutcome<MessageStatus>> => {
  const steps: Array<SendOutcome<MessageStatus>> = [textSendOutcome(to)]
  for (let guard = 0; guard < 10; guard++) {
    const next = nextTextStep(steps[steps.length - 1]!.status, to)
    if (next === null) return steps
    steps.push(next)
  }
  throw new Error(`the text lifecycle to ${to} does not end`)
}

const callLifecycle = (to: string): ReadonlyArray<SendOutcome<CallStatus>> => {
  const steps: Array<SendOutcome<CallStatus>> = [callStartOutcome(to)]
  for (let guard = 0; guard < 10; guard++) {
    const next = nextCallStep(steps[steps.length - 1]!.status, to)
    if (next === null) return steps
    steps.push(next)
  }
  throw new Error(`the call lifecycle to ${to} does not end`)
}

const summary = <S>(steps: ReadonlyArray<SendOutcome<S>>) =>
  steps.map((s) => [s.status, s.providerStatus, s.errorMessage])

describe("failure numbers", () => {
  it("are the documented numbers, all distinct", () => {
    expect(FAILURE_NUMBERS).toEqual({
      textFailsAtSend: "+15005550001",
      textUndelivered: "+15005550002",
      callNoAnswer: "+15005550003",
      callBusy: "+15005550004",
      callFails: "+15005550005"
    })
    expect(new Set(Object.values(FAILURE_NUMBERS)).size).toBe(5)
  })
})

describe("texts", () => {
  it("an ordinary recipient: Sent, then Delivered, with no error", () => {
    expect(summary(textLifecycle(ORDINARY))).toEqual([
      ["Sent", "sent", null],
      ["Delivered", "delivered", null]
    ])
  })

  it("textFailsAtSend: Failed at once with the carrier's error, and nothing follows", () => {
    const steps = textLifecycle(FAILURE_NUMBERS.textFailsAtSend)
    expect(summary(steps)).toEqual([["Failed", "failed", "21211: Invalid 'To' phone number"]])
  })

  it("textUndelivered: Sent, then Undelivered with an errorMessage", () => {
    expect(summary(textLifecycle(FAILURE_NUMBERS.textUndelivered))).toEqual([
      ["Sent", "sent", null],
      ["Undelivered", "undelivered", "30003: Unreachable destination handset"]
    ])
  })

  it("call failure numbers do not affect texts", () => {
    for (const to of [FAILURE_NUMBERS.callNoAnswer, FAILURE_NUMBERS.callBusy, FAILURE_NUMBERS.callFails]) {
      expect(textLifecycle(to).map((s) => s.status)).toEqual(["Sent", "Delivered"])
    }
  })

  it("every lifecycle ends in a final status; final statuses have no next step", () => {
    for (const to of [ORDINARY, ...Object.values(FAILURE_NUMBERS)]) {
      const last = textLifecycle(to).at(-1)!
      expect(FINAL_STATUSES.has(last.status)).toBe(true)
      expect(last.status === "Delivered" || last.errorMessage !== null).toBe(true)
    }
    for (const status of MessageStatusSchema.literals) {
      if (FINAL_STATUSES.has(status)) {
        expect(nextTextStep(status, ORDINARY)).toBeNull()
        expect(nextTextStep(status, FAILURE_NUMBERS.textUndelivered)).toBeNull()
      }
    }
  })
})

describe("AI calls", () => {
  it("an ordinary recipient: Ringing → In Progress → Completed, with no error", () => {
    expect(summary(callLifecycle(ORDINARY))).toEqual([
      ["Ringing", "ringing", null],
      ["In Progress", "in-progress", null],
      ["Completed", "completed", null]
    ])
  })

  it("callNoAnswer: rings, then No Answer with an errorMessage", () => {
    const steps = callLifecycle(FAILURE_NUMBERS.callNoAnswer)
    expect(steps.map((s) => [s.status, s.providerStatus])).toEqual([["Ringing", "ringing"], ["No Answer", "no-answer"]])
    expect(steps[1]!.errorMessage).toEqual(expect.any(String))
    expect(steps[1]!.errorMessage).not.toBe("")
  })

  it("callBusy: rings, then Busy with an errorMessage", () => {
    const steps = callLifecycle(FAILURE_NUMBERS.callBusy)
    expect(steps.map((s) => [s.status, s.providerStatus])).toEqual([["Ringing", "ringing"], ["Busy", "busy"]])
    expect(steps[1]!.errorMessage).toEqual(expect.any(String))
    expect(steps[1]!.errorMessage).not.toBe("")
  })

  it("callFails: Failed at once with an errorMessage; it never rings", () => {
    expect(summary(callLifecycle(FAILURE_NUMBERS.callFails))).toEqual([
      ["Failed", "failed", "Call could not be connected"]
    ])
  })

  it("text failure numbers do not affect calls", () => {
    for (const to of [FAILURE_NUMBERS.textFailsAtSend, FAILURE_NUMBERS.textUndelivered]) {
      expect(callLifecycle(to).map((s) => s.status)).toEqual(["Ringing", "In Progress", "Completed"])
    }
  })

  it("every lifecycle ends in a final status; final statuses have no next step", () => {
    for (const to of [ORDINARY, ...Object.values(FAILURE_NUMBERS)]) {
      expect(FINAL_STATUSES.has(callLifecycle(to).at(-1)!.status)).toBe(true)
    }
    for (const status of CallStatusSchema.literals) {
      if (FINAL_STATUSES.has(status)) {
        for (const to of [ORDINARY, ...Object.values(FAILURE_NUMBERS)]) expect(nextCallStep(status, to)).toBeNull()
      }
    }
  })
})

describe("transcript", () => {
  const base = {
    botName: "Sales qualifier",
    mode: "follow_script" as CallMode,
    purposeMessage: null as string | null,
    to: ORDINARY
  }

  it("is deterministic and names the bot and the callee", () => {
    const text = transcript(base)
    expect(transcript({ ...base })).toBe(text)
    expect(text).toContain("Sales qualifier")
    expect(text).toContain(ORDINARY)
    expect(text.split("\n").length).toBeGreaterThan(2)
  })

  it("the bot drives it", () => {
    const other = transcript({ ...base, botName: "Appointment confirmer" })
    expect(other).toContain("Appointment confirmer")
    expect(other).not.toContain("Sales qualifier")
    expect(other).not.toBe(transcript(base))
  })

  it("deliver_specific_message delivers the purposeMessage", () => {
    const purpose = "Your appointment on Friday at 10:00 is confirmed."
    const text = transcript({ ...base, mode: "deliver_specific_message", purposeMessage: purpose })
    expect(text).toContain(purpose)
    expect(text).not.toBe(transcript({ ...base, mode: "deliver_specific_message", purposeMessage: "Something else." }))
  })

  it("the mode drives it: the same purpose reads differently under follow_script", () => {
    const purpose = "We would like to book your annual review."
    const delivered = transcript({ ...base, mode: "deliver_specific_message", purposeMessage: purpose })
    const scripted = transcript({ ...base, mode: "follow_script", purposeMessage: purpose })
    expect(scripted).not.toBe(delivered)
    expect(scripted).toContain(purpose)
  })

  it("follow_script without a purpose still holds a conversation, and a purpose changes it", () => {
    const without = transcript(base)
    const withPurpose = transcript({ ...base, purposeMessage: "Ask about the renewal." })
    expect(withPurpose).toContain("Ask about the renewal.")
    expect(without).not.toBe(withPurpose)
    expect(without).toMatch(/Contact:/)
  })
})
