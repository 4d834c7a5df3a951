// Sending hours: spec parsing/formatting, open/closed on the zone's wall
// clock, and nextOpening across weekends and DST changes.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  formatSendingHours,
  isOpen,
  isValidTimeZone,
  nextOpening,
  parseSendingHours,
  type SendingHours
} from "../src/domain/SendingHours.js"

const hoursOf = (spec: string, timezone: string): SendingHours =>
  Either.getOrThrowWith(parseSendingHours(spec, timezone), (error) => new Error(error.message))

const errorOf = (spec: string, timezone = "Europe/Berlin"): string =>
  Either.match(parseSendingHours(spec, timezone), {
    onLeft: (error) => `${error._tag}: ${error.message}`,
    onRight: () => "parsed"
  })

const utc = (iso: string): Date => new Date(iso)

const MINUTE = 60_000

/**
 * The reference answer by brute force: whether it is open at each whole minute
 * from `from` for `minutes` minutes, then the first open minute at or after a start.
 */
const bruteForce = (hours: SendingHours, from: number, minutes: number) => {
  const open = Array.from({ length: minutes }, (_, i) => isOpen(hours, new Date(from + i * MINUTE)))
  return (at: Date): number => {
    const first = open.indexOf(true, (at.getTime() - from) / MINUTE)
    return first < 0 ? Number.NaN : from + first * MINUTE
  }
}

describe("parseSendingHours", () => {
  it("parses a weekday range", () => {
    expect(hoursOf("Mon-Fri 09:00-17:00", "Europe/Berlin")).toEqual({
      timezone: "Europe/Berlin",
      windows: [{ days: [1, 2, 3, 4, 5], start: 540, end: 1020 }]
    })
  })

  it("parses always, case-insensitively, as no windows", () => {
    expect(hoursOf("  ALWAYS ", "UTC")).toEqual({ timezone: "UTC", windows: [] })
  })

  it("defaults to every day and tolerates ; , and whitespace", () => {
    expect(hoursOf(" mon - fri 9:00 - 12:00 ,  Sat 10:00-14:00;22:00-06:00 ", "America/New_York").windows).toEqual([
      { days: [1, 2, 3, 4, 5], start: 540, end: 720 },
      { days: [6], start: 600, end: 840 },
      { days: [0, 1, 2, 3, 4, 5, 6], start: 1320, end: 360 }
    ])
  })

  it("wraps day ranges around the week and accepts 24:00 as an end", () => {
    expect(hoursOf("Fri-Mon 10:00-24:00", "UTC").windows).toEqual([{ days: [0, 1, 5, 6], start: 600, end: 1440 }])
    expect(hoursOf("Sun 00:00-23:59", "UTC").windows).toEqual([{ days: [0], start: 0, end: 1439 }])
  })

  // Issue 33 (12): refused as "starts and ends at the same time", since 24:00 was compared as 00:00.
  it("accepts 00:00-24:00 as the whole day, open at every minute of it and nowhere else", () => {
    const weekend = hoursOf("Sat-Sun 00:00-24:00", "Europe/Berlin")
    expect(weekend.windows).toEqual([{ days: [0, 6], start: 0, end: 1440 }])
    expect(formatSendingHours(weekend)).toBe("Sat-Sun 00:00-24:00")
    // Saturday 2026-11-28 00:00 and Sunday 23:59 in Berlin (UTC+1) are open; Friday 23:59 and Monday 00:00 are not.
    expect(isOpen(weekend, new Date("2026-11-27T23:00:00Z"))).toBe(true)
    expect(isOpen(weekend, new Date("2026-11-29T22:59:00Z"))).toBe(true)
    expect(isOpen(weekend, new Date("2026-11-27T22:59:00Z"))).toBe(false)
    expect(isOpen(weekend, new Date("2026-11-29T23:00:00Z"))).toBe(false)
    expect(nextOpening(weekend, new Date("2026-11-27T12:00:00Z")).toISOString()).toBe("2026-11-27T23:00:00.000Z")
    expect(hoursOf("00:00-24:00", "UTC").windows).toEqual([{ days: [0, 1, 2, 3, 4, 5, 6], start: 0, end: 1440 }])
  })

  it("stores the canonical time zone name", () => {
    expect(hoursOf("always", "europe/berlin").timezone).toBe("Europe/Berlin")
  })

  it.each([
    ["", `Sending hours spec is empty; expected "always" or windows like "Mon-Fri 09:00-17:00"`],
    ["   ", `Sending hours spec is empty; expected "always" or windows like "Mon-Fri 09:00-17:00"`],
    [
      "Mun 09:00-17:00",
      `Unknown day "Mun" in window "Mun 09:00-17:00"; expected Mon, Tue, Wed, Thu, Fri, Sat or Sun`
    ],
    [
      "Mon-Fry 09:00-17:00",
      `Unknown day "Fry" in window "Mon-Fry 09:00-17:00"; expected Mon, Tue, Wed, Thu, Fri, Sat or Sun`
    ],
    [
      "Mon-Wed-Fri 09:00-17:00",
      `Cannot read days "Mon-Wed-Fri" in window "Mon-Wed-Fri 09:00-17:00"; expected a day such as "Mon" or a range such as "Mon-Fri"`
    ],
    [
      "Mon Tue 09:00-17:00",
      `Cannot read window "Mon Tue 09:00-17:00"; expected "[DAYS ]HH:MM-HH:MM", e.g. "Mon-Fri 09:00-17:00"`
    ],
    ["Mon-Fri", `Missing times in window "Mon-Fri"; expected "[DAYS ]HH:MM-HH:MM", e.g. "Mon-Fri 09:00-17:00"`],
    ["Mon 09:00", `Cannot read times "09:00" in window "Mon 09:00"; expected HH:MM-HH:MM`],
    ["9am-5pm", `Invalid start time "9am" in window "9am-5pm"; expected HH:MM between 00:00 and 23:59`],
    ["25:00-26:00", `Invalid start time "25:00" in window "25:00-26:00"; expected HH:MM between 00:00 and 23:59`],
    ["24:00-06:00", `Invalid start time "24:00" in window "24:00-06:00"; expected HH:MM between 00:00 and 23:59`],
    ["09:60-10:00", `Invalid start time "09:60" in window "09:60-10:00"; expected HH:MM between 00:00 and 23:59`],
    ["09:00-24:30", `Invalid end time "24:30" in window "09:00-24:30"; expected HH:MM between 00:00 and 24:00`],
    ["Mon 09:00-09:00", `Window "Mon 09:00-09:00" starts and ends at the same time`],
    ["Sat 00:00-00:00", `Window "Sat 00:00-00:00" starts and ends at the same time`],
    ["Mon 09:00-17:00;", `Empty window in sending hours spec "Mon 09:00-17:00;"`],
    ["always; Mon 09:00-10:00", `"always" cannot be combined with other windows`]
  ])("rejects %j", (spec, message) => {
    expect(errorOf(spec)).toBe(`SendingHoursSpecError: ${message}`)
  })

  it("rejects an unknown time zone", () => {
    expect(errorOf("Mon-Fri 09:00-17:00", "Mars/Olympus")).toBe(
      `SendingHoursSpecError: Unknown time zone "Mars/Olympus"; expected an IANA name such as "Europe/Berlin"`
    )
  })
})

describe("isValidTimeZone", () => {
  it("accepts IANA names and rejects anything else", () => {
    expect(isValidTimeZone("Europe/Berlin")).toBe(true)
    expect(isValidTimeZone("America/New_York")).toBe(true)
    expect(isValidTimeZone("UTC")).toBe(true)
    expect(isValidTimeZone("Mars/Olympus")).toBe(false)
    expect(isValidTimeZone("")).toBe(false)
  })
})

describe("formatSendingHours", () => {
  it.each([
    ["always", "always"],
    ["mon-fri 9:00-17:00", "Mon-Fri 09:00-17:00"],
    ["Fri-Mon 22:00-02:00", "Fri-Mon 22:00-02:00"],
    ["Sat-Sun 10:00-12:00", "Sat-Sun 10:00-12:00"],
    ["Sun 10:00-12:00", "Sun 10:00-12:00"],
    ["Mon-Sun 08:00-20:00", "08:00-20:00"],
    ["Sat 10:00-24:00, Sun 00:00-06:00", "Sat 10:00-24:00; Sun 00:00-06:00"],
    ["Mon-Fri 09:00-12:00; Mon-Fri 13:00-17:30; 22:00-00:00", "Mon-Fri 09:00-12:00; Mon-Fri 13:00-17:30; 22:00-00:00"]
  ])("formats %j as %j and parses back to the same value", (spec, formatted) => {
    const hours = hoursOf(spec, "Europe/Berlin")
    expect(formatSendingHours(hours)).toBe(formatted)
    expect(hoursOf(formatSendingHours(hours), hours.timezone)).toEqual(hours)
  })

  it("writes a hand-built non-contiguous day set as one window per run, with the same behaviour", () => {
    const hours: SendingHours = {
      timezone: "Europe/Berlin",
      windows: [{ days: [1, 3, 5, 6], start: 540, end: 1020 }]
    }
    const formatted = formatSendingHours(hours)
    expect(formatted).toBe("Mon 09:00-17:00; Wed 09:00-17:00; Fri-Sat 09:00-17:00")
    const reparsed = hoursOf(formatted, hours.timezone)
    for (let t = Date.parse("2026-03-02T00:00:00Z"); t < Date.parse("2026-03-09T00:00:00Z"); t += 30 * MINUTE) {
      expect(isOpen(reparsed, new Date(t))).toBe(isOpen(hours, new Date(t)))
    }
  })
})

describe("isOpen", () => {
  it("follows a weekday window in Europe/Berlin (CET, UTC+1)", () => {
    const hours = hoursOf("Mon-Fri 09:00-17:00", "Europe/Berlin")
    // Monday 2026-03-02
    expect(isOpen(hours, utc("2026-03-02T07:59:00Z"))).toBe(false) // 08:59
    expect(isOpen(hours, utc("2026-03-02T08:00:00Z"))).toBe(true) // 09:00
    expect(isOpen(hours, utc("2026-03-02T15:59:59Z"))).toBe(true) // 16:59:59
    expect(isOpen(hours, utc("2026-03-02T16:00:00Z"))).toBe(false) // 17:00
    // Saturday 2026-03-07, 10:00
    expect(isOpen(hours, utc("2026-03-07T09:00:00Z"))).toBe(false)
  })

  it("follows a weekday window in America/New_York (EDT, UTC-4)", () => {
    const hours = hoursOf("Mon-Fri 09:00-17:00", "America/New_York")
    // Monday 2026-06-15
    expect(isOpen(hours, utc("2026-06-15T12:59:00Z"))).toBe(false) // 08:59
    expect(isOpen(hours, utc("2026-06-15T13:00:00Z"))).toBe(true) // 09:00
    expect(isOpen(hours, utc("2026-06-15T20:59:00Z"))).toBe(true) // 16:59
    expect(isOpen(hours, utc("2026-06-15T21:00:00Z"))).toBe(false) // 17:00
    // Sunday 2026-06-14 12:00
    expect(isOpen(hours, utc("2026-06-14T16:00:00Z"))).toBe(false)
  })

  it("keeps a window crossing midnight open on both sides of midnight", () => {
    const hours = hoursOf("22:00-06:00", "Europe/Berlin")
    expect(isOpen(hours, utc("2026-03-02T20:59:00Z"))).toBe(false) // Mon 21:59
    expect(isOpen(hours, utc("2026-03-02T21:00:00Z"))).toBe(true) // Mon 22:00
    expect(isOpen(hours, utc("2026-03-02T22:59:00Z"))).toBe(true) // Mon 23:59
    expect(isOpen(hours, utc("2026-03-02T23:30:00Z"))).toBe(true) // Tue 00:30
    expect(isOpen(hours, utc("2026-03-03T04:59:00Z"))).toBe(true) // Tue 05:59
    expect(isOpen(hours, utc("2026-03-03T05:00:00Z"))).toBe(false) // Tue 06:00
  })

  it("opens Fri 22:00-02:00 early Saturday but not early Friday", () => {
    const hours = hoursOf("Fri 22:00-02:00", "Europe/Berlin")
    expect(isOpen(hours, utc("2026-03-06T00:00:00Z"))).toBe(false) // Fri 01:00
    expect(isOpen(hours, utc("2026-03-06T20:59:00Z"))).toBe(false) // Fri 21:59
    expect(isOpen(hours, utc("2026-03-06T21:00:00Z"))).toBe(true) // Fri 22:00
    expect(isOpen(hours, utc("2026-03-07T00:00:00Z"))).toBe(true) // Sat 01:00
    expect(isOpen(hours, utc("2026-03-07T00:59:00Z"))).toBe(true) // Sat 01:59
    expect(isOpen(hours, utc("2026-03-07T01:00:00Z"))).toBe(false) // Sat 02:00
    expect(isOpen(hours, utc("2026-03-07T21:00:00Z"))).toBe(false) // Sat 22:00
  })

  it("is always open for always", () => {
    const hours = hoursOf("always", "Europe/Berlin")
    expect(isOpen(hours, utc("2026-03-07T03:17:00Z"))).toBe(true)
    expect(isOpen(hours, utc("2026-10-25T01:30:00Z"))).toBe(true)
  })
})

describe("nextOpening", () => {
  const weekdays = hoursOf("Mon-Fri 09:00-17:00", "Europe/Berlin")

  it("holds a Friday evening action until Monday 09:00 local", () => {
    // Fri 2026-03-06 18:00 CET → Mon 2026-03-09 09:00 CET
    expect(nextOpening(weekdays, utc("2026-03-06T17:00:00Z")).toISOString()).toBe("2026-03-09T08:00:00.000Z")
    // exactly at closing time on Friday
    expect(nextOpening(weekdays, utc("2026-03-06T16:00:00Z")).toISOString()).toBe("2026-03-09T08:00:00.000Z")
  })

  it("opens later the same day when before the window", () => {
    // Mon 2026-03-02 07:30 CET → 09:00 CET
    expect(nextOpening(weekdays, utc("2026-03-02T06:30:00Z")).toISOString()).toBe("2026-03-02T08:00:00.000Z")
  })

  it("returns at itself when already open", () => {
    const at = utc("2026-03-06T15:59:30Z") // Fri 16:59:30
    expect(nextOpening(weekdays, at)).toBe(at)
  })

  it("returns at itself for always", () => {
    const at = utc("2026-03-07T03:17:00Z")
    expect(nextOpening(hoursOf("always", "America/New_York"), at)).toBe(at)
  })

  it("reopens a window crossing midnight at its start on the next listed day", () => {
    const hours = hoursOf("Fri 22:00-02:00", "Europe/Berlin")
    // Sat 2026-03-07 02:00 CET → Fri 2026-03-13 22:00 CET
    expect(nextOpening(hours, utc("2026-03-07T01:00:00Z")).toISOString()).toBe("2026-03-13T21:00:00.000Z")
  })

  describe("America/New_York spring forward (2026-03-08 02:00 EST → 03:00 EDT)", () => {
    it("opens Monday 09:00 EDT, not EST, after the weekend", () => {
      const hours = hoursOf("Mon-Fri 09:00-17:00", "America/New_York")
      // Fri 2026-03-06 18:00 EST
      expect(nextOpening(hours, utc("2026-03-06T23:00:00Z")).toISOString()).toBe("2026-03-09T13:00:00.000Z")
    })

    it("opens Sunday 09:00 EDT on the day of the change", () => {
      const hours = hoursOf("Sun 09:00-17:00", "America/New_York")
      // Sat 2026-03-07 12:00 EST
      expect(nextOpening(hours, utc("2026-03-07T17:00:00Z")).toISOString()).toBe("2026-03-08T13:00:00.000Z")
    })

    it("opens a window starting in the skipped hour at the first instant after the gap", () => {
      const hours = hoursOf("Sun 02:30-04:00", "America/New_York")
      const opening = nextOpening(hours, utc("2026-03-07T17:00:00Z"))
      expect(opening.toISOString()).toBe("2026-03-08T07:00:00.000Z") // 03:00 EDT
      expect(isOpen(hours, opening)).toBe(true)
      expect(isOpen(hours, new Date(opening.getTime() - 1000))).toBe(false) // 01:59:59 EST
    })

    it("skips a window lying wholly inside the gap to the next day", () => {
      const hours = hoursOf("02:00-02:30", "America/New_York")
      // Sun 2026-03-08 01:00 EST → Mon 2026-03-09 02:00 EDT
      expect(nextOpening(hours, utc("2026-03-08T06:00:00Z")).toISOString()).toBe("2026-03-09T06:00:00.000Z")
    })
  })

  describe("Europe/Berlin fall back (2026-10-25 03:00 CEST → 02:00 CET)", () => {
    it("opens Monday 09:00 CET, not CEST, after the weekend", () => {
      // Fri 2026-10-23 18:00 CEST
      expect(nextOpening(weekdays, utc("2026-10-23T16:00:00Z")).toISOString()).toBe("2026-10-26T08:00:00.000Z")
    })

    it("opens a window starting in the repeated hour at its first occurrence", () => {
      const hours = hoursOf("Sun 02:30-03:30", "Europe/Berlin")
      // Sat 2026-10-24 12:00 CEST → Sun 02:30 CEST (not 02:30 CET, 01:30Z)
      expect(nextOpening(hours, utc("2026-10-24T10:00:00Z")).toISOString()).toBe("2026-10-25T00:30:00.000Z")
    })

    it("reopens when the clock set back re-enters a window that had closed", () => {
      const hours = hoursOf("Sun 01:00-02:30", "Europe/Berlin")
      // 02:40 CEST is closed; at 03:00 CEST the clock reads 02:00 CET, inside the window again.
      const at = utc("2026-10-25T00:40:00Z")
      expect(isOpen(hours, at)).toBe(false)
      expect(nextOpening(hours, at).toISOString()).toBe("2026-10-25T01:00:00.000Z")
    })
  })

  it.each([
    ["Mon-Fri 09:00-17:00", "America/New_York", "2026-03-05T00:00:00Z"],
    ["Sun 01:30-03:15; Mon 08:00-09:00", "America/New_York", "2026-03-06T00:00:00Z"],
    ["22:00-02:30", "America/New_York", "2026-03-06T00:00:00Z"],
    ["Fri-Sun 02:15-02:45", "America/New_York", "2026-10-30T00:00:00Z"],
    ["Sun 02:00-02:30, Tue 10:00-11:00", "Europe/Berlin", "2026-10-23T00:00:00Z"],
    ["Sat-Sun 23:00-02:30", "Europe/Berlin", "2026-03-27T00:00:00Z"],
    ["Sun 01:00-02:30; Sun 02:45-02:50", "Europe/Berlin", "2026-10-23T00:00:00Z"]
  ])("agrees with minute-by-minute search for %j in %s around DST", (spec, timezone, from) => {
    const hours = hoursOf(spec, timezone)
    const start = Date.parse(from)
    const reference = bruteForce(hours, start, 14 * 24 * 60)
    // Every 10 minutes across four days, so starts fall before, inside and after windows and gaps.
    for (let t = start; t < start + 4 * 24 * 60 * MINUTE; t += 10 * MINUTE) {
      const at = new Date(t)
      expect(nextOpening(hours, at).getTime(), at.toISOString()).toBe(reference(at))
    }
  })
})
