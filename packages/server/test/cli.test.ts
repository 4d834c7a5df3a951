/**
 * The admin CLI, black-box: the real `parley` binary against the data
 * directory of a running server, checked through its output and over HTTP.
 * Each CLI call starts node (about half a second of CPU, most of it loading
 * the bundle), so independent calls run side by side, and every test runs the
 * real binary for its commands' successes and one failure of each kind; the
 * further variants of a command or a message run the same command in the test
 * process (`inProcess`: support/admin.ts, the same parsing, layers, output and
 * error rendering as bin/parley.mjs), a process start each saved.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, TestServer } from "./support/server.js"

interface Organisation {
  readonly id: string
  readonly name: string
  readonly subscriptionActive: boolean
  readonly seatActive: boolean
  readonly pilotOpen: boolean
  readonly aiCallsEnabled: boolean
  readonly timezone: string
  readonly sendingHours: string
  readonly smsAllowance: number | null
  readonly callAllowance: number | null
  readonly destinationCountries: ReadonlyArray<string> | null
}

interface Connection {
  readonly orgId: string
  readonly state: string
  readonly account: {
    readonly id: string
    readonly name: string
    readonly permissions: {
      readonly modules: ReadonlyArray<string>
      readonly actionsView: string
      readonly actionsWrite: boolean
      readonly templates: boolean
    }
  } | null
}

interface CreatedKey {
  readonly id: string
  readonly key: string
  readonly orgId: string
  readonly name: string
  readonly mode: string
  readonly scopes: ReadonlyArray<string>
  readonly numbers: ReadonlyArray<string>
  readonly bots: ReadonlyArray<string>
  readonly expiresAt: string | null
}

interface Items<A> {
  readonly items: ReadonlyArray<A>
}

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

/** A failed command: non-zero exit, one plain line on stderr matching `pattern`, no stack trace, nothing on stdout. */
const expectFailure = (result: CliResult, pattern: RegExp) => {
  expect(result.code, result.stderr).not.toBe(0)
  expect(result.stdout).toBe("")
  const stderr = result.stderr.trim()
  expect(stderr).toMatch(pattern)
  expect(stderr.split("\n")).toHaveLength(1)
  expect(stderr).not.toMatch(/\.[cm]?[jt]s:\d+|\[object Object\]|Error:/)
}

describe("parley admin CLI", () => {
  let server: TestServer
  let org: Organisation
  let smsSid: string
  let liveKey: CreatedKey
  const SMS_LINE = "+14155550100"
  const ADA = "+447700900001"

  const json = <A>(args: ReadonlyArray<string>) => server.cliJson<A>(args)
  /** A further variant, run in the test process (see the file's comment). */
  const inProcess = (args: ReadonlyArray<string>) => server.admin(args)
  const inProcessJson = <A>(args: ReadonlyArray<string>) => server.adminJson<A>(args)
  const get = (path: string, key: string) => server.fetch(path, { key })

  beforeAll(async () => {
    server = await TestServer.start()
  })
  afterAll(() => server.dispose())

  it("orgs create, update and list", async () => {
    org = await json<Organisation>(["orgs", "create", "--name", "Acme Ltd"])
    expect(org).toMatchObject({
      name: "Acme Ltd",
      subscriptionActive: true,
      seatActive: true,
      pilotOpen: true,
      aiCallsEnabled: true,
      timezone: "UTC",
      sendingHours: "always",
      smsAllowance: 1000,
      callAllowance: 100,
      destinationCountries: null
    })
    expect(org.id).toMatch(/^org_/)

    const [changed, all] = await Promise.all([
      json<Organisation>([
        "orgs", "update", org.id, "--ai-calls", "off", "--sending-hours", "Mon-Fri 09:00-17:00",
        "--timezone", "europe/berlin", "--sms-allowance", "100", "--call-allowance", "unlimited"
      ]),
      inProcessJson<Items<Organisation>>(["orgs", "list"])
    ])
    expect(changed).toMatchObject({
      id: org.id,
      aiCallsEnabled: false,
      sendingHours: "Mon-Fri 09:00-17:00",
      timezone: "Europe/Berlin",
      smsAllowance: 100,
      callAllowance: null,
      subscriptionActive: true
    })
    expect(all.items.map((o) => o.id)).toContain(org.id)
  })

  it("orgs: bad input fails with one clear line", async () => {
    const [missing, unknown, hours, zone] = await Promise.all([
      server.cli(["orgs", "create", "--json"]),
      server.cli(["orgs", "update", "org_nope", "--pilot", "pending"]),
      inProcess(["orgs", "update", org.id, "--sending-hours", "Mon-Fry 09:00-17:00"]),
      inProcess(["orgs", "update", org.id, "--sending-hours", "always", "--timezone", "Mars/Olympus"])
    ])
    expectFailure(missing, /--name/)
    expectFailure(unknown, /Unknown organisation "org_nope"/)
    expectFailure(hours, /--sending-hours.*Unknown day "Fry"/)
    expectFailure(zone, /--timezone "Mars\/Olympus"/)
  })

  it("crm connect, bots, numbers, templates and records add and list", async () => {
    const connection = await json<Connection>(["crm", "connect", org.id, "--account", "Dana Admin"])
    expect(connection).toMatchObject({
      orgId: org.id,
      state: "connected",
      account: { id: "crm_user_dana_admin", name: "Dana Admin", permissions: { actionsView: "all", actionsWrite: true } }
    })
    expect(connection.account?.permissions.modules).toEqual(["Leads", "Contacts", "Vendors", "Deals"])

    const [bot, record] = await Promise.all([
      json<{ id: string; active: boolean; direction: string }>([
        "bots", "add", "--org", org.id, "--name", "Sales qualifier", "--id", "bot_sales", "--description", "Books demos"
      ]),
      inProcessJson<{ module: string; id: string; fields: Record<string, string> }>([
        "records", "add", "--org", org.id, "--module", "Leads", "--id", "5001", "--name", "Ada Lovelace",
        "--phone", ADA, "--owner", "crm_user_dana_admin", "--field", "First Name=Ada", "--field", "Last Name=Lovelace"
      ])
    ])
    expect(bot).toMatchObject({ id: "bot_sales", active: true, direction: "outbound" })
    expect(record).toMatchObject({ module: "Leads", id: "5001", fields: { "First Name": "Ada", "Last Name": "Lovelace" } })

    const [sms, template] = await Promise.all([
      json<{ sid: string; capabilities: Record<string, boolean>; voiceOutboundBotId: string | null }>([
        "numbers", "add", "--org", org.id, "--phone", SMS_LINE, "--name", "Sales line", "--voice-bot", "bot_sales"
      ]),
      inProcessJson<{ id: string; crmId: string; recordType: string | null; body: string }>([
        "templates", "add", "--org", org.id, "--name", "Reminder", "--body", "Hi ${Leads.First Name}",
        "--record-type", "Leads"
      ])
    ])
    expect(sms.sid).toMatch(/^PN[0-9a-f]{32}$/)
    expect(sms.capabilities).toEqual({ sms: true, voice: true, whatsapp: false })
    expect(sms.voiceOutboundBotId).toBe("bot_sales")
    expect(template.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(template.crmId).toMatch(/^\d+$/)
    expect(template).toMatchObject({ recordType: "Leads", body: "Hi ${Leads.First Name}" })
    smsSid = sms.sid

    const [numbers, bots, templates, records] = await Promise.all([
      server.cli(["numbers", "list", "--org", org.id]),
      inProcessJson<Items<{ id: string }>>(["bots", "list", "--org", org.id]),
      json<Items<{ id: string; name: string }>>(["templates", "list", "--org", org.id]),
      inProcessJson<Items<{ id: string }>>(["records", "list", "--org", org.id])
    ])
    expect(numbers.code).toBe(0)
    expect(numbers.stdout).toContain(smsSid)
    expect(numbers.stdout).toContain(SMS_LINE)
    expect(bots.items.map((b) => b.id)).toEqual(["bot_sales"])
    expect(templates.items.map((t) => t.id)).toEqual([template.id])
    expect(records.items.map((r) => r.id)).toEqual(["5001"])
  })

  it("resources: bad input fails with one clear line", async () => {
    const [phone, templateId, module, unknownOrg] = await Promise.all([
      server.cli(["numbers", "add", "--org", org.id, "--phone", "4155550100", "--name", "No plus", "--json"]),
      inProcess(["templates", "add", "--org", org.id, "--name", "T", "--body", "B", "--id", "not-a-uuid"]),
      server.cli(["records", "add", "--org", org.id, "--module", "Accounts", "--id", "1", "--name", "X"]),
      inProcess(["bots", "add", "--org", "org_nope", "--name", "X"])
    ])
    expectFailure(phone, /--phone "4155550100" must be an E\.164/)
    expectFailure(templateId, /--id "not-a-uuid" must be a UUID/)
    expectFailure(module, /Leads, Contacts, Vendors, Deals/)
    expectFailure(unknownOrg, /Unknown organisation "org_nope"/)
  })

  it("lists: an empty organisation's list says how to add the first; a filled one is a table; an unknown organisation fails", async () => {
    const empty = await inProcessJson<Organisation>(["orgs", "create", "--name", "Empty Co"])
    const nouns = [
      ["bots", "parley bots add"],
      ["numbers", "parley numbers add"],
      ["templates", "parley templates add"],
      ["records", "parley records add"],
      ["webhooks", "parley webhooks add"]
    ] as const
    // The first noun's list by the real binary, the others' (the same generic list command) in the test process.
    const listed = await Promise.all(
      nouns.map(([noun], i) => {
        const args = [noun, "list", "--org", empty.id]
        return i === 0 ? server.cli(args) : inProcess(args)
      })
    )
    listed.forEach((result, i) => {
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toContain(empty.id)
      expect(result.stdout).toContain(nouns[i]?.[1])
    })
    expect(await inProcessJson<Items<unknown>>(["webhooks", "list", "--org", empty.id])).toEqual({ items: [] })
    expectFailure(await inProcess(["records", "list", "--org", "org_nope"]), /Unknown organisation "org_nope"/)
    const filled = await server.cli(["bots", "list", "--org", org.id])
    expect(filled.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+STATUS\s+DIRECTION\s+DESCRIPTION$/)
    expect(filled.stdout).toContain("bot_sales")
  }, 180_000)

  it("keys create, list and revoke; a revoked key fails on the server's next request", async () => {
    const [live, restricted] = await Promise.all([
      json<CreatedKey>(["keys", "create", "--org", org.id, "--name", "backend", "--scopes", "all", "--mode", "live"]),
      inProcessJson<CreatedKey>([
        "keys", "create", "--org", org.id, "--name", "reader", "--scopes", "resources:read,messages:read",
        "--mode", "test", "--numbers", smsSid, "--bots", "bot_sales", "--expires-at", "2099-01-01T01:00:00+01:00"
      ])
    ])
    liveKey = live
    expect(live.key).toMatch(/^parley_live_/)
    expect(live).toMatchObject({ orgId: org.id, name: "backend", mode: "live", numbers: [], bots: [], expiresAt: null })
    // `all` is every scope there is, the webhook (issue 13) and opt-out (issue 32) scopes included.
    expect([...live.scopes].sort()).toEqual([
      "calls:read", "calls:write", "messages:read", "messages:write", "optouts:read", "optouts:write", "resources:read",
      "webhooks:read", "webhooks:write"
    ])
    expect(restricted).toMatchObject({
      mode: "test",
      scopes: ["resources:read", "messages:read"],
      numbers: [smsSid],
      bots: ["bot_sales"],
      expiresAt: "2099-01-01T00:00:00.000Z"
    })
    expect(restricted.key).toMatch(/^parley_test_/)

    const before = await get("/api/v1/numbers", restricted.key)
    expect(before.status).toBe(200)
    expect(((await before.json()) as Items<{ sid: string }>).items.map((n) => n.sid)).toEqual([smsSid])

    const revoked = await json<{ id: string; status: string }>(["keys", "revoke", restricted.id])
    expect(revoked).toMatchObject({ id: restricted.id, status: "revoked" })
    const after = await get("/api/v1/numbers", restricted.key)
    expect(after.status).toBe(401)
    expect(((await after.json()) as ErrorBody).error.code).toBe("UNAUTHORIZED")

    const [list, listText, again] = await Promise.all([
      server.cli(["keys", "list", "--org", org.id, "--json"]),
      inProcess(["keys", "list", "--org", org.id]),
      inProcess(["keys", "revoke", restricted.id])
    ])
    const listed = JSON.parse(list.stdout) as Items<{ id: string; prefix: string; status: string }>
    expect(Object.fromEntries(listed.items.map((k) => [k.id, k.status]))).toEqual({
      [live.id]: "active",
      [restricted.id]: "revoked"
    })
    expect(live.key.startsWith(listed.items.find((k) => k.id === live.id)?.prefix ?? "-")).toBe(true)
    for (const output of [list.stdout, listText.stdout]) {
      expect(output).not.toContain(live.key)
      expect(output).not.toContain(restricted.key)
      expect(output).not.toMatch(/[0-9a-f]{64}/)
    }
    expect(listText.stdout).toContain("revoked")
    expectFailure(again, /already revoked/)
  })

  it("keys create: bad input fails with one clear line", async () => {
    const base = ["keys", "create", "--org", org.id, "--name", "bad"]
    const [scope, sid, expiry] = await Promise.all([
      server.cli([...base, "--scopes", "messages:read,messages:delete", "--mode", "test", "--json"]),
      inProcess([...base, "--scopes", "all", "--mode", "test", "--numbers", "PNmissing", "--bots", "bot_sales"]),
      inProcess([...base, "--scopes", "all", "--mode", "live", "--expires-at", "next tuesday"])
    ])
    expectFailure(scope, /--scopes.*"messages:delete"/)
    expectFailure(sid, /--numbers.*"PNmissing"/)
    expectFailure(expiry, /--expires-at "next tuesday"/)
  })

  it("inbound makes an unread conversation linked to the CRM record", async () => {
    const message = await json<{ id: string; direction: string; status: string; type: string; from: string; to: string }>([
      "inbound", "--org", org.id, "--from", ADA, "--to", SMS_LINE, "--body", "Is the demo still on?"
    ])
    expect(message).toMatchObject({ direction: "Inbound", status: "Received", type: "SMS", from: ADA, to: SMS_LINE })
    expect(message.id).toMatch(/^\d+$/)

    const response = await get("/api/v1/conversations", liveKey.key)
    expect(response.status).toBe(200)
    const page = (await response.json()) as Items<{
      phone: string
      unread: boolean
      unreadCount: number
      line?: string
      linkedRecords: ReadonlyArray<{ module: string; id: string }>
    }>
    const conversation = page.items.find((c) => c.phone === ADA)
    expect(conversation).toMatchObject({ unread: true, unreadCount: 1, line: SMS_LINE })
    expect(conversation?.linkedRecords).toEqual([expect.objectContaining({ module: "Leads", id: "5001" })])

    const photo = (n: number) => `https://example.com/mms/${n}.jpg`
    const [whatsApp, notOurs, mediaOnly, notUrl] = await Promise.all([
      server.cli(["inbound", "--org", org.id, "--from", ADA, "--to", SMS_LINE, "--body", "x", "--channel", "WhatsApp"]),
      inProcess(["inbound", "--org", org.id, "--from", ADA, "--to", "+14155550177", "--body", "x", "--json"]),
      inProcessJson<{ body: string; mediaUrls: ReadonlyArray<string> }>([
        "inbound", "--org", org.id, "--from", "+447700900099", "--to", SMS_LINE, "--body", "",
        "--media-url", photo(1), "--media-url", photo(2)
      ]),
      inProcess(["inbound", "--org", org.id, "--from", ADA, "--to", SMS_LINE, "--body", "x", "--media-url", "photo.jpg"])
    ])
    expectFailure(whatsApp, /not connected to WhatsApp/)
    expectFailure(notOurs, /\+14155550177 is not a number of/)
    expect(mediaOnly).toMatchObject({ body: "", mediaUrls: [photo(1), photo(2)] })
    expectFailure(notUrl, /"photo\.jpg" is not an absolute http\(s\) URL/)
  })

  it("crm connect with another account switches the owner of new actions for existing keys", async () => {
    const send = async (idempotencyKey: string) => {
      const created = await server.fetch("/api/v1/messages", {
        key: liveKey.key,
        method: "POST",
        headers: { "idempotency-key": idempotencyKey },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: smsSid, body: "Hello" })
      })
      expect(created.status).toBe(202)
      const { id } = (await created.json()) as { id: string }
      const record = await get(`/api/v1/messages/${id}`, liveKey.key)
      expect(record.status).toBe(200)
      return ((await record.json()) as { owner: { id: string; name: string } | null }).owner
    }
    expect(await send("owner-before")).toEqual({ id: "crm_user_dana_admin", name: "Dana Admin" })
    const reconnected = await json<Connection>([
      "crm", "connect", org.id, "--account", "Sam Sales", "--account-id", "crm_user_42"
    ])
    expect(reconnected.account).toMatchObject({ id: "crm_user_42", name: "Sam Sales" })
    expect(await send("owner-after")).toEqual({ id: "crm_user_42", name: "Sam Sales" })
  })

  it("crm permissions, identity-changed and disconnect reach the server", async () => {
    const other = await inProcessJson<Organisation>(["orgs", "create", "--name", "Other Co"])
    const notConnected = await server.cli(["crm", "permissions", other.id, "--actions", "own"])
    expectFailure(notConnected, /No CRM account is connected/)
    await inProcessJson<Connection>(["crm", "connect", other.id, "--account", "Olga"])
    const [permissions, key] = await Promise.all([
      json<Connection>([
        "crm", "permissions", other.id, "--modules", "Leads,Deals", "--actions", "own", "--actions-write", "off",
        "--templates", "off"
      ]),
      inProcessJson<CreatedKey>(["keys", "create", "--org", other.id, "--name", "k", "--scopes", "all", "--mode", "test"])
    ])
    expect(permissions.account?.permissions).toEqual({
      modules: ["Leads", "Deals"],
      actionsView: "own",
      actionsWrite: false,
      templates: false
    })
    const denied = await get("/api/v1/templates", key.key)
    expect(denied.status).toBe(403)

    const changed = await json<Connection>(["crm", "identity-changed", other.id])
    expect(changed.state).toBe("identity_changed")
    const identity = await get("/api/v1/numbers", key.key)
    expect(((await identity.json()) as ErrorBody).error.code).toBe("IDENTITY_CHANGED")

    const disconnected = await json<Connection>(["crm", "disconnect", other.id])
    expect(disconnected).toEqual({ orgId: other.id, state: "disconnected", account: null })
    const oauth = await get("/api/v1/numbers", key.key)
    expect(((await oauth.json()) as ErrorBody).error.code).toBe("OAUTH_REQUIRED")
  })

  it("webhooks add prints the signing secret once; list never shows it", async () => {
    const [hook, bad] = await Promise.all([
      json<{ id: string; url: string; secret: string }>([
        "webhooks", "add", "--org", org.id, "--url", "https://example.com/parley/events"
      ]),
      inProcess(["webhooks", "add", "--org", org.id, "--url", "ftp://example.com/events"])
    ])
    expect(hook.id).toMatch(/^wh_/)
    expect(hook.url).toBe("https://example.com/parley/events")
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    expect(Buffer.from(hook.secret.slice("whsec_".length), "base64")).toHaveLength(24)
    expectFailure(bad, /--url "ftp:\/\/example\.com\/events" must be an http/)
    const list = await server.cli(["webhooks", "list", "--org", org.id, "--json"])
    expect((JSON.parse(list.stdout) as Items<{ id: string }>).items.map((w) => w.id)).toEqual([hook.id])
    expect(list.stdout).not.toContain(hook.secret)
  })

  it("orgs update --subscription inactive answers 403 SUBSCRIPTION_INACTIVE over HTTP", async () => {
    const updated = await json<Organisation>(["orgs", "update", org.id, "--subscription", "inactive"])
    expect(updated.subscriptionActive).toBe(false)
    const response = await get("/api/v1/numbers", liveKey.key)
    expect(response.status).toBe(403)
    expect(((await response.json()) as ErrorBody).error.code).toBe("SUBSCRIPTION_INACTIVE")
  })
})
