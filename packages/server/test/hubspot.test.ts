/**
 * HubSpot as an organisation's CRM, end to end through the seam: a real server on both stores against the
 * HubSpot fake. `parley crm connect ORG --provider hubspot` and the callback (a replayed or forged one
 * refused), the console's CRM page; `crm setup`; a linked live text becomes a communication and an AI call a
 * call, whose ids the API answers; 50 concurrent sends as the token lapses cost one refresh; HubSpot's 429 →
 * 503 with Retry-After; its 403 → CRM_PERMISSION_DENIED; Vendors → 400; a connection dropped after HubSpot
 * created the communication → 502, and the retry finds it; templates live in Parley (GET /templates) and merge
 * a contact's fields by HubSpot's labels, and its owner; a refresh refused after a reconnect leaves the new
 * connection alone; another user behind the token → IDENTITY_CHANGED until reconnected, a revoked grant →
 * OAUTH_REQUIRED, and `crm disconnect` revokes the grant at HubSpot.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, setPasswordFromLink, signIn } from "./support/console.js"
import { HubSpotFake } from "./support/fakes/HubSpotFake.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const HEAVY = 180_000
const PN1 = "PN00000000000000000000000000000001"
const PHONE = "+14155550123"
const PASSWORD = "a long passphrase for hubspot"
let counter = 0
const idem = () => `hubspot-${Date.now()}-${++counter}`

describe("HubSpot through the CRM seam", () => {
  let hubspot: HubSpotFake
  let server: TestServer
  let demo: DemoSummary
  let contactId = ""

  const admin = async (args: ReadonlyArray<string>) => {
    const result = await server.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
    return result
  }
  const connect = async () => {
    const started = JSON.parse((await admin(["crm", "connect", demo.orgId, "--provider", "hubspot", "--json"])).stdout) as { url: string; scopes: Array<string> }
    const install = await fetch(started.url, { redirect: "manual" })
    const location = install.headers.get("location")
    if (location === null) throw new Error(`no redirect from the fake: ${install.status} ${await install.text()}`)
    const callback = await fetch(location)
    return { started, status: callback.status, html: await callback.text() }
  }
  const send = (body: Record<string, unknown>, idempotencyKey = idem()) =>
    server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify({ to: PHONE, fromNumberSid: PN1, ...body })
    })

  beforeAll(async () => {
    hubspot = await HubSpotFake.start()
    server = await TestServer.start({
      env: {
        PARLEY_HUBSPOT_CLIENT_ID: hubspot.clientId,
        PARLEY_HUBSPOT_CLIENT_SECRET: hubspot.clientSecret,
        PARLEY_HUBSPOT_AUTH_URL: hubspot.url,
        PARLEY_HUBSPOT_API_URL: hubspot.url,
        // The refresh storm sends 50 at once; the per-key limit is not under test here.
        PARLEY_RATE_LIMIT_PER_MINUTE: "10000"
      }
    })
    demo = await server.demo()
    contactId = hubspot.addObject("contacts", { firstname: "Grace", lastname: "Hopper", phone: PHONE, hubspot_owner_id: "71001001" })
  }, HEAVY)

  afterAll(async () => {
    await server?.dispose()
    await hubspot?.stop()
  })

  it("connects through crm connect --provider hubspot and the callback; crm status names the user and portal", async () => {
    const { html, started, status } = await connect()
    expect(status, html).toBe(200)
    expect(html).toContain("ada@acme.test")
    expect(new URL(started.url).pathname).toBe("/oauth/authorize")
    expect(hubspot.requests.some((r) => r.path === "/oauth/2026-03/token")).toBe(true)
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as Record<string, unknown>
    expect(view).toMatchObject({ provider: "hubspot", state: "connected", hubspotPortal: { id: String(hubspot.hubId) } })
    const setup = JSON.parse((await admin(["crm", "setup", demo.orgId, "--json"])).stdout) as { created: Array<string> }
    expect(setup.created).toContain("communications.parley_key")
  }, HEAVY)

  it("refuses a replayed or forged callback without exchanging a code", async () => {
    const before = hubspot.codeExchanges
    const started = JSON.parse((await admin(["crm", "connect", demo.orgId, "--provider", "hubspot", "--json"])).stdout) as { url: string }
    const install = await fetch(started.url, { redirect: "manual" })
    const location = install.headers.get("location") ?? ""
    const forged = new URL(location)
    forged.searchParams.set("state", "forged")
    const refused = await fetch(forged)
    expect(refused.status).toBe(400)
    expect(await refused.text()).not.toMatch(/\n\s+at |Error:/)
    expect(hubspot.codeExchanges).toBe(before)
    // The real one completes once; replayed, its state is used.
    expect((await fetch(location)).status).toBe(200)
    expect(hubspot.codeExchanges).toBe(before + 1)
    expect((await fetch(location)).status).toBe(400)
    expect(hubspot.codeExchanges).toBe(before + 1)
  }, HEAVY)

  it("the console's CRM page shows the HubSpot connection: who, which portal, since when", async () => {
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "crm@hubspot.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    const session = await signIn(server.baseUrl, "crm@hubspot.example", PASSWORD)
    const page = await (await consoleGet(server.baseUrl, session, "/admin/crm")).text()
    expect(page).toContain(`HubSpot — ${hubspot.hubDomain} (<code>${hubspot.hubId}</code>)`)
    expect(page).toContain("ada@acme.test")
    expect(page).toContain("Connect HubSpot")
    expect(page).not.toContain("Built-in CRM")
  }, HEAVY)

  it("a linked live text becomes a communication and an AI call a call; the API answers their ids", async () => {
    const response = await send({ body: "Hello Grace", record: { module: "Contacts", id: contactId } })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    const ack = JSON.parse(text) as { id: string }
    const communication = hubspot.object("communications", ack.id)
    expect(communication?.properties).toMatchObject({
      hs_communication_channel_type: "SMS",
      hs_communication_logged_from: "CRM",
      hs_communication_body: "Hello Grace",
      hubspot_owner_id: "71001001"
    })
    expect(communication?.associations).toEqual([{ to: "contacts", id: contactId, typeId: 81 }])
    const call = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to: PHONE, fromNumberSid: PN1, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Confirm at 10" })
    })
    const callText = await call.text()
    expect(call.status, callText).toBe(202)
    const callId = (JSON.parse(callText) as { id: string }).id
    expect(hubspot.object("calls", callId)?.properties).toMatchObject({ hs_call_direction: "OUTBOUND", hs_call_to_number: PHONE })
  }, HEAVY)

  it("50 concurrent sends as the token lapses refresh it once", async () => {
    hubspot.expireAccessTokens()
    const before = hubspot.refreshes
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => send({ body: `storm ${i}` })))
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 202))
    expect(hubspot.refreshes - before).toBe(1)
  }, HEAVY)

  it("HubSpot's 429 → 503 CRM_RATE_LIMITED with Retry-After; its 403 on the linked record → CRM_PERMISSION_DENIED; Vendors → 400", async () => {
    hubspot.failNext(10, "TEN_SECONDLY_ROLLING")
    const busy = await send({ body: "429 always" })
    expect(busy.status).toBe(503)
    expect(((await busy.json()) as { error: { code: string } }).error.code).toBe("CRM_RATE_LIMITED")
    expect(busy.headers.get("retry-after")).toBe("10")
    hubspot.clearFaults()
    const vendors = await send({ body: "hi", record: { module: "Vendors", id: "123" } })
    const vendorsText = await vendors.text()
    expect(vendors.status, vendorsText).toBe(400)
    expect(vendorsText).toContain("Vendors")
    expect(vendorsText).toContain("HubSpot")
    const dealId = hubspot.addObject("deals", { dealname: "Compilers" })
    hubspot.narrowGrants("crm.objects.deals.read")
    const denied = await send({ body: "no scope", record: { module: "Deals", id: dealId } })
    expect(denied.status).toBe(403)
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe("CRM_PERMISSION_DENIED")
    const { status } = await connect()
    expect(status).toBe(200)
  }, HEAVY)

  it("a connection dropped after HubSpot created the communication → 502; the retry finds that same one", async () => {
    const key = idem()
    const before = hubspot.all("communications").length
    hubspot.dropNextAfterCreate()
    const dropped = await send({ body: "dropped answer" }, key)
    expect(dropped.status).toBe(502)
    expect(hubspot.all("communications").length).toBe(before + 1)
    const retry = await send({ body: "dropped answer" }, key)
    expect(retry.status).toBe(202)
    expect(hubspot.all("communications").length).toBe(before + 1)
    const id = ((await retry.json()) as { id: string }).id
    expect(hubspot.all("communications").find((c) => c.properties["hs_communication_body"] === "dropped answer")?.id).toBe(id)
  }, HEAVY)

  it("templates live in Parley: GET /templates lists the one added; a templated text linked to a contact is merged by HubSpot's labels and owner", async () => {
    const added = JSON.parse((await admin([
      "templates", "add", "--org", demo.orgId, "--name", "HubSpot greeting", "--record-type", "Contacts",
      "--body", "Hi ${Contacts.First name}, ${Contacts.Owner} here", "--json"
    ])).stdout) as { id: string }
    const listed = await server.fetch("/api/v1/templates", { key: demo.keys.live })
    expect(listed.status).toBe(200)
    const items = ((await listed.json()) as { items: Array<{ id: string; name: string; body: string }> }).items
    expect(items.find((t) => t.id === added.id)).toMatchObject({ name: "HubSpot greeting", body: "Hi ${Contacts.First name}, ${Contacts.Owner} here" })
    const response = await send({ templateUuid: added.id, record: { module: "Contacts", id: contactId } })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    const { id } = JSON.parse(text) as { id: string }
    // The merge read the contact through the properties API (labels → names) and the owner through the owners API.
    expect(hubspot.object("communications", id)?.properties["hs_communication_body"]).toBe("Hi Grace, Ada Admin here")
    const record = (await (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).json()) as { body: string }
    expect(record.body).toBe("Hi Grace, Ada Admin here")
    expect(hubspot.requests.some((r) => r.path === "/crm/v3/properties/contacts")).toBe(true)
  }, HEAVY)

  it("a refresh refused after the administrator reconnected does not undo the reconnect", async () => {
    // As for Zoho: a refresh with the old, revoked token comes back after the reinstall and must not mark the
    // new connection OAUTH_REQUIRED, nor store a token over it.
    hubspot.revokeAll()
    const held = hubspot.holdNextRefresh()
    const inFlight = send({ body: "refreshing while reconnecting" })
    await held.arrived
    expect((await connect()).status).toBe(200)
    held.release()
    const answered = await inFlight
    expect(answered.status, await answered.text()).toBe(202)
    expect((await send({ body: "after the reconnect" })).status).toBe(202)
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { state: string; lastError: unknown }
    expect(view).toMatchObject({ state: "connected", lastError: null })
  }, HEAVY)

  it("another user behind the token → IDENTITY_CHANGED until reconnected; a revoked grant → OAUTH_REQUIRED; disconnect revokes at HubSpot", async () => {
    const codeOf = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code
    const original = hubspot.consentingUser
    hubspot.addUser({ userId: 52_001_002, email: "bob@acme.test", firstName: "Bob", lastName: "Other", ownerId: "71001002" })
    hubspot.switchTokensTo(52_001_002)
    hubspot.expireAccessTokens()
    const changed = await send({ body: "who am I" })
    expect(changed.status).toBe(403)
    expect(await codeOf(changed)).toBe("IDENTITY_CHANGED")
    // The connection stays lapsed: the next request is refused without asking HubSpot again.
    expect(await codeOf(await send({ body: "who am I" }))).toBe("IDENTITY_CHANGED")
    hubspot.consentingUser = original
    expect((await connect()).status).toBe(200)
    expect((await send({ body: "back" })).status).toBe(202)

    hubspot.revokeAll()
    const refused = await send({ body: "revoked" })
    expect(refused.status).toBe(403)
    expect(await codeOf(refused)).toBe("OAUTH_REQUIRED")
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { lastError: { message: string } | null }
    expect(view.lastError?.message).toContain("refresh token")

    expect((await connect()).status).toBe(200)
    expect((await send({ body: "reconnected" })).status).toBe(202)
    const live = hubspot.liveGrants
    await admin(["crm", "disconnect", demo.orgId])
    expect(hubspot.requests.some((r) => r.path === "/oauth/2026-03/token/revoke")).toBe(true)
    expect(hubspot.liveGrants).toBe(live - 1)
    expect(await codeOf(await send({ body: "disconnected" }))).toBe("OAUTH_REQUIRED")
  }, HEAVY)
})
