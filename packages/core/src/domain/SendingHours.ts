/**
 * Sending hours: the weekly window, in an organisation's own IANA time zone,
 * during which live texts and calls may be dispatched. An action due outside
 * the window is held until the window next opens (`nextOpening`).
 *
 * Spec format (passed through the CLI as `--sending-hours SPEC --timezone TZ`):
 *
 * - `always` — always open.
 * - One or more windows separated by `;` or `,` (whitespace tolerant), each
 *   `[DAYS ]HH:MM-HH:MM`:
 *   - DAYS is optional (default: every day) and is a single day (`Mon`) or a
 *     range (`Mon-Fri`); ranges may wrap around the week (`Fri-Mon`). Day
 *     names are the three-letter English names, case-insensitive.
 *   - The start is 00:00–23:59 and the end 00:00–24:00. An end earlier than
 *     the start crosses midnight: `Fri 22:00-02:00` opens at 22:00 on Friday
 *     and closes at 02:00 on Saturday. Equal start and end is an error;
 *     `00:00-24:00` is the whole day.
 *
 *   Examples: `Mon-Fri 09:00-17:00`, `Mon-Fri 09:00-12:00; Sat 10:00-14:00`,
 *   `22:00-06:00`.
 *
 * Open/closed is decided on the zone's wall clock, so around DST changes:
 * a window starting in a skipped hour (spring forward) opens at the first
 * instant after the gap, and a start time that occurs twice (fall back) opens
 * at its first occurrence. Time-zone arithmetic uses only `Intl.DateTimeFormat`.
 */
import { Data, Either } from "effect"

/** 0 = Sunday … 6 = Saturday, matching `Date.prototype.getUTCDay`. */
export type DayOfWeek = 0 | 1 | 2 | 3 | 4 | 5 | 6

export interface SendingWindow {
  /** Days on which the window opens; 0 = Sunday. */
  readonly days: ReadonlyArray<DayOfWeek>
  /** Minutes from local midnight, 0–1439. */
  readonly start: number
  /** Minutes from local midnight, 0–1440; `end < start` closes on the following day. */
  readonly end: number
}

export interface SendingHours {
  /** IANA time zone the windows are read in. */
  readonly timezone: string
  /** Empty means always open. */
  readonly windows: ReadonlyArray<SendingWindow>
}

export class SendingHoursSpecError extends Data.TaggedError("SendingHoursSpecError")<{ readonly message: string }> {}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const MINUTES_PER_DAY = 1440

const DAY_NAMES = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const
const ALL_DAYS: ReadonlyArray<DayOfWeek> = [0, 1, 2, 3, 4, 5, 6]

const toDayOfWeek = (n: number): DayOfWeek => {
  // Spelled out rather than cast so the compiler checks the narrowing.
  switch (((n % 7) + 7) % 7) {
    case 0:
      return 0
    case 1:
      return 1
    case 2:
      return 2
    case 3:
      return 3
    case 4:
      return 4
    case 5:
      return 5
    default:
      return 6
  }
}

// ---------------------------------------------------------------------------
// Time zones
// ---------------------------------------------------------------------------

// Building an Intl.DateTimeFormat is far more expensive than using one, and the
// dispatcher asks about the same few zones over and over.
const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timezone: string): Intl.DateTimeFormat => {
  const cached = formatters.get(timezone)
  if (cached !== undefined) return cached
  const formatter = new Intl.DateTimeFormat("en-US", {
    timeZone: timezone,
    // h23 rather than hour12: false, which renders midnight as "24" on some engines.
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric"
  })
  formatters.set(timezone, formatter)
  return formatter
}

// The canonical spelling of each valid zone asked about ("europe/berlin" → "Europe/Berlin"). The
// dispatcher parses an organisation's sending hours every round, and building the formatter that checks
// a zone each time was a visible share of a round (docs/benchmarks.md). Only valid zones are kept: there are a few hundred, so the map stays small
// whatever strings callers send.
const canonicalZones = new Map<string, string>()

const canonicalZone = (tz: string): string | undefined => {
  const cached = canonicalZones.get(tz)
  if (cached !== undefined) return cached
  if (tz.trim() === "") return undefined
  try {
    const canonical = new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone
    canonicalZones.set(tz, canonical)
    return canonical
  } catch {
    return undefined
  }
}

export const isValidTimeZone = (tz: string): boolean => canonicalZone(tz) !== undefined

interface WallClock {
  /** The local civil date and time, encoded as if it were a UTC instant (ms). */
  readonly local: number
  /** The local civil date at midnight, encoded the same way. */
  readonly date: number
  readonly weekday: DayOfWeek
  /** Minutes from local midnight. */
  readonly minuteOfDay: number
}

const wallClock = (timezone: string, t: number): WallClock => {
  let year = 0
  let month = 1
  let day = 1
  let hour = 0
  let minute = 0
  let second = 0
  for (const part of formatterFor(timezone).formatToParts(t)) {
    switch (part.type) {
      case "year":
        year = Number(part.value)
        break
      case "month":
        month = Number(part.value)
        break
      case "day":
        day = Number(part.value)
        break
      case "hour":
        hour = Number(part.value)
        break
      case "minute":
        minute = Number(part.value)
        break
      case "second":
        second = Number(part.value)
        break
      default:
        break
    }
  }
  const date = Date.UTC(year, month - 1, day)
  return {
    local: Date.UTC(year, month - 1, day, hour, minute, second),
    date,
    weekday: toDayOfWeek(new Date(date).getUTCDay()),
    minuteOfDay: hour * 60 + minute
  }
}

/** Zone offset (local minus UTC, ms) in force at instant `t`. */
const offsetAt = (timezone: string, t: number): number =>
  // The wall clock has whole-second resolution, so compare against the whole second.
  wallClock(timezone, t).local - Math.floor(t / 1000) * 1000

/**
 * Every instant at which the zone's clock reads the civil time `local`, in
 * ascending order: one normally, two in a repeated (fall-back) hour, none in
 * a spring-forward gap (`nextOpening` then opens at the transition itself).
 */
const instantsAtLocal = (timezone: string, local: number): ReadonlyArray<number> => {
  // Offsets either side of `local` cover any single transition near it
  // (`local` read as UTC is within ±14h of the real instants).
  const offsets = new Set([
    offsetAt(timezone, local - DAY),
    offsetAt(timezone, local),
    offsetAt(timezone, local + DAY)
  ])
  const found = new Set<number>()
  for (const offset of offsets) {
    const t = local - offset
    if (offsetAt(timezone, t) === offset) found.add(t)
  }
  return [...found].sort((a, b) => a - b)
}

/**
 * Instants in [from, to] at which the zone's offset changes. Sampled every 12h,
 * which assumes no zone changes offset twice within 12 hours.
 */
const transitionsBetween = (timezone: string, from: number, to: number): ReadonlyArray<number> => {
  const step = 12 * HOUR
  const transitions: Array<number> = []
  let previous = from
  let previousOffset = offsetAt(timezone, from)
  while (previous < to) {
    const next = Math.min(previous + step, to)
    const nextOffset = offsetAt(timezone, next)
    if (nextOffset !== previousOffset) {
      let lo = Math.floor(previous / 1000)
      let hi = Math.ceil(next / 1000)
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2)
        if (offsetAt(timezone, mid * 1000) === previousOffset) lo = mid
        else hi = mid
      }
      transitions.push(hi * 1000)
    }
    previous = next
    previousOffset = nextOffset
  }
  return transitions
}

// ---------------------------------------------------------------------------
// Open / next opening
// ---------------------------------------------------------------------------

const windowContains = (window: SendingWindow, clock: WallClock): boolean => {
  const minute = clock.minuteOfDay
  if (window.start < window.end) {
    return window.days.includes(clock.weekday) && minute >= window.start && minute < window.end
  }
  // Crosses midnight: the evening part belongs to today's listing, the
  // early-morning part to yesterday's.
  return (
    (window.days.includes(clock.weekday) && minute >= window.start) ||
    (window.days.includes(toDayOfWeek(clock.weekday - 1)) && minute < window.end)
  )
}

const isOpenAt = (hours: SendingHours, t: number): boolean => {
  if (hours.windows.length === 0) return true
  const clock = wallClock(hours.timezone, t)
  return hours.windows.some((window) => windowContains(window, clock))
}

export const isOpen = (hours: SendingHours, at: Date): boolean => isOpenAt(hours, at.getTime())

/** Returned when no window can ever open (only possible for windows listing no days). */
const NEVER = 8.64e15

/** Local days searched: a weekly schedule opens within 7, and one more absorbs a window lost to a DST gap. */
const HORIZON_DAYS = 8

/**
 * `at` itself when open; otherwise the earliest instant >= `at` at which
 * `isOpen` holds. Closed turns to open only where the wall clock reaches a
 * window start or jumps at a DST transition, so those instants over the next
 * 8 local days are the only candidates: no minute-by-minute stepping.
 *
 * The transition candidate is what makes a start inside a spring-forward gap
 * open at the first instant after the gap, and what catches a clock set back
 * into a window that had already closed. Of a start time that occurs twice,
 * the first occurrence >= `at` wins.
 */
export const nextOpening = (hours: SendingHours, at: Date): Date => {
  const t0 = at.getTime()
  if (isOpenAt(hours, t0)) return at
  const timezone = hours.timezone
  const today = wallClock(timezone, t0).date
  let best = NEVER
  const consider = (t: number): void => {
    if (t >= t0 && t < best && isOpenAt(hours, t)) best = t
  }
  // From yesterday: a clock set back over midnight can revisit it.
  for (let offset = -1; offset <= HORIZON_DAYS; offset++) {
    const date = today + offset * DAY
    // Zone offsets stay within ±14h, so nothing on this date or later can beat `best`.
    if (date - 14 * HOUR > best) break
    const weekday = toDayOfWeek(new Date(date).getUTCDay())
    for (const window of hours.windows) {
      if (!window.days.includes(weekday)) continue
      for (const t of instantsAtLocal(timezone, date + window.start * MINUTE)) consider(t)
    }
  }
  // Transitions later than the best start so far cannot win.
  const horizon = Math.min(best, t0 + (HORIZON_DAYS + 1) * DAY)
  for (const t of transitionsBetween(timezone, t0, horizon)) consider(t)
  return new Date(best)
}

// ---------------------------------------------------------------------------
// Parse / format
// ---------------------------------------------------------------------------

const specError = (message: string) => Either.left(new SendingHoursSpecError({ message }))

const DAY_LIST = "Mon, Tue, Wed, Thu, Fri, Sat or Sun"
const WINDOW_SHAPE = `"[DAYS ]HH:MM-HH:MM", e.g. "Mon-Fri 09:00-17:00"`

const parseDay = (name: string, window: string): Either.Either<DayOfWeek, SendingHoursSpecError> => {
  const index = DAY_NAMES.findIndex((day) => day.toLowerCase() === name.toLowerCase())
  return index < 0
    ? specError(`Unknown day "${name}" in window "${window}"; expected ${DAY_LIST}`)
    : Either.right(toDayOfWeek(index))
}

const parseDays = (token: string, window: string): Either.Either<ReadonlyArray<DayOfWeek>, SendingHoursSpecError> =>
  Either.gen(function*() {
    const names = token.split("-")
    const [first, last, ...rest] = names
    if (first === undefined || rest.length > 0) {
      return yield* specError(
        `Cannot read days "${token}" in window "${window}"; expected a day such as "Mon" or a range such as "Mon-Fri"`
      )
    }
    const from = yield* parseDay(first, window)
    if (last === undefined) return [from]
    const to = yield* parseDay(last, window)
    const days = new Set<DayOfWeek>()
    // Ranges wrap around the week: Fri-Mon is Fri, Sat, Sun, Mon.
    for (let day = from; ; day = toDayOfWeek(day + 1)) {
      days.add(day)
      if (day === to) break
    }
    // Kept sorted so that parse ∘ format gives back an equal value.
    return [...days].sort((a, b) => a - b)
  })

const parseTime = (
  text: string,
  which: "start" | "end",
  window: string
): Either.Either<number, SendingHoursSpecError> => {
  const max = which === "start" ? MINUTES_PER_DAY - 1 : MINUTES_PER_DAY
  const match = /^(\d{1,2}):(\d{2})$/.exec(text)
  const hour = Number(match?.[1])
  const minute = Number(match?.[2])
  const total = hour * 60 + minute
  if (match === null || minute > 59 || total > max) {
    const range = which === "start" ? "00:00 and 23:59" : "00:00 and 24:00"
    return specError(`Invalid ${which} time "${text}" in window "${window}"; expected HH:MM between ${range}`)
  }
  return Either.right(total)
}

const parseWindow = (window: string): Either.Either<SendingWindow, SendingHoursSpecError> =>
  Either.gen(function*() {
    // "Mon - Fri 09:00 - 17:00" reads the same as "Mon-Fri 09:00-17:00".
    if (window.toLowerCase() === "always") {
      return yield* specError(`"always" cannot be combined with other windows`)
    }
    const tokens = window.replace(/\s*-\s*/g, "-").split(/\s+/)
    const times = tokens.at(-1)
    if (tokens.length > 2 || times === undefined) {
      return yield* specError(`Cannot read window "${window}"; expected ${WINDOW_SHAPE}`)
    }
    // A last token with no digits is a day list with the times left off.
    if (!/\d/.test(times)) {
      return yield* specError(`Missing times in window "${window}"; expected ${WINDOW_SHAPE}`)
    }
    const [startText, endText, ...extra] = times.split("-")
    if (startText === undefined || endText === undefined || extra.length > 0) {
      return yield* specError(`Cannot read times "${times}" in window "${window}"; expected HH:MM-HH:MM`)
    }
    const daysToken = tokens.length === 2 ? tokens[0] : undefined
    const days = daysToken === undefined ? ALL_DAYS : yield* parseDays(daysToken, window)
    const start = yield* parseTime(startText, "start", window)
    const end = yield* parseTime(endText, "end", window)
    // A window whose end equals its start has no length. 24:00 is not 00:00
    // here: 00:00-24:00 is the whole day (`Sat-Sun 00:00-24:00`).
    if (start === end) {
      return yield* specError(`Window "${window}" starts and ends at the same time`)
    }
    return { days, start, end }
  })

export const parseSendingHours = (
  spec: string,
  timezone: string
): Either.Either<SendingHours, SendingHoursSpecError> =>
  Either.gen(function*() {
    // Stored in its canonical spelling ("europe/berlin" → "Europe/Berlin").
    const canonical = canonicalZone(timezone.trim())
    if (canonical === undefined) {
      return yield* specError(`Unknown time zone "${timezone}"; expected an IANA name such as "Europe/Berlin"`)
    }
    const trimmed = spec.trim()
    if (trimmed === "") {
      return yield* specError(`Sending hours spec is empty; expected "always" or windows like "Mon-Fri 09:00-17:00"`)
    }
    if (trimmed.toLowerCase() === "always") return { timezone: canonical, windows: [] }
    const windows: Array<SendingWindow> = []
    for (const part of trimmed.split(/[;,]/)) {
      const window = part.trim()
      if (window === "") {
        return yield* specError(`Empty window in sending hours spec "${trimmed}"`)
      }
      windows.push(yield* parseWindow(window))
    }
    return { timezone: canonical, windows }
  })

const formatTime = (minutes: number): string =>
  `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`

/**
 * Splits a set of days into runs of consecutive days (wrapping Sat → Sun),
 * each expressible as a single day or a range.
 */
const dayRuns = (days: ReadonlyArray<DayOfWeek>): ReadonlyArray<string> => {
  const set = new Set(days)
  const runs: Array<string> = []
  // Monday first, so a Fri-Mon run is printed as one range and the output is stable.
  for (const first of [1, 2, 3, 4, 5, 6, 0] as const) {
    if (!set.has(first) || set.has(toDayOfWeek(first - 1))) continue
    let last: DayOfWeek = first
    while (set.has(toDayOfWeek(last + 1))) last = toDayOfWeek(last + 1)
    runs.push(first === last ? DAY_NAMES[first] : `${DAY_NAMES[first]}-${DAY_NAMES[last]}`)
  }
  return runs
}

/**
 * The spec for `hours`; `parseSendingHours(formatSendingHours(h), h.timezone)`
 * gives back `h` for any `h` that parsing produced. A hand-built window whose
 * days are not one run is written as one window per run (same behaviour); one
 * listing no days never opens and is left out, and if that leaves nothing the
 * result is "" — which fails to parse rather than silently reading as `always`.
 */
export const formatSendingHours = (hours: SendingHours): string => {
  if (hours.windows.length === 0) return "always"
  const parts: Array<string> = []
  for (const window of hours.windows) {
    const times = `${formatTime(window.start)}-${formatTime(window.end)}`
    if (new Set(window.days).size === 7) {
      parts.push(times)
      continue
    }
    for (const run of dayRuns(window.days)) parts.push(`${run} ${times}`)
  }
  return parts.join("; ")
}
