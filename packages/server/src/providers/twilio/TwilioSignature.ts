/**
 * Twilio's `X-Twilio-Signature` on form-encoded webhooks (status callbacks and
 * inbound messages): base64 of HMAC-SHA1, keyed with the account's auth token,
 * over the full URL Twilio requested followed by every POST field's name and
 * value, in name order, with nothing between them.
 *
 * Verification also accepts the URL with its default port added or removed,
 * as Twilio's own helper libraries do, because a proxy in front of Parley may
 * or may not show ":443" in the URL Twilio was configured with.
 */
import { createHmac } from "node:crypto"
import { constantTimeEqual } from "../ProviderExchange.js"

const byName = (a: readonly [string, string], b: readonly [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)

export const twilioSignature = (
  authToken: string,
  url: string,
  params: ReadonlyArray<readonly [string, string]>
): string =>
  createHmac("sha1", authToken)
    .update(url + [...params].sort(byName).map(([name, value]) => name + value).join(""))
    .digest("base64")

const DEFAULT_PORTS: Readonly<Record<string, string>> = { "https:": "443", "http:": "80" }

/** The URL as given, and when it uses its scheme's default port, with that port left out and spelled out. */
const urlVariants = (url: string): ReadonlyArray<string> => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return [url]
  }
  const port = DEFAULT_PORTS[parsed.protocol]
  // URL drops a default port, so a non-empty port here is some other one: only the URL as given can match.
  if (port === undefined || parsed.port !== "") return [url]
  const rest = parsed.pathname + parsed.search + parsed.hash
  const auth = parsed.username === "" ? "" : `${parsed.username}${parsed.password === "" ? "" : `:${parsed.password}`}@`
  const base = `${parsed.protocol}//${auth}${parsed.hostname}`
  return [...new Set([url, base + rest, `${base}:${port}${rest}`])]
}

/** Constant time in the signature; false when the header is missing. */
export const verifyTwilioSignature = (
  authToken: string,
  url: string,
  params: ReadonlyArray<readonly [string, string]>,
  header: string | undefined
): boolean => {
  if (header === undefined || header === "") return false
  // Every variant is computed and compared, so the time taken does not depend on which one matched.
  return urlVariants(url)
    .map((variant) => constantTimeEqual(twilioSignature(authToken, variant, params), header))
    .reduce((matched, next) => matched || next, false)
}
