/**
 * GET /messages and GET /ai-calls over real HTTP (issue 13): keyset pages of
 * 50, newest first, that visit every record once; the status, since and
 * number filters; signed cursors bound to their list and filters; key
 * restrictions (numbers, bots) and the CRM account's permissions narrowing
 * the lists as they narrow single reads; organisation scoping; scopes.
 *
 * The texts and calls are scheduled an hour ahead so that only the test's
 * own cancellations change them while the lists are read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, PN1, PN1_PHONE, PN2, PN2_PHONE, type CreatedKey } from "./support/demo.js"

interface ActionRecord {
  readonly id: string
  readonly status?: string | null
  readonly from?: string | null
  readonly to?: string | null
  readonly botId: string | null
  readonly modified?: string | null
}
interface Page {
  readonly items: ReadonlyArray<ActionRecord>
  readonly nextCursor: string | null
}

const ON_PN1 = 60
const ON_PN2 = 10
const CANCELLED = 5

const byIdDescending = (a: string, b: string) => (BigInt(a) === BigInt(b) ? 0 : BigInt(a) > BigInt(b) ? -1 : 1)

describe("record lists", () => {
  let server: TestServer
  let demo: DemoSummary
  let n = 0
  const messages: Array<{ readonly id: string; readonly line: string }> = []
  const calls: Array<{ readonly id: string; readonly bot: string }> = []
  const cancelled: Array<string> = []
  let beforeCancelling = ""

  const query = (params: Record<string, string | undefined>) => {
    const search = new URLSearchParams()
    for (const [k, v] of Object.entries(params)) if (v !== undefined) search.set(k, v)
    const text = search.toString()
    return text === "" ? "" : `?${text}`
  }
  const listMessages = (params: Record<string, string | undefined> = {}, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/messages${query(params)}`, { key })
  const listCalls = (params: Record<string, string | undefined> = {}, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/ai-calls${query(params)}`, { key })

  /** Every page of a list, following nextCursor with the same filters. */
  const walk = async (
    list: (params: Record<string, string | undefined>, key?: string) => Promise<Response>,
    params: Record<string, string | undefined> = {},
    key?: string
  ): Promise<ReadonlyArray<Page>> => {
    const pages: Array<Page> = []
    let cursor: string | undefined
    do {
      const page = await readJson<Page>(await list({ ...params, cursor }, key), 200)
      pages.push(page)
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined && pages.length < 10)
    return pages
  }
  const ids = (pages: ReadonlyArray<Page>) => pages.flatMap((p) => p.items.map((r) => r.id))
  const createKey = (scopes: string, ...extra: ReadonlyArray<string>) =>
    server.adminJson<CreatedKey>([
      "keys", "create", "--org", demo.orgId, "--name", `lists ${++n}`, "--scopes", scopes, "--mode", "live", ...extra
    ])

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    demo = await server.demo()
    const scheduledFor = new Date(Date.now() + 60 * 60_000).toISOString()
    const post = async (path: string, body: unknown) => {
      const response = await server.fetch(path, {
        key: demo.keys.live,
        method: "POST",
        headers: { "idempotency-key": `lists-${++n}` },
        body: JSON.stringify(body)
      })
      return (await readJson<{ readonly id: string }>(response, 202)).id
    }
    const lines = [...Array.from({ length: ON_PN1 }, () => PN1), ...Array.from({ length: ON_PN2 }, () => PN2)]
    for (let start = 0; start < lines.length; start += 10) {
      const batch = await Promise.all(lines.slice(start, start + 10).map(async (sid, j) => ({
        id: await post("/api/v1/messages", { to: `+1503555${String(1000 + start + j)}`, fromNumberSid: sid, body: "hi", scheduledFor }),
        line: sid === PN1 ? PN1_PHONE : PN2_PHONE
      })))
      messages.push(...batch)
    }
    for (const [sid, bot] of [[PN1, "bot_sales"], [PN1, "bot_sales"], [PN2, "bot_support"], [PN2, "bot_support"]] as const) {
      calls.push({
        id: await post("/api/v1/ai-calls", { to: "+15035559999", fromNumberSid: sid, botId: bot, mode: "follow_script", scheduledFor }),
        bot
      })
    }
    // A gap so that every record above was last modified strictly before this instant.
    await new Promise((resolve) => setTimeout(resolve, 20))
    beforeCancelling = new Date().toISOString()
    await new Promise((resolve) => setTimeout(resolve, 20))
    for (const m of messages.slice(0, CANCELLED)) {
      const response = await server.fetch(`/api/v1/messages/${m.id}/cancel`, { key: demo.keys.live, method: "POST" })
      expect(response.status).toBe(200)
      cancelled.push(m.id)
    }
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  it("pages GET /messages by 50, newest first, visiting every text once and no call", async () => {
    const pages = await walk(listMessages)
    expect(pages.map((p) => p.items.length)).toEqual([50, ON_PN1 + ON_PN2 - 50])
    expect(pages[pages.length - 1]!.nextCursor).toBeNull()
    expect(ids(pages)).toEqual(messages.map((m) => m.id).sort(byIdDescending))
    // The list route sits beside GET /messages/{id}, which still reads one record.
    const one = await readJson<ActionRecord>(await server.fetch(`/api/v1/messages/${messages[0]!.id}`, { key: demo.keys.live }), 200)
    expect(one.status).toBe("Cancelled")
  })

  it("lists AI calls at /ai-calls, and only them", async () => {
    const pages = await walk(listCalls)
    expect(ids(pages)).toEqual(calls.map((c) => c.id).sort(byIdDescending))
    expect(pages[0]!.items.every((r) => r.botId !== null)).toBe(true)
  })

  it("filters by status (one or several, comma-separated)", async () => {
    expect(ids(await walk(listMessages, { status: "Cancelled" }))).toEqual([...cancelled].sort(byIdDescending))
    const queued = await walk(listMessages, { status: "Queued" })
    expect(ids(queued)).toHaveLength(ON_PN1 + ON_PN2 - CANCELLED)
    expect(queued.flatMap((p) => p.items).every((r) => r.status === "Queued")).toBe(true)
    expect(ids(await walk(listMessages, { status: "Queued,Cancelled" }))).toHaveLength(ON_PN1 + ON_PN2)
    expect(ids(await walk(listMessages, { status: "Delivered" }))).toEqual([])
    // A call status is not a text status, and the reverse.
    await expectError(await listMessages({ status: "In Progress" }), 400, "INVALID_REQUEST")
    await expectError(await listCalls({ status: "Delivered" }), 400, "INVALID_REQUEST")
    expect(ids(await walk(listCalls, { status: "Queued" }))).toHaveLength(calls.length)
  })

  it("filters by since: records changed at or after the time (the cancelled ones)", async () => {
    expect(ids(await walk(listMessages, { since: beforeCancelling }))).toEqual([...cancelled].sort(byIdDescending))
    // The same instant in another offset is the same filter.
    const local = new Date(Date.parse(beforeCancelling) + 2 * 3_600_000).toISOString().replace("Z", "+02:00")
    expect(ids(await walk(listMessages, { since: local }))).toEqual([...cancelled].sort(byIdDescending))
    expect(ids(await walk(listCalls, { since: beforeCancelling }))).toEqual([])
    await expectError(await listMessages({ since: "2026-01-01T10:00:00" }), 400, "INVALID_REQUEST")
  })

  it("filters by number, given as a sid or a phone number", async () => {
    const onPn2 = messages.filter((m) => m.line === PN2_PHONE).map((m) => m.id).sort(byIdDescending)
    expect(ids(await walk(listMessages, { number: PN2 }))).toEqual(onPn2)
    expect(ids(await walk(listMessages, { number: PN2_PHONE }))).toEqual(onPn2)
    const pages = await walk(listMessages, { number: PN1, status: "Queued" })
    expect(ids(pages)).toHaveLength(ON_PN1 - CANCELLED)
    expect(pages.flatMap((p) => p.items).every((r) => r.from === PN1_PHONE)).toBe(true)
    expect(ids(await walk(listCalls, { number: PN2 }))).toEqual(calls.slice(2).map((c) => c.id).sort(byIdDescending))
    await expectError(await listMessages({ number: "PN_NOT_OURS" }), 400, "INVALID_REQUEST")
  })

  it("binds a cursor to its list and filters; a forged one is a 400", async () => {
    const first = await readJson<Page>(await listMessages(), 200)
    const cursor = first.nextCursor!
    expect(cursor).not.toBeNull()
    // The same cursor answers the same page.
    const again = await readJson<Page>(await listMessages({ cursor }), 200)
    expect(await readJson<Page>(await listMessages({ cursor }), 200)).toEqual(again)
    await expectError(await listMessages({ cursor, status: "Queued" }), 400, "INVALID_REQUEST")
    await expectError(await listMessages({ cursor, number: PN1 }), 400, "INVALID_REQUEST")
    await expectError(await listCalls({ cursor }), 400, "INVALID_REQUEST")
    const forged = `${cursor.slice(0, -2)}${cursor.endsWith("AA") ? "BB" : "AA"}`
    await expectError(await listMessages({ cursor: forged }), 400, "INVALID_REQUEST")
    await expectError(await listMessages({ cursor: "x".repeat(600) }), 400, "INVALID_REQUEST")
    // A conversation-list cursor is not a message-list cursor.
    const conversations = await readJson<{ nextCursor: string | null }>(
      await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
      200
    )
    if (conversations.nextCursor !== null) {
      await expectError(await listMessages({ cursor: conversations.nextCursor }), 400, "INVALID_REQUEST")
    }
  })

  describe("restricted keys", () => {
    it("a key restricted to numbers lists only their lines, and may not name another", async () => {
      const restricted = await createKey("messages:read,calls:read", "--numbers", PN2)
      const onPn2 = messages.filter((m) => m.line === PN2_PHONE).map((m) => m.id).sort(byIdDescending)
      expect(ids(await walk(listMessages, {}, restricted.key))).toEqual(onPn2)
      expect(ids(await walk(listMessages, { number: PN2 }, restricted.key))).toEqual(onPn2)
      await expectError(await listMessages({ number: PN1 }, restricted.key), 403, "RESOURCE_DENIED")
      await expectError(await listMessages({ number: PN1_PHONE }, restricted.key), 403, "RESOURCE_DENIED")
      expect(ids(await walk(listCalls, {}, restricted.key))).toEqual(calls.slice(2).map((c) => c.id).sort(byIdDescending))
    }, CLI_HEAVY)

    it("a key restricted to bots lists only their calls (texts are not narrowed)", async () => {
      const restricted = await createKey("messages:read,calls:read", "--bots", "bot_sales")
      const sales = calls.filter((c) => c.bot === "bot_sales").map((c) => c.id).sort(byIdDescending)
      expect(ids(await walk(listCalls, {}, restricted.key))).toEqual(sales)
      // Each listed call is one the key can read, and a call it cannot list it cannot read.
      for (const call of calls) {
        const status = (await server.fetch(`/api/v1/ai-calls/${call.id}`, { key: restricted.key })).status
        expect(status, call.id).toBe(sales.includes(call.id) ? 200 : 404)
      }
      expect(ids(await walk(listMessages, {}, restricted.key))).toHaveLength(ON_PN1 + ON_PN2)
    }, CLI_HEAVY)

    it("needs messages:read for /messages and calls:read for /ai-calls", async () => {
      const callsOnly = await createKey("calls:read")
      await expectError(await listMessages({}, callsOnly.key), 403, "SCOPE_MISSING")
      expect((await listCalls({}, callsOnly.key)).status).toBe(200)
      const messagesOnly = await createKey("messages:read")
      await expectError(await listCalls({}, messagesOnly.key), 403, "SCOPE_MISSING")
    }, CLI_HEAVY)

    it("shows another organisation nothing of this one", async () => {
      const other = await server.adminJson<{ id?: string; orgId?: string }>(["orgs", "create", "--name", "Other Org"])
      const otherOrg = other.id ?? other.orgId ?? ""
      await server.adminJson(["crm", "connect", otherOrg, "--account", "Olive Other", "--account-id", "crm_user_other"])
      const key = await server.adminJson<CreatedKey>([
        "keys", "create", "--org", otherOrg, "--name", "other", "--scopes", "all", "--mode", "live"
      ])
      expect(await readJson<Page>(await listMessages({}, key.key), 200)).toEqual({ items: [], nextCursor: null })
      expect(await readJson<Page>(await listCalls({}, key.key), 200)).toEqual({ items: [], nextCursor: null })
      // The demo organisation's cursor and numbers mean nothing there.
      const first = await readJson<Page>(await listMessages(), 200)
      await expectError(await listMessages({ cursor: first.nextCursor! }, key.key), 400, "INVALID_REQUEST")
      await expectError(await listMessages({ number: PN1 }, key.key), 400, "INVALID_REQUEST")
    }, CLI_HEAVY)

    it("applies the connected CRM account's permissions: own actions only, or none", async () => {
      const permissions = (actions: string) =>
        server.adminJson(["crm", "permissions", demo.orgId, "--actions", actions])
      try {
        await server.adminJson(["crm", "connect", demo.orgId, "--account", "Someone Else", "--account-id", "crm_user_else"])
        await permissions("own")
        // The texts were made under the demo's account, so another account that sees only its own sees none.
        expect(await readJson<Page>(await listMessages(), 200)).toEqual({ items: [], nextCursor: null })
        await permissions("none")
        await expectError(await listMessages(), 403, "CRM_PERMISSION_DENIED")
        await expectError(await listCalls(), 403, "CRM_PERMISSION_DENIED")
      } finally {
        await permissions("all")
      }
      expect(ids(await walk(listMessages))).toHaveLength(ON_PN1 + ON_PN2)
    }, CLI_HEAVY)
  })
})
