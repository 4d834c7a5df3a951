/**
 * Destination rules against SMS pumping and toll fraud: an organisation sends
 * texts and places calls only to the regions it allows, and never to
 * premium-rate numbers or international networks (satellite, +882/+883 and
 * other non-geographic codes) unless it opted in. A pumping attack needs an
 * open destination that pays back per message; these rules close the usual
 * ones before anything is queued.
 *
 * The anchor is Twilio's geo permissions: a new account sends only to its home
 * country, the one of the number it signed up with. Here "home" is the region
 * of the sending line, so an organisation with no explicit list texts from a
 * US line to the US and from a UK line to the UK, and nothing further.
 *
 * Regions and number types come from libphonenumber's full metadata (Google's
 * numbering plans): a number it cannot place exactly counts as the first
 * region its calling code and digits could belong to — except in the North
 * American Numbering Plan (+1), which spans 25 countries and territories with
 * their own tariffs: a +1 number no region claims (an unassigned area code
 * such as 555 or 999) is refused, not taken for the US.
 *
 * Personal numbers of the UK plan (070, also in Guernsey, Jersey and the Isle
 * of Man) are charged like premium-rate numbers (the caller pays a rate the
 * number's owner shares in) and are a known toll-fraud route: they count as
 * premium-rate. Personal numbers elsewhere (the NANP's 5XX codes) are
 * ordinary rates.
 */
import { Either } from "effect"
import { type CountryCode, getCountries, parsePhoneNumberFromString } from "libphonenumber-js/max"

export interface DestinationRules {
  /** ISO 3166 regions allowed (`US`, `GB`, …; `*` for every region); null: the sending line's region only ("home"). */
  readonly countries: ReadonlyArray<string> | null
  /** Premium-rate, shared-cost and UK personal numbers (`+1 900`, `+44 9…`, `+44 70…`): refused unless allowed. */
  readonly premiumNumbers: boolean
  /** Non-geographic codes (international networks such as +882, +883, +979, +870): refused unless allowed. */
  readonly internationalNetworks: boolean
}

export const DEFAULT_RULES: DestinationRules = { countries: null, premiumNumbers: false, internationalNetworks: false }

/** An organisation's rules as its settings keep them. */
export const rulesOf = (organisation: {
  readonly destinationCountries: ReadonlyArray<string> | null
  readonly premiumNumbersAllowed: boolean
  readonly internationalNetworksAllowed: boolean
}): DestinationRules => ({
  countries: organisation.destinationCountries,
  premiumNumbers: organisation.premiumNumbersAllowed,
  internationalNetworks: organisation.internationalNetworksAllowed
})

interface Placed {
  /** The region, or null for a non-geographic calling code (an international network). */
  readonly region: string | null
  readonly callingCode: string
  readonly premium: boolean
  /** A +1 number no region of the NANP claims. */
  readonly unclaimedNanp: boolean
}

/** Regions whose personal numbers (UK 070) are billed like premium-rate ones. */
const PREMIUM_PERSONAL_REGIONS: ReadonlySet<string> = new Set(["GB", "GG", "IM", "JE"])

/**
 * Numbers placed so far. Placing one is a full libphonenumber parse (tens of microseconds, the dearest step of
 * an accepted message's own code: docs/benchmarks.md), and the same recipients come back: each text is placed
 * when it is accepted and again when it is dispatched. The answer depends on the number alone.
 */
const placedNumbers = new Map<string, Placed | null>()
/** Numbers kept at most; past it the memory starts over. */
const MAX_PLACED = 10_000

const place = (phone: string): Placed | null => {
  if (placedNumbers.has(phone)) return placedNumbers.get(phone) ?? null
  if (placedNumbers.size >= MAX_PLACED) placedNumbers.clear()
  const placed = placeAfresh(phone)
  placedNumbers.set(phone, placed)
  return placed
}

const placeAfresh = (phone: string): Placed | null => {
  const parsed = parsePhoneNumberFromString(phone)
  if (parsed === undefined) return null
  const region = parsed.country ?? parsed.getPossibleCountries()[0] ?? null
  const type = parsed.getType()
  return {
    region: region ?? null,
    callingCode: parsed.countryCallingCode,
    premium: type === "PREMIUM_RATE" || type === "SHARED_COST" ||
      (type === "PERSONAL_NUMBER" && region !== null && PREMIUM_PERSONAL_REGIONS.has(region)),
    unclaimedNanp: parsed.countryCallingCode === "1" && parsed.country === undefined
  }
}

/** The region a number belongs to (`US`, `GB`), null when it has none (an international network) or is not a number. */
export const regionOf = (phone: string): string | null => place(phone)?.region ?? null

/** Why the rules refuse a recipient, or nothing when they allow it. */
export const refusal = (rules: DestinationRules, line: string, to: string): Either.Either<void, string> => {
  const placed = place(to)
  if (placed === null) return Either.left(`${to} is not a phone number Parley can place in a region`)
  if (placed.unclaimedNanp) {
    return Either.left(`${to} is in no region of the North American Numbering Plan (+1): its area code is not assigned`)
  }
  if (placed.region === null) {
    return rules.internationalNetworks ? Either.right(undefined) : Either.left(
      `${to} is on an international network (+${placed.callingCode}), which the organisation does not send to`
    )
  }
  if (placed.premium && !rules.premiumNumbers) {
    return Either.left(`${to} is a premium-rate number, which the organisation does not send to`)
  }
  const allowed = rules.countries ?? [regionOf(line)].filter((r): r is string => r !== null)
  if (!allowed.includes(ANY_REGION) && !allowed.includes(placed.region)) {
    const which = rules.countries === null
      ? `only to the region of the sending line (${allowed.join(", ") || "none"})`
      : `only to ${allowed.join(", ")}`
    return Either.left(`${to} is in ${placed.region}; the organisation sends ${which}`)
  }
  return Either.right(undefined)
}

/** In a list of regions: every region (premium-rate numbers and international networks keep their own rules). */
export const ANY_REGION = "*"

const KNOWN_REGIONS: ReadonlySet<string> = new Set<CountryCode>(getCountries())

/**
 * Parses an operator's list (`US,CA,GB`), `home` for the sending line's region, or `any` (`*`) for every
 * region: regions are ISO 3166 alpha-2 codes as the numbering plans know them.
 */
export const parseCountries = (text: string): Either.Either<ReadonlyArray<string> | null, string> => {
  const trimmed = text.trim()
  if (trimmed.toLowerCase() === "home") return Either.right(null)
  if (trimmed === ANY_REGION || trimmed.toLowerCase() === "any") return Either.right([ANY_REGION])
  const codes = [...new Set(trimmed.split(",").map((c) => c.trim().toUpperCase()).filter((c) => c !== ""))]
  if (codes.length === 0) return Either.left("give region codes such as US,CA,GB, or home")
  const unknown = codes.filter((c) => !KNOWN_REGIONS.has(c))
  if (unknown.length > 0) return Either.left(`unknown region ${unknown.join(", ")}: use ISO 3166 codes such as US, GB, DE`)
  return Either.right(codes.sort())
}

/** How a list reads in the CLI and in errors. */
export const showCountries = (countries: ReadonlyArray<string> | null): string =>
  countries === null
    ? "home (the sending line's region)"
    : countries.includes(ANY_REGION)
    ? "any region"
    : countries.join(",")
