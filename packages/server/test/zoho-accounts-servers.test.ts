/**
 * Which servers may receive the Zoho client secret (the code exchange) or an access token: Zoho's
 * documented data centres over https on the default port, or the host of PARLEY_ZOHO_ACCOUNTS_URL
 * when it is set. Anything else a redirect names is refused.
 */
import { readFileSync } from "node:fs"
import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { DATA_CENTRES, trustedAccountsServer, trustedApiDomain } from "../src/crm/zoho/AccountsServers.js"

describe("Zoho accounts servers and API domains", () => {
  const none = Option.none<string>()

  it("trusts every documented data centre over https", () => {
    for (const host of DATA_CENTRES.map((dc) => dc.accounts)) {
      expect(trustedAccountsServer(`https://${host}`, none)).toBe(`https://${host}`)
    }
    expect(trustedApiDomain("https://www.zohoapis.eu", none)).toBe("https://www.zohoapis.eu")
    expect(trustedApiDomain("https://sandbox.zohoapis.com", none)).toBe("https://sandbox.zohoapis.com")
  })

  it("refuses look-alikes, plain http, other ports and credentials in the URL", () => {
    for (const url of [
      "https://accounts.zoho.com.evil.example",
      "https://evilaccounts.zoho.com",
      "http://accounts.zoho.com",
      "https://accounts.zoho.com:8443",
      "https://user:pass@accounts.zoho.com",
      "https://127.0.0.1",
      "not a url"
    ]) {
      expect(trustedAccountsServer(url, none), url).toBeUndefined()
    }
    expect(trustedApiDomain("https://www.zohoapis.com.attacker.example", none)).toBeUndefined()
    expect(trustedApiDomain("https://attacker.example", none)).toBeUndefined()
  })

  it("trusts the configured accounts URL's own host (a regional server, a local fake), and only it", () => {
    const configured = Option.some("http://127.0.0.1:4010")
    expect(trustedAccountsServer("http://127.0.0.1:4010", configured)).toBe("http://127.0.0.1:4010")
    expect(trustedApiDomain("http://127.0.0.1:4010", configured)).toBe("http://127.0.0.1:4010")
    expect(trustedAccountsServer("http://127.0.0.1:4011", configured)).toBeUndefined()
    expect(trustedAccountsServer("https://accounts.zoho.com", configured)).toBe("https://accounts.zoho.com")
  })

  it("every data centre of the one table (UK included) is trusted, with its sandbox and developer API domains", () => {
    expect(DATA_CENTRES.map((dc) => dc.accounts)).toContain("accounts.zoho.uk")
    for (const dc of DATA_CENTRES) {
      expect(trustedAccountsServer(`https://${dc.accounts}`, none), dc.region).toBe(`https://${dc.accounts}`)
      for (const edition of ["www", "sandbox", "developer"]) {
        const api = dc.api.replace(/^www\./, `${edition}.`)
        expect(trustedApiDomain(`https://${api}`, none), api).toBe(`https://${api}`)
      }
    }
    expect(trustedAccountsServer("https://accounts.zoho.uk", none)).toBe("https://accounts.zoho.uk")
    expect(trustedApiDomain("https://www.zohoapis.uk", none)).toBe("https://www.zohoapis.uk")
    expect(trustedApiDomain("https://www.zohoapis.uk.attacker.example", none)).toBeUndefined()
  })

  it("docs/crm.md's data-centre table is the code's table", () => {
    const readme = readFileSync(new URL("../../../docs/crm.md", import.meta.url), "utf8")
    const rows = [...readme.matchAll(/^\| ([A-Z][\w ]+) \| `(accounts\.[\w.]+)` \| `(www\.zohoapis\.[\w.]+)` \|$/gm)]
      .map((m) => ({ region: m[1], accounts: m[2], api: m[3] }))
    expect(rows).toEqual(DATA_CENTRES)
  })
})
