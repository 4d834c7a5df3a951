/**
 * Twilio's `X-Twilio-Signature` on form-encoded webhooks (status callbacks and
 * inbound messages): base64 of HMAC-SHA1, keyed with the account's auth token,
 * over the full URL Twilio requested followed by every POST field's name and
 * value, in name order, with nothing between them. A name sent more than once
 * contributes each distinct value once, in value order.
 *
 * Verification accepts what the official `twilio` package's `validateRequest`
 * accepts, because a proxy in front of Parley, or the way a URL was pasted into
 * Twilio's console, changes the URL Parley sees from the one Twilio signed:
 * - the URL as seen, with its port removed (any port) and with its scheme's
 *   default port added when it has none;
 * - the same two of the URL as WHATWG `URL` normalises it (percent-encoding
 *   what Twilio may have signed encoded), and of that URL with its query
 *   re-encoded as Node's legacy `querystring` does (`+` and `%20` for a space).
 * Every candidate is a URL the request could have been signed over; the HMAC
 * still binds the token, the fields and the path.
 */
import { createHmac } from "node:crypto"
import { parse as parseQuery, stringify as stringifyQuery } from "node:querystring"
import { constantTimeEqual } from "../ProviderExchange.js"

/** The header Twilio signs its requests in. */
export const TWILIO_SIGNATURE_HEADER = "x-twilio-signature"

type Fields = ReadonlyArray<readonly [string, string]>

const codeUnitOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The fields as signed: by name, then by value, each (name, value) pair once. */
const signedFields = (params: Fields): string => {
  const pairs = new Map<string, readonly [string, string]>()
  for (const [name, value] of params) pairs.set(`${name}\u0000${value}`, [name, value])
  return [...pairs.values()]
    .sort((a, b) => codeUnitOrder(a[0], b[0]) || codeUnitOrder(a[1], b[1]))
    .map(([name, value]) => name + value)
    .join("")
}

export const twilioSignature = (authToken: string, url: string, params: Fields): string =>
  createHmac("sha1", authToken).update(Buffer.from(url + signedFields(params), "utf-8")).digest("base64")

/**
 * The scheme, user info, host and port of a URL as written, and the rest after them, without normalising
 * anything (the path and query keep the characters Twilio signed); undefined when it has no `scheme://`.
 */
const authorityOf = (url: string) => {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(url)
  if (match === null) return undefined
  const [prefix, scheme = "", authority = ""] = match
  const at = authority.lastIndexOf("@")
  const hostPort = authority.slice(at + 1)
  // In an IPv6 literal (`[::1]:8443`) only a colon after the closing bracket starts the port.
  const colon = hostPort.indexOf(":", hostPort.lastIndexOf("]") + 1)
  return {
    scheme,
    userInfo: authority.slice(0, at + 1),
    host: colon === -1 ? hostPort : hostPort.slice(0, colon),
    hasPort: colon !== -1,
    rest: url.slice(prefix.length)
  }
}

const withoutPort = (url: string): string => {
  const parts = authorityOf(url)
  return parts === undefined ? url : parts.scheme + parts.userInfo + parts.host + parts.rest
}

const withDefaultPort = (url: string): string => {
  const parts = authorityOf(url)
  if (parts === undefined || parts.hasPort) return url
  const port = parts.scheme.toLowerCase() === "https://" ? ":443" : ":80"
  return parts.scheme + parts.userInfo + parts.host + port + parts.rest
}

/** The query re-encoded by Node's legacy `querystring` (which back ends signing an escaped form used). */
const withLegacyQuery = (url: string): string => {
  const start = url.indexOf("?")
  if (start === -1 || start === url.length - 1) return url
  return `${url.slice(0, start)}?${stringifyQuery(parseQuery(url.slice(start + 1)))}`
}

/** Every URL the request may have been signed over (see the header). */
const candidateUrls = (url: string): ReadonlyArray<string> => {
  const asSeen = [withoutPort(url), withDefaultPort(url)]
  if (!URL.canParse(url)) return asSeen
  const normalised = new URL(url).toString()
  const bare = withoutPort(normalised)
  const ported = withDefaultPort(normalised)
  return [...new Set([...asSeen, bare, ported, withLegacyQuery(bare), withLegacyQuery(ported)])]
}

/** Constant time in the signature; false when the header is missing. */
export const verifyTwilioSignature = (
  authToken: string,
  url: string,
  params: Fields,
  header: string | undefined
): boolean => {
  if (header === undefined || header === "") return false
  // Every candidate is computed and compared, so the time taken does not depend on which one matched.
  return candidateUrls(url)
    .map((candidate) => constantTimeEqual(twilioSignature(authToken, candidate, params), header))
    .reduce((matched, next) => matched || next, false)
}
