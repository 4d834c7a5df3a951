/**
 * Recipient-local quiet hours: an organisation's window (`08:00-21:00`, written as sending hours are, see
 * SendingHours) read on the recipient's own clock, outside which live texts and calls are held until it opens.
 * US rules set calling hours in the called party's local time (the TCPA's 8 a.m.–9 p.m.; several states'
 * narrower ones), which the organisation's own sending hours cannot express for recipients spread over zones.
 *
 * The recipient's zone comes from the number (RecipientZoneTable, generated from libphonenumber's and CLDR's
 * data):
 * - a North American number (+1): its area code's zones. An area code that spans zones (850: Central and
 *   Eastern) takes the most restrictive reading: the window must be open in every one of its zones, so it opens
 *   when it opens in the last of them (the westernmost) and closes when it closes in the first (the easternmost);
 * - another number: its country's zone, when the country keeps one clock;
 * - anything else (an area code the table does not know, toll-free and other non-geographic codes, a country
 *   with zones apart such as Spain, Russia or Brazil): the organisation's own zone.
 */
import { Either } from "effect"
import { parsePhoneNumberFromString } from "libphonenumber-js/max"
import { AREA_CODE_ZONES, COUNTRY_ZONES } from "./RecipientZoneTable.js"
import { formatSendingHours, nextOpening, parseSendingHours, type SendingWindow } from "./SendingHours.js"

/** What `--recipient-hours` takes to turn the rule off, and how an organisation without it shows. */
export const OFF = "off"

const NANP = /^\+1(\d{3})\d{7}$/

/** The zones the number's local time is read in, or null when the number does not tell (the organisation's zone then). */
export const zonesOf = (phone: string): ReadonlyArray<string> | null => {
  // Most recipients of a North American sender are North American: the area code is read without a parse.
  const nanp = NANP.exec(phone)
  if (nanp !== null) return AREA_CODE_ZONES[nanp[1] ?? ""] ?? null
  const parsed = parsePhoneNumberFromString(phone)
  if (parsed === undefined || parsed.countryCallingCode === "1") return null
  const region = parsed.country ?? parsed.getPossibleCountries()[0]
  const zone = region === undefined ? undefined : COUNTRY_ZONES[region]
  return zone === undefined ? null : [zone]
}

/**
 * Reads `--recipient-hours`: `off` (null), or windows as sending hours take them (`08:00-21:00`,
 * `Mon-Sat 09:00-20:00`), answered in their canonical spelling. `always` is refused: it would be `off`.
 */
export const parseRecipientHours = (spec: string): Either.Either<string | null, string> => {
  const trimmed = spec.trim()
  if (trimmed.toLowerCase() === OFF) return Either.right(null)
  if (trimmed.toLowerCase() === "always") {
    return Either.left(`"always" holds nothing: use "${OFF}" to turn recipient-local hours off`)
  }
  return Either.mapBoth(parseSendingHours(trimmed, "UTC"), {
    onLeft: (error) => error.message,
    onRight: formatSendingHours
  })
}

// The dispatcher reads an organisation's spec for every held or due action; the specs in use are few.
const parsedSpecs = new Map<string, ReadonlyArray<SendingWindow> | null>()
const SPEC_CACHE_SIZE = 256

const windowsOf = (spec: string): ReadonlyArray<SendingWindow> | null => {
  const cached = parsedSpecs.get(spec)
  if (cached !== undefined) return cached
  const parsed = parseSendingHours(spec, "UTC")
  // A spec that no longer parses (edited by hand) must not block every send: it holds nothing.
  const windows = Either.isRight(parsed) && parsed.right.windows.length > 0 ? parsed.right.windows : null
  if (parsedSpecs.size >= SPEC_CACHE_SIZE) parsedSpecs.clear()
  parsedSpecs.set(spec, windows)
  return windows
}

/** Rounds of "the latest opening so far" before giving up on a window that is never open in every zone at once. */
const MAX_ROUNDS = 16

/**
 * The first instant at or after `at` (epoch ms) at which the windows are open in every zone: `at` itself when
 * they are. Each round moves to the latest of the zones' next openings, which only ever moves forward. A window
 * shorter than the zones' spread (09:00-09:30 over Central and Eastern) is never open in all of them at once:
 * it then opens when it opens in the zone where it opens last.
 */
export const openingInEveryZone = (windows: ReadonlyArray<SendingWindow>, zones: ReadonlyArray<string>, at: number): number => {
  let t = at
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let latest = t
    for (const timezone of zones) latest = Math.max(latest, nextOpening({ timezone, windows }, new Date(t)).getTime())
    if (latest === t) return t
    t = latest
  }
  return t
}

/**
 * When an action to `to` may go out under the organisation's recipient-local hours: `now` when it may now (or
 * the rule is off), else the instant the window opens on the recipient's clock.
 */
export const releaseAt = (
  organisation: { readonly recipientHours?: string | null | undefined; readonly timezone: string },
  to: string,
  now: number
): number => {
  const spec = organisation.recipientHours
  if (spec === undefined || spec === null) return now
  const windows = windowsOf(spec)
  if (windows === null) return now
  return openingInEveryZone(windows, zonesOf(to) ?? [organisation.timezone], now)
}
