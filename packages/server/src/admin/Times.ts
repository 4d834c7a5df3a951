/**
 * How the console shows a time: readable, in the organisation's time zone ("28 Nov 2026, 14:05 CET"), in a
 * `<time>` element whose `datetime` and `title` keep the exact ISO instant (shown on hover, read by tools).
 * One helper for every page, so no page shows a raw ISO string or a time in the server's own zone.
 */
import { Html, html } from "./Html.js"

/** One formatter per zone: building an Intl.DateTimeFormat costs far more than using one. */
const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timezone: string): Intl.DateTimeFormat => {
  const known = formatters.get(timezone)
  if (known !== undefined) return known
  let made: Intl.DateTimeFormat
  try {
    made = new Intl.DateTimeFormat("en-GB", {
      day: "numeric",
      month: "short",
      year: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
      timeZone: timezone,
      timeZoneName: "short"
    })
  } catch {
    // A zone this runtime does not know (stored by a newer release): UTC, which the label then says.
    made = formatterFor("UTC")
  }
  formatters.set(timezone, made)
  return made
}

/** "28 Nov 2026, 14:05 CET" for an instant in `timezone`. */
export const readableTime = (instant: Date, timezone: string): string => formatterFor(timezone).format(instant)

/**
 * A time as the console shows it: `<time datetime=ISO title=ISO>readable</time>`. Accepts an ISO string or
 * milliseconds; `absent` is shown for null (and a value that is not a time is shown as it is, escaped).
 */
export const timeOf = (value: string | number | null | undefined, timezone: string, absent = "—"): Html => {
  if (value === null || value === undefined || value === "") return html`${absent}`
  const instant = new Date(value)
  if (Number.isNaN(instant.getTime())) return html`${String(value)}`
  const iso = instant.toISOString()
  return html`<time datetime="${iso}" title="${iso}">${readableTime(instant, timezone)}</time>`
}

/** For text that is not markup (an option's label): the readable time alone. */
export const timeText = (value: string | number, timezone: string): string => {
  const instant = new Date(value)
  return Number.isNaN(instant.getTime()) ? String(value) : readableTime(instant, timezone)
}

