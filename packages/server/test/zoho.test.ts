/**
 * Zoho CRM as an organisation's CRM (issue 25), end to end without the
 * internet: a real server connected through the OAuth flow to a local fake of
 * Zoho's accounts server and CRM v8 (support/fakes/ZohoFake.ts). Connect →
 * `crm setup` → a templated text linked to a Lead → its Parley_Messages record
 * in Zoho, whose id is the API's id; and the ways it goes wrong: forged and
 * replayed states, a foreign accounts server, Zoho down or at its limit, a
 * revoked token, another user behind the token, a refresh storm.
 */
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, signIn } from "./support/console.js"
import { ZohoFake } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { adminOk, connectZoho, HEAVY, idempotencyKey, PN1, sendText, zohoEnv } from "./support/zohoSuite.js"

const idem = () => idempotencyKey("zoho")

describe("Zoho CRM", () => {
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary
  let leadId: string
  let templateUuid: string
  /** A server that is not Zoho's: anything it receives is a leak. */
  let foreign: Server
  let foreignPort = 0
  const foreignRequests: Array<string> = []

  const admin = (args: ReadonlyArray<string>) => adminOk(server, args)
  /** Runs the consent flow: the consent URL, Zoho's redirect, and the callback's page. */
  const connect = (extra: ReadonlyArray<string> = []) => connectZoho(server, demo.orgId, extra)
  const send = (key: string, body: Record<string, unknown>, idempotency = idem()) => sendText(server, key, body, idempotency)
  const messages = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])]

  beforeAll(async () => {
    zoho = await ZohoFake.start()
    foreign = createServer((request, response) => {
      foreignRequests.push(`${request.method} ${request.url}`)
      response.end("{}")
    })
    await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.1", resolve))
    const address = foreign.address()
    foreignPort = typeof address === "object" && address !== null ? address.port : 0
    server = await TestServer.start({
      env: zohoEnv(zoho, {
        PARLEY_SIM_STEP_MS: "50",
        // The refresh storm sends 50 at once; the per-key limit is not under test here.
        PARLEY_RATE_LIMIT_PER_MINUTE: "10000",
        // The inbound case posts to the simulated carrier's route, unsigned; signing is tested elsewhere.
        PARLEY_INBOUND_UNSIGNED: "accept"
      })
    })
    demo = await server.demo()
    leadId = zoho.addRecord("Leads", { First_Name: "Ada", Last_Name: "Lovelace", Full_Name: "Ada Lovelace", Phone: "+14155550123" })
  }, HEAVY)

  afterAll(async () => {
    await server?.dispose()
    await zoho?.stop()
    await new Promise<void>((resolve) => foreign?.close(() => resolve()))
  })

  it("crm setup says what to do for an organisation not connected to Zoho", async () => {
    const result = await server.admin(["crm", "setup", demo.orgId])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("not connected to Zoho CRM")
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { provider: string }
    expect(view.provider).toBe("built-in")
  }, HEAVY)

  it("connects through the consent flow and names the user and organisation; tokens are stored sealed", async () => {
    const { html, location, status } = await connect()
    const redirect = new URL(location)
    expect(redirect.pathname).toBe("/oauth/zoho/callback")
    expect(status, html).toBe(200)
    expect(html).toContain("Ada Admin")
    expect(html).toContain("Acme Test Org")
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as Record<string, unknown>
    expect(view).toMatchObject({ provider: "zoho", state: "connected", user: { name: "Ada Admin", email: "ada@acme.test", zuid: "800000001" }, zohoOrg: { id: zoho.orgId } })
    const rows = await server.db.query<{ refresh_token: string; access_token: string }>("SELECT refresh_token, access_token FROM zoho_connections")
    expect(rows[0]?.refresh_token).toMatch(/^enc:v1:/)
    expect(rows[0]?.access_token).toMatch(/^enc:v1:/)
    // The consent URL asked for what the issue lists.
    const auth = zoho.requests.find((r) => r.path === "/oauth/v2/auth")
    expect(auth?.query.get("access_type")).toBe("offline")
    expect(auth?.query.get("prompt")).toBe("consent")
    expect(auth?.query.get("redirect_uri")).toBe(`${server.baseUrl}/oauth/zoho/callback`)
  }, HEAVY)

  it("the console's CRM page shows the Zoho connection (who, which organisation, since when), and the callback page leads back to it", async () => {
    const { html } = await connect()
    expect(html).toContain(`href="/admin/crm"`)
    const password = "correct horse battery staple"
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "crm@a.example", "--password-stdin"], {
      input: `${password}\n`
    })
    expect(created.code, created.stderr).toBe(0)
    const session = await signIn(server.baseUrl, "crm@a.example", password)
    const page = await (await consoleGet(server.baseUrl, session, "/admin/crm")).text()
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { since: string }
    expect(page).toContain("Zoho CRM — Acme Test Org")
    expect(page).toContain("Ada Admin (ada@acme.test, ZUID <code>800000001</code>)")
    // Shown readable in the organisation's time zone, the instant itself in the <time> element's datetime.
    expect(page).toContain(`<dt>Since</dt><dd><time datetime="${new Date(view.since).toISOString()}"`)
    expect(page).not.toContain("Built-in CRM</dd>")
  }, HEAVY)

  it("refuses a replayed, forged or foreign-server callback without exchanging a code", async () => {
    const tokenCalls = () => zoho.requests.filter((r) => r.path === "/oauth/v2/token").length
    const before = tokenCalls()
    const started = JSON.parse((await admin(["crm", "connect", demo.orgId, "--provider", "zoho", "--json"])).stdout) as { url: string }
    const state = new URL(started.url).searchParams.get("state") ?? ""
    // Forged state.
    const forged = await fetch(`${server.baseUrl}/oauth/zoho/callback?code=1000.x&state=forged&accounts-server=${encodeURIComponent(zoho.url)}`)
    expect(forged.status).toBe(400)
    // An accounts server that is not Zoho's: refused, and it is never sent the secret.
    const leak = await fetch(`${server.baseUrl}/oauth/zoho/callback?code=1000.x&state=${state}&accounts-server=${encodeURIComponent(`http://127.0.0.1:${foreignPort}`)}`)
    expect(leak.status).toBe(400)
    expect(await leak.text()).not.toMatch(/\n\s+at |Error:/)
    expect(foreignRequests).toEqual([])
    // The state was consumed by that attempt: replaying it is refused too.
    const replay = await fetch(`${server.baseUrl}/oauth/zoho/callback?code=1000.x&state=${state}&accounts-server=${encodeURIComponent(zoho.url)}`)
    expect(replay.status).toBe(400)
    expect(tokenCalls()).toBe(before)
  }, HEAVY)

  it("crm setup creates the modules once; a templated text linked to a Lead becomes a Parley_Messages record whose id the API answers", async () => {
    const first = JSON.parse((await admin(["crm", "setup", demo.orgId, "--json"])).stdout) as { created: Array<string>; byHand: Array<string> }
    expect(first.created).toContain("module Parley_Messages")
    expect(first.created).toContain("field Parley_Messages.Parley_Key")
    const again = JSON.parse((await admin(["crm", "setup", demo.orgId, "--json"])).stdout) as { created: Array<string> }
    expect(again.created).toEqual([])

    zoho.addRecord("Parley_Templates", { Name: "welcome", Body: "Hi ${Leads.First Name}, welcome!", Record_Type: "Leads" })
    const templateRecord = zoho.addRecord("Parley_Templates", { Name: "Appointment", Body: "See you soon", Record_Type: "-None-" })
    // A fresh read (the 60-second cache is per process; nothing was read before this).
    const list = await server.fetch("/api/v1/templates", { key: demo.keys.live }).then((r) => r.json() as Promise<{ items: Array<{ id: string; crmId: string; name: string; body: string }> }>)
    expect(list.items.map((t) => t.name)).toEqual(["Appointment", "welcome"])
    expect(list.items[0]?.crmId).toBe(templateRecord)
    const welcome = list.items.find((t) => t.name === "welcome")
    if (welcome === undefined) throw new Error("no template")
    templateUuid = welcome.id

    const calls = zoho.crmCalls
    const response = await send(demo.keys.live, { templateUuid, record: { module: "Leads", id: leadId } })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    const ack = JSON.parse(text) as { id: string }
    expect(ack.id).toMatch(/^\d{19}$/)
    const record = zoho.records.get("Parley_Messages")?.get(ack.id)
    expect(record).toMatchObject({ Direction: "Outbound", Channel: "SMS", Status: "Queued", To_Number: "+14155550123", Body: "Hi Ada, welcome!", Lead: { id: leadId } })
    expect(String(record?.["Parley_Key"])).toMatch(/^[0-9a-f]{48}$/)
    // One record read (only the fields the template needs) and one upsert.
    const used = zoho.requests.slice(-(zoho.crmCalls - calls)).filter((r) => r.path.startsWith("/crm/"))
    expect(used.map((r) => `${r.method} ${r.path}`)).toContain(`GET /crm/v8/Leads/${leadId}`)
    expect(used.find((r) => r.path === `/crm/v8/Leads/${leadId}`)?.query.get("fields")).toContain("First_Name")
    expect(used.filter((r) => r.path.endsWith("/upsert"))).toHaveLength(1)
    // Reads come from Parley's store, by the Zoho id, and spend no Zoho call.
    const before = zoho.crmCalls
    const read = await server.fetch(`/api/v1/messages/${ack.id}`, { key: demo.keys.live })
    expect(read.status).toBe(200)
    expect(((await read.json()) as { id: string }).id).toBe(ack.id)
    expect(zoho.crmCalls).toBe(before)
  }, HEAVY)

  it("statuses, an AI call's transcript and recording are written back, batched", async () => {
    const puts = () => zoho.requests.filter((r) => r.method === "PUT" && r.path === "/crm/v8/Parley_Messages").length
    const before = puts()
    const texts = await Promise.all(Array.from({ length: 5 }, (_, i) => send(demo.keys.live, { body: `write back ${i}` })))
    const ids = await Promise.all(texts.map(async (r) => ((await r.json()) as { id: string }).id))
    const call = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: PN1, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Confirm at 10" })
    })
    expect(call.status).toBe(202)
    const callId = ((await call.json()) as { id: string }).id
    const zohoRecord = (id: string) => zoho.records.get("Parley_Messages")?.get(id)
    await until(async () => ids.every((id) => zohoRecord(id)?.["Status"] === "Delivered") ? true : undefined, { timeoutMs: 30_000, what: "texts Delivered in Zoho" })
    const completed = await until(async () => {
      const r = zohoRecord(callId)
      return r?.["Status"] === "Completed" && String(r["Body"] ?? "") !== "" ? r : undefined
    }, { timeoutMs: 30_000, what: "the call Completed in Zoho" })
    const parley = (await server.fetch(`/api/v1/ai-calls/${callId}`, { key: demo.keys.live }).then((r) => r.json())) as { body: string; audioFileId: string | null }
    expect(completed["Body"]).toBe(parley.body)
    expect(completed["Recording_Id"]).toBe(parley.audioFileId)
    // Six actions through three or four statuses each, in far fewer PUTs than changes.
    expect(puts() - before).toBeLessThan(6 * 3)
    // And the outbox empties once Zoho has seen everything (earlier tests' actions included).
    await until(async () => {
      const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM zoho_writebacks")
      return Number(rows[0]?.n) === 0 ? true : undefined
    }, { timeoutMs: 30_000, what: "the write-back outbox to empty" })
  }, HEAVY)

  it("kill -9 between Zoho's upsert and Parley's commit: the retry finds the same record", async () => {
    const key = idem()
    const before = messages().length
    const held = zoho.holdNextWrite()
    const pending = send(demo.keys.live, { body: "killed mid-creation" }, key).catch(() => undefined)
    await held.written
    await server.restart("SIGKILL")
    held.release()
    await pending
    expect(messages().length).toBe(before + 1)
    // On Postgres the first request's reservation lapses first (409 ACTION_PROCESSING until then).
    const retry = await until(async () => {
      const r = await send(demo.keys.live, { body: "killed mid-creation" }, key)
      return r.status === 409 ? undefined : r
    }, { timeoutMs: 120_000, intervalMs: 1000, what: "the reservation to lapse" })
    expect(retry.status).toBe(202)
    const id = ((await retry.json()) as { id: string }).id
    expect(messages().length).toBe(before + 1)
    expect(messages().find((m) => m["Body"] === "killed mid-creation")?.id).toBe(id)
    const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM actions WHERE body = ?", ["killed mid-creation"])
    expect(Number(rows[0]?.n)).toBe(1)
  }, HEAVY)

  it("write-backs owed while Zoho is down survive kill -9 and reach Zoho once it is back", async () => {
    const created = await send(demo.keys.live, { body: "owed while down" })
    expect(created.status).toBe(202)
    const id = ((await created.json()) as { id: string }).id
    await zoho.down()
    // Delivered in Parley while Zoho cannot hear of it.
    await until(async () => {
      const r = (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }).then((x) => x.json())) as { status: string }
      return r.status === "Delivered" ? true : undefined
    }, { timeoutMs: 30_000, what: "Delivered in Parley" })
    expect(zoho.records.get("Parley_Messages")?.get(id)?.["Status"]).toBe("Queued")
    await server.restart("SIGKILL")
    await zoho.up()
    await until(async () => zoho.records.get("Parley_Messages")?.get(id)?.["Status"] === "Delivered" ? true : undefined, {
      timeoutMs: 60_000,
      what: "Delivered in Zoho after the restart"
    })
  }, HEAVY)

  it("an inbound text becomes an Inbound record linked to the one Lead with that phone", async () => {
    const response = await server.fetch("/carrier/inbound", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: "Hello back", MessageSid: "SM0123456789abcdef0123456789abcdef" }).toString()
    })
    expect(response.status, await response.text()).toBe(200)
    const record = messages().find((m) => m["Body"] === "Hello back")
    expect(record).toMatchObject({ Direction: "Inbound", From_Number: "+14155550123", Lead: { id: leadId } })
    const listed = (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live }).then((r) => r.json())) as { items: Array<{ id: string }> }
    expect(listed.items.map((m) => m.id)).toContain(record?.id)
  }, HEAVY)

  it("an inbound MMS: Zoho's one text field lists the media URLs after the text; Parley's record keeps them apart", async () => {
    const photo = (n: number) => `https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MMzoho/Media/ME${n}`
    const response = await server.fetch("/carrier/inbound", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: "Photos attached", NumMedia: "2",
        MediaUrl0: photo(0), MediaUrl1: photo(1), MessageSid: "MMzoho0123456789abcdef0123456789ab"
      }).toString()
    })
    expect(response.status, await response.text()).toBe(200)
    const record = messages().find((m) => String(m["Body"] ?? "").startsWith("Photos attached"))
    expect(record?.["Body"]).toBe(`Photos attached\n${photo(0)}\n${photo(1)}`)
    const read = (await server.fetch(`/api/v1/messages/${record?.id ?? "none"}`, { key: demo.keys.live }).then((r) => r.json())) as {
      body: string
      mediaUrls: ReadonlyArray<string>
    }
    expect(read).toMatchObject({ body: "Photos attached", mediaUrls: [photo(0), photo(1)] })
  }, HEAVY)

  it("a scheduled text is read and cancelled by its Zoho id; the cancellation reaches Zoho", async () => {
    const scheduledFor = new Date(Date.now() + 3_600_000).toISOString()
    const created = await send(demo.keys.live, { body: "later", scheduledFor })
    expect(created.status).toBe(202)
    const id = ((await created.json()) as { id: string }).id
    expect(zoho.records.get("Parley_Messages")?.get(id)?.["Scheduled_For"]).toMatch(/\+00:00$/)
    const cancelled = await server.fetch(`/api/v1/messages/${id}/cancel`, { key: demo.keys.live, method: "POST" })
    expect(cancelled.status, await cancelled.text()).toBe(200)
    await until(async () => zoho.records.get("Parley_Messages")?.get(id)?.["Status"] === "Cancelled" ? true : undefined, {
      timeoutMs: 30_000,
      what: "Cancelled in Zoho"
    })
  }, HEAVY)

  it("test keys write nothing to Zoho", async () => {
    const before = messages().length
    const response = await send(demo.keys.test, { body: "just testing" })
    expect(response.status).toBe(202)
    expect(messages().length).toBe(before)
  }, HEAVY)

  it("Zoho down at creation → 502 with nothing queued; the retry creates exactly one record and one action", async () => {
    const key = idem()
    const before = messages().length
    await zoho.down()
    const down = await send(demo.keys.live, { body: "while Zoho is down" }, key)
    expect(down.status).toBe(502)
    expect(((await down.json()) as { error: { code: string } }).error.code).toBe("CRM_UNAVAILABLE")
    await zoho.up()
    const retry = await send(demo.keys.live, { body: "while Zoho is down" }, key)
    expect(retry.status).toBe(202)
    expect(messages().length).toBe(before + 1)
    const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM actions WHERE body = ?", ["while Zoho is down"])
    expect(Number(rows[0]?.n)).toBe(1)
  }, HEAVY)

  it("a connection dropped after Zoho wrote the record → 502; the retry finds that same record", async () => {
    const key = idem()
    const before = messages().length
    zoho.dropNextAfterWrite()
    const dropped = await send(demo.keys.live, { body: "dropped answer" }, key)
    expect(dropped.status).toBe(502)
    expect(messages().length).toBe(before + 1)
    const retry = await send(demo.keys.live, { body: "dropped answer" }, key)
    expect(retry.status).toBe(202)
    expect(messages().length).toBe(before + 1)
    const id = ((await retry.json()) as { id: string }).id
    expect(messages().find((m) => m["Body"] === "dropped answer")?.id).toBe(id)
  }, HEAVY)

  it("Zoho at its limit (429) → a short retry, then 503 with Retry-After; never a 500", async () => {
    zoho.failNext(1, "429")
    const once = await send(demo.keys.live, { body: "429 once" })
    expect(once.status).toBe(202)
    zoho.failNext(10, "429")
    const busy = await send(demo.keys.live, { body: "429 always" })
    expect(busy.status).toBe(503)
    expect(busy.headers.get("retry-after")).toMatch(/^\d+$/)
    zoho.clearFaults()
  }, HEAVY)

  it("Zoho's NO_PERMISSION on the linked record → 403 CRM_PERMISSION_DENIED", async () => {
    const secret = zoho.addRecord("Leads", { First_Name: "Hidden", Full_Name: "Hidden Lead" })
    zoho.deniedRecords.add(secret)
    const response = await send(demo.keys.live, { body: "hi", record: { module: "Leads", id: secret } })
    expect(response.status).toBe(403)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("CRM_PERMISSION_DENIED")
  }, HEAVY)

  it("50 concurrent requests at token expiry → exactly one refresh", async () => {
    zoho.expireAccessTokens()
    // The stored token still looks valid to Parley: the first answers are INVALID_TOKEN, then one refresh.
    const before = zoho.refreshes
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(demo.keys.live, { body: `storm ${i}` })))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 202)).toHaveLength(50)
    expect(zoho.refreshes - before).toBe(1)
  }, HEAVY)

  it("another user behind the token → IDENTITY_CHANGED; reconnecting fixes it", async () => {
    zoho.addUser({ id: "5725767000000412002", zuid: "800000002", full_name: "Bob Other", email: "bob@acme.test", profile: { name: "Standard", id: "5725767000000026014" } })
    zoho.switchTokensTo("800000002")
    zoho.expireAccessTokens()
    const changed = await send(demo.keys.live, { body: "who am I" })
    expect(changed.status).toBe(403)
    expect(((await changed.json()) as { error: { code: string } }).error.code).toBe("IDENTITY_CHANGED")
    const next = await send(demo.keys.live, { body: "who am I" })
    expect(((await next.json()) as { error: { code: string } }).error.code).toBe("IDENTITY_CHANGED")
    zoho.consentingUser = "800000001"
    const { status } = await connect()
    expect(status).toBe(200)
    expect((await send(demo.keys.live, { body: "back" })).status).toBe(202)
  }, HEAVY)

  it("a refresh refused after the administrator reconnected does not undo the reconnect", async () => {
    // Seen in CI: a background write-back's refresh with the revoked token came back after the reconnect and
    // marked the new connection OAUTH_REQUIRED, so the next send answered 403.
    zoho.revokeAll()
    const held = zoho.holdNextRefresh()
    const inFlight = send(demo.keys.live, { body: "refreshing while reconnecting" })
    await held.arrived
    expect((await connect()).status).toBe(200)
    held.release()
    expect((await inFlight).status).toBe(202)
    expect((await send(demo.keys.live, { body: "after the reconnect" })).status).toBe(202)
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { lastError: unknown }
    expect(view.lastError).toBeNull()
  }, HEAVY)

  it("a revoked refresh token → OAUTH_REQUIRED; disconnect revokes at Zoho", async () => {
    zoho.revokeAll()
    const refused = await send(demo.keys.live, { body: "revoked" })
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("OAUTH_REQUIRED")
    const view = JSON.parse((await admin(["crm", "status", demo.orgId, "--json"])).stdout) as { lastError: { message: string } | null }
    expect(view.lastError?.message).toContain("invalid_code")
    await connect()
    expect((await send(demo.keys.live, { body: "reconnected" })).status).toBe(202)
    await admin(["crm", "disconnect", demo.orgId])
    expect(zoho.requests.some((r) => r.path === "/oauth/v2/token/revoke")).toBe(true)
    const after = await send(demo.keys.live, { body: "disconnected" })
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe("OAUTH_REQUIRED")
  }, HEAVY)
})
