// Recipient-local quiet hours: the zone table generated from libphonenumber's and CLDR's data (checked against
// its sources and known numbers), the zone a number's local time is read in, the most restrictive reading of an
// area code that spans zones, and the `--recipient-hours` spec.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { areaCodeZones, countryZones, timeZoneMap } from "../scripts/generate-recipient-zones.js"
import { openingInEveryZone, parseRecipientHours, releaseAt, zonesOf } from "../src/domain/RecipientHours.js"
import { AREA_CODE_ZONES, COUNTRY_ZONES } from "../src/domain/RecipientZoneTable.js"
import { isValidTimeZone, parseSendingHours } from "../src/domain/SendingHours.js"

const windows = (spec: string) => Either.getOrThrow(parseSendingHours(spec, "UTC")).windows

describe("the recipient zone table", () => {
  const map = timeZoneMap()

  it("is what the script generates from libphonenumber's map and CLDR (run scripts/generate-recipient-zones.ts)", () => {
    expect(AREA_CODE_ZONES).toEqual(areaCodeZones(map))
    expect(COUNTRY_ZONES).toEqual(countryZones(map))
  })

  it("holds the area codes and countries everyone knows", () => {
    expect(map.get("1212")).toEqual(["America/New_York"])
    expect(AREA_CODE_ZONES["212"]).toEqual(["America/New_York"])
    expect(AREA_CODE_ZONES["213"]).toEqual(["America/Los_Angeles"])
    expect(AREA_CODE_ZONES["312"]).toEqual(["America/Chicago"])
    expect(AREA_CODE_ZONES["808"]).toEqual(["Pacific/Honolulu"])
    expect(AREA_CODE_ZONES["416"]).toEqual(["America/Toronto"])
    expect(AREA_CODE_ZONES["876"]).toEqual(["America/Jamaica"])
    // Idaho's 208 is Mountain in the south and Pacific in the north; the Florida panhandle's 850 Central and Eastern.
    expect(AREA_CODE_ZONES["208"]).toEqual(expect.arrayContaining(["America/Boise", "America/Los_Angeles"]))
    expect(AREA_CODE_ZONES["850"]).toEqual(["America/Chicago", "America/New_York"])
    // Toll-free and other non-geographic codes belong to no zone.
    expect(AREA_CODE_ZONES["800"]).toBeUndefined()
    expect(Object.keys(AREA_CODE_ZONES).length).toBeGreaterThan(400)
    expect(COUNTRY_ZONES).toMatchObject({ GB: "Europe/London", FR: "Europe/Paris", DE: "Europe/Berlin", JP: "Asia/Tokyo", CN: "Asia/Shanghai" })
    for (const spread of ["ES", "RU", "BR", "AU", "MX"]) expect(COUNTRY_ZONES[spread]).toBeUndefined()
  })

  it("names only zones this runtime knows", () => {
    const zones = [...Object.values(AREA_CODE_ZONES).flat(), ...Object.values(COUNTRY_ZONES)]
    expect(zones.filter((zone) => !isValidTimeZone(zone))).toEqual([])
  })
})

describe("the zone of a number", () => {
  it("is its area code's in North America, its country's elsewhere, and unknown otherwise", () => {
    expect(zonesOf("+12125550123")).toEqual(["America/New_York"])
    expect(zonesOf("+442079460123")).toEqual(["Europe/London"])
    expect(zonesOf("+447700900123")).toEqual(["Europe/London"])
    expect(zonesOf("+33612345678")).toEqual(["Europe/Paris"])
    expect(zonesOf("+18005550123")).toBeNull()
    expect(zonesOf("+61491570156")).toBeNull()
    expect(zonesOf("+79123456789")).toBeNull()
  })

  it("falls back to the organisation's zone, and holds nothing when the rule is off", () => {
    // 2026-03-03T03:00Z: 12:00 in Tokyo, 22:00 the evening before in New York.
    const at = Date.parse("2026-03-03T03:00:00Z")
    const organisation = { recipientHours: "08:00-21:00", timezone: "Asia/Tokyo" }
    expect(releaseAt(organisation, "+61491570156", at)).toBe(at)
    expect(releaseAt(organisation, "+12125550123", at)).toBe(Date.parse("2026-03-03T13:00:00Z"))
    expect(releaseAt({ ...organisation, timezone: "America/New_York" }, "+61491570156", at)).toBe(Date.parse("2026-03-03T13:00:00Z"))
    expect(releaseAt({ ...organisation, recipientHours: null }, "+12125550123", at)).toBe(at)
  })
})

describe("an area code that spans zones", () => {
  const zones = ["America/Chicago", "America/New_York"]

  it("opens when the window opens in its westernmost zone and closes when it closes in its easternmost", () => {
    const hours = windows("08:00-21:00")
    // 07:30 in Chicago (08:30 in New York): wait for 08:00 in Chicago.
    expect(openingInEveryZone(hours, zones, Date.parse("2026-03-03T13:30:00Z"))).toBe(Date.parse("2026-03-03T14:00:00Z"))
    // 20:30 in Chicago is 21:30 in New York: closed until 08:00 in Chicago the next day.
    expect(openingInEveryZone(hours, zones, Date.parse("2026-03-04T02:30:00Z"))).toBe(Date.parse("2026-03-04T14:00:00Z"))
    const noon = Date.parse("2026-03-03T18:00:00Z")
    expect(openingInEveryZone(hours, zones, noon)).toBe(noon)
  })

  it("opens a window shorter than the spread when it opens in the zone where it opens last", () => {
    // 09:00-09:30 is never open in Chicago and New York at once.
    const at = Date.parse("2026-03-03T12:00:00Z")
    expect(openingInEveryZone(windows("09:00-09:30"), zones, at)).toBeGreaterThan(at)
    expect(new Date(openingInEveryZone(windows("09:00-09:30"), zones, at)).getUTCMinutes()).toBe(0)
  })
})

describe("--recipient-hours", () => {
  it("takes windows in their canonical spelling, or off", () => {
    expect(parseRecipientHours("8:00 - 21:00")).toEqual(Either.right("08:00-21:00"))
    expect(parseRecipientHours("Mon-Sat 09:00-20:00")).toEqual(Either.right("Mon-Sat 09:00-20:00"))
    expect(parseRecipientHours(" OFF ")).toEqual(Either.right(null))
  })

  it("refuses always and what sending hours refuse", () => {
    expect(Either.isLeft(parseRecipientHours("always"))).toBe(true)
    expect(Either.isLeft(parseRecipientHours("08:00-25:00"))).toBe(true)
    expect(Either.isLeft(parseRecipientHours(""))).toBe(true)
  })
})
