// How long an idle dispatcher sleeps between rounds: until the next action falls due, within bounds.
import { describe, expect, it } from "vitest"
import { MIN_PAUSE_MS, pauseMs } from "../src/dispatch/Dispatcher.js"

describe("dispatcher pause", () => {
  const now = 1_000_000
  it("sleeps the poll interval when nothing is scheduled", () => {
    expect(pauseMs(null, now, 50)).toBe(50)
  })
  it("wakes when the next action falls due, if that is sooner than the next poll", () => {
    expect(pauseMs(now + 20, now, 50)).toBe(20)
  })
  it("never sleeps past the poll interval (an action created meanwhile may be due at once)", () => {
    expect(pauseMs(now + 60_000, now, 50)).toBe(50)
  })
  it("pauses a few ms at least, so a steady stream is worked in batches rather than one round per action", () => {
    expect(MIN_PAUSE_MS).toBeGreaterThan(1)
    expect(pauseMs(now + 1, now, 50)).toBe(MIN_PAUSE_MS)
    expect(pauseMs(now - 500, now, 50)).toBe(MIN_PAUSE_MS)
  })
  it("keeps a poll interval shorter than the minimum pause", () => {
    expect(pauseMs(now - 500, now, MIN_PAUSE_MS - 1)).toBe(MIN_PAUSE_MS - 1)
  })
})
