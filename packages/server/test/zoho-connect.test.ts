/**
 * Connecting Zoho CRM as an administrator meets it in production (issue 31, item 9 and the console): a grant
 * missing a scope or naming a foreign API domain is refused and revoked; a call Zoho refuses for lack of a
 * scope shows as OAUTH_SCOPE_MISMATCH; a changed client secret is named as such, not as "reconnect"; the
 * current user is re-read at least every 10 minutes; and the console's CRM page keeps Zoho's last error
 * after the connection lapsed. A real server on both stores against the Zoho fake.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, type ConsoleSession, signIn } from "./support/console.js"
import type { ZohoFake } from "./support/fakes/ZohoFake.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { adminOk, connectZoho, HEAVY, idempotencyKey, sendText, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const PASSWORD = "correct horse battery staple"

interface StatusView {
  readonly provider: string
  readonly state: string
  readonly lastError: { readonly code: string | null; readonly message: string } | null
}

describe("Connecting Zoho CRM: scopes, domains, client and identity", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession

  const admin = (args: ReadonlyArray<string>) => adminOk(server, args)
  const status = async () => JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as StatusView
  const connect = () => connectZoho(server, demo.orgId)
  const send = async (body: string) => {
    const response = await sendText(server, demo.keys.live, { body }, idempotencyKey("zoho-connect"))
    const text = await response.text()
    return { status: response.status, code: response.status >= 400 ? (JSON.parse(text) as { error: { code: string } }).error.code : undefined, text }
  }
  const crmPage = async () => (await consoleGet(server.baseUrl, session, "/admin/crm")).text()

  beforeAll(async () => {
    suite = await startZohoSuite({ connect: false })
    ;({ zoho, server, demo } = suite)
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "zoho@a.example", "--password-stdin"], { input: `${PASSWORD}\n` })
    expect(created.code, created.stderr).toBe(0)
    session = await signIn(server.baseUrl, "zoho@a.example", PASSWORD)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("a grant missing a scope Parley needs is refused with a page naming it, and revoked at Zoho", async () => {
    // ZohoCRM.modules.ALL is used by no call of the callback itself (only by sends): only the check of the
    // granted scopes refuses it there, where the grant would otherwise connect and every send then fail.
    for (const scope of ["ZohoCRM.org.READ", "ZohoCRM.modules.ALL"]) {
      zoho.consentDropsScopes.push(scope)
      const { html, status: code } = await connect()
      zoho.consentDropsScopes.length = 0
      expect(code, `${scope}: ${html}`).toBe(403)
      expect(html).toContain("OAUTH_SCOPE_MISMATCH")
      expect(html).toContain(`missing scope ${scope}`)
      expect(zoho.liveGrants, scope).toBe(0)
      expect((await status()).provider, scope).toBe("built-in")
    }
  }, HEAVY)

  it("a grant whose answer names a foreign API domain is revoked, not left live", async () => {
    zoho.apiDomainOverride = "https://www.zohoapis.com.attacker.example"
    const { html, status: code } = await connect()
    zoho.apiDomainOverride = undefined
    expect(code, html).toBe(400)
    expect(html).toContain("API domain")
    expect(zoho.liveGrants).toBe(0)
    expect((await status()).provider).toBe("built-in")
  }, HEAVY)

  it("connects with exactly the scopes it asks for, and sets up", async () => {
    const { html, status: code } = await connect()
    expect(code, html).toBe(200)
    expect(zoho.liveGrants).toBe(1)
    const auth = zoho.requests.filter((r) => r.path === "/oauth/v2/auth").at(-1)
    expect(auth?.query.get("scope")?.split(",")).toEqual([
      "ZohoCRM.modules.ALL",
      "ZohoCRM.settings.modules.ALL",
      "ZohoCRM.settings.fields.ALL",
      "ZohoCRM.settings.profiles.ALL",
      "ZohoCRM.users.READ",
      "ZohoCRM.org.READ"
    ])
    await admin(["crm", "setup", demo.orgId])
    expect((await send("connected")).status).toBe(202)
  }, HEAVY)

  it("the current user is re-read at least every 10 minutes, not only at refresh", async () => {
    zoho.addUser({ id: "5725767000000412002", zuid: "800000002", full_name: "Bob Other", email: "bob@acme.test", profile: { name: "Administrator", id: "5725767000000026011" } })
    zoho.switchTokensTo("800000002")
    const refreshes = zoho.refreshes
    // Within ten minutes of the last read, the (still valid) token is used as it is.
    expect((await send("within ten minutes")).status).toBe(202)
    // Eleven minutes later (the time of the last read is in the row every replica shares).
    await server.db.query("UPDATE zoho_connections SET identity_checked_at = identity_checked_at - 660000")
    const changed = await send("eleven minutes later")
    expect(changed.status, changed.text).toBe(403)
    expect(changed.code).toBe("IDENTITY_CHANGED")
    expect(zoho.refreshes).toBe(refreshes)
    expect((await status()).lastError?.code).toBe("IDENTITY_CHANGED")
    zoho.consentingUser = "800000001"
    expect((await connect()).status).toBe(200)
    expect((await send("back")).status).toBe(202)
  }, HEAVY)

  it("a call Zoho refuses for lack of a scope shows OAUTH_SCOPE_MISMATCH in crm status and the console", async () => {
    zoho.narrowGrants("ZohoCRM.modules.ALL")
    const refused = await send("no scope")
    expect(refused.status, refused.text).toBe(403)
    expect(refused.code).toBe("OAUTH_REQUIRED")
    const view = await status()
    expect(view.lastError?.code).toBe("OAUTH_SCOPE_MISMATCH")
    expect(view.lastError?.message).toContain("ZohoCRM.modules.ALL")
    const printed = (await admin(["crm", "status", demo.orgId])).stdout
    expect(printed).toContain("OAUTH_SCOPE_MISMATCH")
    expect(await crmPage()).toContain("<code>OAUTH_SCOPE_MISMATCH</code>")
    expect((await connect()).status).toBe(200)
    expect((await send("scopes back")).status).toBe(202)
  }, HEAVY)

  it("the CRM page keeps Zoho's last error after the connection lapsed", async () => {
    zoho.revokeAll()
    const lapsed = await send("revoked")
    expect(lapsed.code).toBe("OAUTH_REQUIRED")
    const page = await crmPage()
    expect(page).toContain("No CRM account is connected")
    expect(page).toContain("Last error from Zoho")
    expect(page).toContain("<code>OAUTH_REQUIRED</code>")
    expect(page).toContain("invalid_code")
    expect((await connect()).status).toBe(200)
  }, HEAVY)

  it("invalid_client on refresh says the client id or secret changed, keeps the connection, and recovers", async () => {
    zoho.rotateClientSecret()
    zoho.expireAccessTokens()
    const refused = await send("rotated secret")
    expect(refused.status, refused.text).toBe(502)
    const view = await status()
    expect(view.state).toBe("connected")
    expect(view.lastError?.code).toBe("INVALID_CLIENT")
    expect(view.lastError?.message).toContain("client id or secret changed")
    expect(view.lastError?.message).not.toContain("reconnect.")
    expect(await crmPage()).toContain("<code>INVALID_CLIENT</code>")
    // The administrator puts the secret back (here: Zoho's side is set back to what the server has).
    zoho.rotateClientSecret(zoho.clientSecret)
    expect((await send("secret fixed")).status).toBe(202)
    expect((await status()).lastError).toBeNull()
  }, HEAVY)
})
