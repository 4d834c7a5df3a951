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

/**
 * Zoho's data centres, the one table of them: the accounts server a user signs in on → its CRM API domain.
 * The README's table and the tests are this list (zoho-accounts-servers.test.ts reads both).
 */
export const DATA_CENTRES: ReadonlyArray<{ readonly region: string; readonly accounts: string; readonly api: string }> = [
  { region: "United States", accounts: "accounts.zoho.com", api: "www.zohoapis.com" },
  { region: "European Union", accounts: "accounts.zoho.eu", api: "www.zohoapis.eu" },
  { region: "United Kingdom", accounts: "accounts.zoho.uk", api: "www.zohoapis.uk" },
  { region: "India", accounts: "accounts.zoho.in", api: "www.zohoapis.in" },
  { region: "Australia", accounts: "accounts.zoho.com.au", api: "www.zohoapis.com.au" },
  { region: "Japan", accounts: "accounts.zoho.jp", api: "www.zohoapis.jp" },
  { region: "Canada", accounts: "accounts.zohocloud.ca", api: "www.zohoapis.ca" },
  { region: "Saudi Arabia", accounts: "accounts.zoho.sa", api: "www.zohoapis.sa" },
  { region: "China", accounts: "accounts.zoho.com.cn", api: "www.zohoapis.com.cn" }
]

/** The API hosts tokens may go to: each data centre's, and its sandbox and developer editions'. */
const API_HOSTS: ReadonlySet<string> = new Set(
  DATA_CENTRES.flatMap((dc) => ["www", "sandbox", "developer"].map((edition) => dc.api.replace(/^www\./, `${edition}.`)))
)

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
  return url.protocol === "https:" && url.port === "" && API_HOSTS.has(url.hostname) ? url.origin : undefined
}
