// Destination rules' edges (issue 35, 21): UK personal numbers (070) are premium-rate in effect, and a +1
// number that no region of the North American Numbering Plan claims is refused, not taken for the US.
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { Destinations } from "../src/internal.js"

const US_LINE = "+14155550100"
const UK_LINE = "+447912345678"
const anywhere: Destinations.DestinationRules = { countries: [Destinations.ANY_REGION], premiumNumbers: false, internationalNetworks: false }

const refused = (rules: Destinations.DestinationRules, line: string, to: string): string | null => {
  const outcome = Destinations.refusal(rules, line, to)
  return Either.isLeft(outcome) ? outcome.left : null
}

describe("destination rules: edges", () => {
  it("UK personal numbers (+44 70) are refused as premium-rate unless premium numbers are allowed", () => {
    expect(refused(Destinations.DEFAULT_RULES, UK_LINE, "+447012345678")).toContain("premium-rate")
    expect(refused(anywhere, US_LINE, "+447012345678")).toContain("premium-rate")
    expect(refused({ ...anywhere, premiumNumbers: true }, US_LINE, "+447012345678")).toBeNull()
    // UK mobiles stay ordinary; NANP personal numbers (5XX) are ordinary rates.
    expect(refused(Destinations.DEFAULT_RULES, UK_LINE, "+447912345678")).toBeNull()
    expect(refused(Destinations.DEFAULT_RULES, US_LINE, "+15005550006")).toBeNull()
  })

  it("a +1 number no region claims is refused, even where every region is allowed", () => {
    for (const to of ["+15555550100", "+19995550100", "+10005550100"]) {
      for (const rules of [Destinations.DEFAULT_RULES, anywhere, { ...anywhere, premiumNumbers: true, internationalNetworks: true }]) {
        expect(refused(rules, US_LINE, to), to).toContain("North American Numbering Plan")
      }
    }
    // Claimed ones keep their region: the US, Canada, Jamaica.
    expect(refused(Destinations.DEFAULT_RULES, US_LINE, "+12025550123")).toBeNull()
    expect(refused(Destinations.DEFAULT_RULES, US_LINE, "+16135550100")).toContain("is in CA")
    expect(refused(Destinations.DEFAULT_RULES, US_LINE, "+18765550100")).toContain("is in JM")
  })
})
