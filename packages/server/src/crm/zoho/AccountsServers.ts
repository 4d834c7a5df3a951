/**
 * Which servers Parley trusts with a Zoho client secret or an access token.
 * Zoho's redirect names the accounts server the user signed in on
 * (`accounts-server`), and its token answer names the API domain; both are
 * attacker-controlled input on the callback URL, so a code is exchanged, and a
 * token sent, only to Zoho's documented data centres — or, when
 * `PARLEY_ZOHO_ACCOUNTS_URL` is set, to that URL's own host (a regional
 * server, or a local fake in tests).
 */
import { Option } from "effect"

export const DEFAULT_ACCOUNTS_URL = "https://accounts.zoho.com"

/** Zoho's data centres: accounts server host → API domain host (US, EU, IN, AU, JP, CA, SA, CN). */
export const DATA_CENTRES: ReadonlyArray<{ readonly accounts: string; readonly api: string }> = [
  { accounts: "accounts.zoho.com", api: "www.zohoapis.com" },
  { accounts: "accounts.zoho.eu", api: "www.zohoapis.eu" },
  { accounts: "accounts.zoho.in", api: "www.zohoapis.in" },
  { accounts: "accounts.zoho.com.au", api: "www.zohoapis.com.au" },
  { accounts: "accounts.zoho.jp", api: "www.zohoapis.jp" },
  { accounts: "accounts.zohocloud.ca", api: "www.zohoapis.ca" },
  { accounts: "accounts.zoho.sa", api: "www.zohoapis.sa" },
  { accounts: "accounts.zoho.com.cn", api: "www.zohoapis.com.cn" }
]

const API_HOST = /^(www|sandbox|developer)\.zohoapis\.(com|eu|in|com\.au|jp|ca|sa|com\.cn)$/

const parse = (url: string): URL | undefined => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

/** The configured accounts URL's origin, when one is set. */
const configuredOrigin = (configured: Option.Option<string>): string | undefined =>
  Option.match(configured, { onNone: () => undefined, onSome: (url) => parse(url)?.origin })

/** The accounts server's origin if it may receive the client secret, else undefined. */
export const trustedAccountsServer = (candidate: string, configured: Option.Option<string>): string | undefined => {
  const url = parse(candidate)
  if (url === undefined || url.username !== "" || url.password !== "") return undefined
  if (url.origin === configuredOrigin(configured)) return url.origin
  return url.protocol === "https:" && url.port === "" && DATA_CENTRES.some((dc) => dc.accounts === url.hostname)
    ? url.origin
    : undefined
}

/** The API domain's origin if tokens may be sent there, else undefined. */
export const trustedApiDomain = (candidate: string, configured: Option.Option<string>): string | undefined => {
  const url = parse(candidate)
  if (url === undefined || url.username !== "" || url.password !== "") return undefined
  // A local or regional set-up names its own host for both (the fake serves accounts and API on one port).
  if (url.origin === configuredOrigin(configured)) return url.origin
  return url.protocol === "https:" && url.port === "" && API_HOST.test(url.hostname) ? url.origin : undefined
}
