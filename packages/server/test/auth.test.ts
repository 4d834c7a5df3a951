/**
 * Acceptance: authentication and authorisation of /api/v1 over real HTTP —
 * keys (missing, malformed, unknown, revoked, expired), scopes on every
 * endpoint, number and bot restrictions, test versus live keys, another
 * organisation's ids, and the organisation's access state.
 */
import { ApiKeys } from "@parley/core/domain"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, PN1, PN2, type CreatedKey, type Page } from "./support/demo.js"

interface CreationAck {
  readonly id: string
  readonly status: string
  readonly test: boolean
}
interface NumberItem {
  readonly sid: string
  readonly phoneNumber: string
}
interface BotItem {
  readonly id: string
}
interface TemplateItem {
  readonly id: string
  readonly name: string
}
interface ActionRecord {
  readonly id: string
  readonly body: string
  readonly from?: string | null
  readonly to?: string | null
}
interface ConversationSummary {
  readonly id: string
  readonly phone: string
}
interface CreatedOrg {
  readonly id?: string
  readonly orgId?: string
}

type Scope = "resources:read" | "messages:read" | "messages:write" | "calls:read" | "calls:write"
const SCOPES: ReadonlyArray<Scope> = ["resources:read", "messages:read", "messages:write", "calls:read", "calls:write"]

let phoneCounter = 0
/** A counterpart number no other test uses. */
const freshPhone = () => `+1202555${String(1000 + ++phoneCounter).padStart(4, "0")}`
let idemCounter = 0
const idem = () => `auth-${Date.now()}-${++idemCounter}`

describe("authentication and authorisation", () => {
  let server: TestServer
  let demo: DemoSummary
  /** Live actions of the demo organisation, created in beforeAll. */
  const ids = { message: "", messageBody: "", messageFromPn2: "", aiCall: "", conversation: "" }

  const run = async (args: ReadonlyArray<string>): Promise<void> => {
    const result = await server.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
  }
  const createKey = (org: string, name: string, scopes: string, mode: "test" | "live", extra: ReadonlyArray<string> = []) =>
    server.adminJson<CreatedKey>(["keys", "create", "--org", org, "--name", name, "--scopes", scopes, "--mode", mode, ...extra])

  const sendMessage = (key: string, payload: Record<string, unknown>, idempotencyKey: string = idem()) =>
    server.fetch("/api/v1/messages", {
      key,
      method: "POST",
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify(payload)
    })
  const startCall = (key: string, payload: Record<string, unknown>) =>
    server.fetch("/api/v1/ai-calls", {
      key,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify(payload)
    })

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    ids.messageBody = "Auth fixture: the secret of the demo organisation"
    ids.message = (await readJson<CreationAck>(
      await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, body: ids.messageBody }),
      202
    )).id
    ids.messageFromPn2 = (await readJson<CreationAck>(
      await sendMessage(demo.keys.live, { to: freshPhone(), fromNumberSid: PN2, body: "From the support line" }),
      202
    )).id
    ids.aiCall = (await readJson<CreationAck>(
      await startCall(demo.keys.live, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }),
      202
    )).id
    const conversations = await readJson<Page<ConversationSummary>>(
      await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
      200
    )
    const first = conversations.items[0]
    if (first === undefined) throw new Error("no conversation in the demo organisation")
    ids.conversation = first.id
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  /** The eleven endpoints with the scope each requires and what a key holding that scope gets. */
  const endpoints = (): ReadonlyArray<{
    readonly label: string
    readonly scope: Scope
    readonly method: "GET" | "POST"
    readonly path: string
    readonly body?: Record<string, unknown>
    readonly idempotent?: boolean
    /** Status for a (test) key that has the scope. */
    readonly allowed: number
  }> => [
    { label: "GET /numbers", scope: "resources:read", method: "GET", path: "/api/v1/numbers", allowed: 200 },
    { label: "GET /bots", scope: "resources:read", method: "GET", path: "/api/v1/bots", allowed: 200 },
    { label: "GET /templates", scope: "resources:read", method: "GET", path: "/api/v1/templates", allowed: 200 },
    { label: "GET /conversations", scope: "messages:read", method: "GET", path: "/api/v1/conversations", allowed: 200 },
    {
      label: "GET /conversations/{id}",
      scope: "messages:read",
      method: "GET",
      path: `/api/v1/conversations/${encodeURIComponent(ids.conversation)}`,
      allowed: 200
    },
    {
      label: "POST /messages",
      scope: "messages:write",
      method: "POST",
      path: "/api/v1/messages",
      body: { to: "+12025559999", fromNumberSid: PN1, body: "scope probe" },
      idempotent: true,
      allowed: 202
    },
    {
      label: "POST /ai-calls",
      scope: "calls:write",
      method: "POST",
      path: "/api/v1/ai-calls",
      body: { to: "+12025559999", fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" },
      idempotent: true,
      allowed: 202
    },
    { label: "GET /messages/{id}", scope: "messages:read", method: "GET", path: `/api/v1/messages/${ids.message}`, allowed: 200 },
    { label: "GET /ai-calls/{id}", scope: "calls:read", method: "GET", path: `/api/v1/ai-calls/${ids.aiCall}`, allowed: 200 },
    // The fixtures are unscheduled, so a key with the scope reaches the cancellation rules: 409.
    {
      label: "POST /messages/{id}/cancel",
      scope: "messages:write",
      method: "POST",
      path: `/api/v1/messages/${ids.message}/cancel`,
      allowed: 409
    },
    {
      label: "POST /ai-calls/{id}/cancel",
      scope: "calls:write",
      method: "POST",
      path: `/api/v1/ai-calls/${ids.aiCall}/cancel`,
      allowed: 409
    }
  ]

  const call = (endpoint: ReturnType<typeof endpoints>[number], key: string | undefined) =>
    server.fetch(endpoint.path, {
      method: endpoint.method,
      ...(key === undefined ? {} : { key }),
      ...(endpoint.idempotent === true ? { headers: { "idempotency-key": idem() } } : {}),
      ...(endpoint.body === undefined ? {} : { body: JSON.stringify(endpoint.body) })
    })

  describe("keys", () => {
    it("answers 401 UNAUTHORIZED on each of the eleven endpoints when no key is sent", async () => {
      const all = endpoints()
      expect(all).toHaveLength(11)
      for (const endpoint of all) {
        const error = await expectError(await call(endpoint, undefined), 401, "UNAUTHORIZED")
        expect(error.code, endpoint.label).toBe("UNAUTHORIZED")
      }
    })

    it("answers 401 UNAUTHORIZED to malformed Authorization headers", async () => {
      const live = demo.keys.live
      const headers = [
        "Bearer",
        "Bearer ",
        "Bearer not-a-key",
        "Basic dXNlcjpwYXNzd29yZA==",
        live, // no scheme
        `Bearer ${live}x`, // one character too many
        `Bearer ${live.slice(0, -1)}`, // truncated
        `Bearer ${live.slice(0, -1)}${live.endsWith("A") ? "B" : "A"}` // checksum broken
      ]
      for (const authorization of headers) {
        const response = await server.fetch("/api/v1/numbers", { headers: { authorization } })
        await expectError(response, 401, "UNAUTHORIZED")
      }
    })

    it("answers 401 UNAUTHORIZED to a well-formed key that the server never issued", async () => {
      for (const mode of ["live", "test"] as const) {
        const response = await server.fetch("/api/v1/numbers", { key: ApiKeys.mintToken(mode) })
        await expectError(response, 401, "UNAUTHORIZED")
      }
      // and the demo key itself is fine, so the 401 was about the key
      expect((await server.fetch("/api/v1/numbers", { key: demo.keys.live })).status).toBe(200)
    })

    it("answers 403 SCOPE_MISSING for each scope missing on each endpoint, and nothing else", async () => {
      const all = endpoints()
      for (const missing of SCOPES) {
        const scopes = SCOPES.filter((s) => s !== missing).join(",")
        const created = await createKey(demo.orgId, `all but ${missing}`, scopes, "test")
        for (const endpoint of all) {
          const response = await call(endpoint, created.key)
          if (endpoint.scope === missing) {
            const error = await expectError(response, 403, "SCOPE_MISSING")
            expect(error.message, `${endpoint.label} without ${missing}`).toContain(missing)
          } else {
            const text = await response.text()
            expect(response.status, `${endpoint.label} without ${missing}: ${text}`).toBe(endpoint.allowed)
          }
        }
      }
    }, CLI_HEAVY)

    it("refuses a revoked key with 401 on the very next request", async () => {
      const created = await createKey(demo.orgId, "to revoke", "all", "live")
      expect((await server.fetch("/api/v1/numbers", { key: created.key })).status).toBe(200)
      await run(["keys", "revoke", created.id])
      await expectError(await server.fetch("/api/v1/numbers", { key: created.key }), 401, "UNAUTHORIZED")
      await expectError(await server.fetch(`/api/v1/messages/${ids.message}`, { key: created.key }), 401, "UNAUTHORIZED")
      // other keys of the organisation are unaffected
      expect((await server.fetch("/api/v1/numbers", { key: demo.keys.live })).status).toBe(200)
    }, CLI_HEAVY)

    it("refuses a key with 401 once its expiry has passed", async () => {
      // A few seconds ahead; if minting the key took longer than that (a loaded machine), try again with more.
      let lead = 4_000
      let expiresAt = Date.now() + lead
      let created = await createKey(demo.orgId, "expiring", "all", "live", ["--expires-at", new Date(expiresAt).toISOString()])
      while (Date.now() > expiresAt - 2_000 && lead < 64_000) {
        lead *= 2
        expiresAt = Date.now() + lead
        created = await createKey(demo.orgId, "expiring", "all", "live", ["--expires-at", new Date(expiresAt).toISOString()])
      }
      // Poll until the key stops working. A 200 proves the server's clock was still before the expiry when the
      // request was sent; a 401 proves it was at or after the expiry by the time the answer arrived.
      let okSeen = 0
      let refusedAt: number | undefined
      const deadline = expiresAt + 20_000 // generous; the loop ends at the first 401
      while (refusedAt === undefined && Date.now() < deadline) {
        const sentAt = Date.now()
        const response = await server.fetch("/api/v1/numbers", { key: created.key })
        if (response.status === 200) {
          await response.body?.cancel()
          expect(sentAt).toBeLessThan(expiresAt)
          okSeen++
          // at most one request a second keeps the key under the default 60 a minute
          await new Promise((resolve) => setTimeout(resolve, 1_000))
        } else {
          await expectError(response, 401, "UNAUTHORIZED")
          refusedAt = Date.now()
        }
      }
      expect(okSeen).toBeGreaterThan(0)
      expect(refusedAt).toBeDefined()
      expect(refusedAt ?? 0).toBeGreaterThanOrEqual(expiresAt)
      // and it stays refused
      await expectError(await server.fetch("/api/v1/bots", { key: created.key }), 401, "UNAUTHORIZED")
    }, CLI_HEAVY)
  })

  describe("number and bot restrictions", () => {
    let restricted: CreatedKey
    beforeAll(async () => {
      restricted = await createKey(demo.orgId, "restricted", "all", "test", ["--numbers", PN1, "--bots", "bot_sales"])
    }, CLI_HEAVY)

    it("lists only the permitted numbers and bots", async () => {
      const numbers = await readJson<Page<NumberItem>>(
        await server.fetch("/api/v1/numbers", { key: restricted.key }),
        200
      )
      expect(numbers.items.map((n) => n.sid)).toEqual([PN1])
      const bots = await readJson<Page<BotItem>>(await server.fetch("/api/v1/bots", { key: restricted.key }), 200)
      expect(bots.items.map((b) => b.id)).toEqual(["bot_sales"])
      // the unrestricted key sees more, so the narrowing is the restriction's doing
      const all = await readJson<Page<NumberItem>>(await server.fetch("/api/v1/numbers", { key: demo.keys.test }), 200)
      expect(all.items.map((n) => n.sid)).toEqual(expect.arrayContaining([PN1, PN2]))
    })

    it("denies sending from another of the organisation's numbers with 403 RESOURCE_DENIED", async () => {
      const denied = await expectError(
        await sendMessage(restricted.key, { to: freshPhone(), fromNumberSid: PN2, body: "hello" }),
        403,
        "RESOURCE_DENIED"
      )
      expect(denied.message).toContain("fromNumberSid")
      const ack = await readJson<CreationAck>(
        await sendMessage(restricted.key, { to: freshPhone(), fromNumberSid: PN1, body: "hello" }),
        202
      )
      expect(ack.test).toBe(true)
    })

    it("answers 400 INVALID_REQUEST naming fromNumberSid for a number the organisation does not have", async () => {
      for (const key of [restricted.key, demo.keys.live]) {
        const error = await expectError(
          await sendMessage(key, { to: freshPhone(), fromNumberSid: "PN99999999999999999999999999999999", body: "x" }),
          400,
          "INVALID_REQUEST"
        )
        expect(error.message).toContain("fromNumberSid")
      }
    })

    it("denies an AI call with a bot outside the restriction with 403 RESOURCE_DENIED", async () => {
      const denied = await expectError(
        await startCall(restricted.key, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_support", mode: "follow_script" }),
        403,
        "RESOURCE_DENIED"
      )
      expect(denied.message).toContain("botId")
      const ack = await readJson<CreationAck>(
        await startCall(restricted.key, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }),
        202
      )
      expect(ack.test).toBe(true)
    })

    it("hides actions on numbers outside the restriction", async () => {
      await expectError(
        await server.fetch(`/api/v1/messages/${ids.messageFromPn2}`, { key: restricted.key }),
        404,
        "NOT_FOUND"
      )
      const own = await readJson<ActionRecord>(
        await server.fetch(`/api/v1/messages/${ids.message}`, { key: restricted.key }),
        200
      )
      expect(own.id).toBe(ids.message)
    })
  })

  describe("test and live keys", () => {
    it("simulates creation with a test key: test_ id, test true, and no CRM action", async () => {
      const to = freshPhone()
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.test, { to, fromNumberSid: PN1, body: "simulated" }),
        202
      )
      expect(ack.id).toMatch(/^test_/)
      expect(ack.test).toBe(true)
      expect(ack.status).toBe("accepted")
      const call = await readJson<CreationAck>(
        await startCall(demo.keys.test, { to, fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }),
        202
      )
      expect(call.id).toMatch(/^test_/)
      expect(call.test).toBe(true)
      // nothing was written: no conversation with that counterpart, for either kind of key
      for (const key of [demo.keys.live, demo.keys.test]) {
        const page = await readJson<Page<ConversationSummary>>(await server.fetch("/api/v1/conversations", { key }), 200)
        expect(page.items.map((c) => c.phone)).not.toContain(to)
      }
    })

    it("creates a real, readable action with a live key", async () => {
      const to = freshPhone()
      const ack = await readJson<CreationAck>(
        await sendMessage(demo.keys.live, { to, fromNumberSid: PN1, body: "for real" }),
        202
      )
      expect(ack.id).toMatch(/^[1-9]\d*$/)
      expect(ack.test).toBe(false)
      const record = await readJson<ActionRecord>(await server.fetch(`/api/v1/messages/${ack.id}`, { key: demo.keys.live }), 200)
      expect(record.to).toBe(to)
    })

    it("cannot read simulated test_ ids (400 INVALID_REQUEST)", async () => {
      const message = await readJson<CreationAck>(
        await sendMessage(demo.keys.test, { to: freshPhone(), fromNumberSid: PN1, body: "simulated" }),
        202
      )
      const call = await readJson<CreationAck>(
        await startCall(demo.keys.test, { to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }),
        202
      )
      for (const key of [demo.keys.test, demo.keys.live]) {
        const m = await expectError(await server.fetch(`/api/v1/messages/${message.id}`, { key }), 400, "INVALID_REQUEST")
        expect(m.message).toContain("id")
        await expectError(await server.fetch(`/api/v1/ai-calls/${call.id}`, { key }), 400, "INVALID_REQUEST")
      }
      await expectError(
        await server.fetch(`/api/v1/messages/${message.id}/cancel`, { key: demo.keys.test, method: "POST" }),
        400,
        "INVALID_REQUEST"
      )
    })

    it("lets a test key read the organisation's real records", async () => {
      const record = await readJson<ActionRecord>(
        await server.fetch(`/api/v1/messages/${ids.message}`, { key: demo.keys.test }),
        200
      )
      expect(record.body).toBe(ids.messageBody)
    })
  })

  describe("another organisation", () => {
    let otherOrg = ""
    let other: CreatedKey
    beforeAll(async () => {
      const created = await server.adminJson<CreatedOrg>(["orgs", "create", "--name", "Other Org"])
      otherOrg = created.id ?? created.orgId ?? ""
      expect(otherOrg).not.toBe("")
      expect(otherOrg).not.toBe(demo.orgId)
      await run(["crm", "connect", otherOrg, "--account", "Olive Other", "--account-id", "crm_user_other"])
      other = await createKey(otherOrg, "other live", "all", "live")
    }, CLI_HEAVY)

    it("answers 404 NOT_FOUND for the demo organisation's ids and never shows their data", async () => {
      expect((await server.fetch("/api/v1/numbers", { key: other.key })).status).toBe(200)
      const requests: ReadonlyArray<[string, RequestInit]> = [
        [`/api/v1/messages/${ids.message}`, {}],
        [`/api/v1/ai-calls/${ids.aiCall}`, {}],
        [`/api/v1/conversations/${encodeURIComponent(ids.conversation)}`, {}],
        [`/api/v1/messages/${ids.message}/cancel`, { method: "POST" }],
        [`/api/v1/ai-calls/${ids.aiCall}/cancel`, { method: "POST" }]
      ]
      for (const [path, init] of requests) {
        const response = await server.fetch(path, { ...init, key: other.key })
        const text = await response.clone().text()
        await expectError(response, 404, "NOT_FOUND")
        expect(text).not.toContain(ids.messageBody)
        expect(text).not.toContain("+14155550100")
      }
      // the demo organisation still has them, unchanged
      const record = await readJson<ActionRecord>(
        await server.fetch(`/api/v1/messages/${ids.message}`, { key: demo.keys.live }),
        200
      )
      expect(record.body).toBe(ids.messageBody)
    })

    it("lists none of the demo organisation's numbers, templates or conversations", async () => {
      const numbers = await readJson<Page<NumberItem>>(await server.fetch("/api/v1/numbers", { key: other.key }), 200)
      expect(numbers.items.map((n) => n.sid)).not.toEqual(expect.arrayContaining([PN1]))
      const templates = await readJson<Page<TemplateItem>>(await server.fetch("/api/v1/templates", { key: other.key }), 200)
      for (const t of demo.templates) expect(templates.items.map((i) => i.id)).not.toContain(t.id)
      const conversations = await readJson<Page<ConversationSummary>>(
        await server.fetch("/api/v1/conversations", { key: other.key }),
        200
      )
      expect(conversations.items).toEqual([])
    })

    it("cannot send from the demo organisation's number (400 naming fromNumberSid)", async () => {
      const error = await expectError(
        await sendMessage(other.key, { to: freshPhone(), fromNumberSid: PN1, body: "not mine" }),
        400,
        "INVALID_REQUEST"
      )
      expect(error.message).toContain("fromNumberSid")
    })

    describe("organisation access state", () => {
      const expectAccess = async () => {
        const body = await readJson<Page<NumberItem>>(await server.fetch("/api/v1/numbers", { key: other.key }), 200)
        expect(Array.isArray(body.items)).toBe(true)
      }
      const expectRefused = async (status: number, code: string) => {
        await expectError(await server.fetch("/api/v1/numbers", { key: other.key }), status, code)
        await expectError(await server.fetch(`/api/v1/messages/${ids.message}`, { key: other.key }), status, code)
      }

      // One condition at a time (the others normal), each cleared in the same CLI call that sets the next, so
      // every error is shown to come from its own condition and to clear with it.
      it("answers SUBSCRIPTION_INACTIVE, SEAT_INACTIVE, PILOT_PENDING, OAUTH_REQUIRED and IDENTITY_CHANGED", async () => {
        const update = (...flags: ReadonlyArray<string>) => server.adminJson<unknown>(["orgs", "update", otherOrg, ...flags])
        await expectAccess()

        await update("--subscription", "inactive")
        await expectRefused(403, "SUBSCRIPTION_INACTIVE")

        await update("--subscription", "active", "--seat", "inactive")
        await expectRefused(403, "SEAT_INACTIVE")

        await update("--seat", "active", "--pilot", "pending")
        await expectRefused(503, "PILOT_PENDING")

        await update("--pilot", "open")
        await expectAccess()

        await run(["crm", "disconnect", otherOrg])
        await expectRefused(403, "OAUTH_REQUIRED")

        await run(["crm", "connect", otherOrg, "--account", "Olive Other", "--account-id", "crm_user_other"])
        await expectAccess()

        await run(["crm", "identity-changed", otherOrg])
        await expectRefused(403, "IDENTITY_CHANGED")

        await run(["crm", "connect", otherOrg, "--account", "Olive Other", "--account-id", "crm_user_other"])
        await expectAccess()
      }, CLI_HEAVY)

      it("answers 403 CRM_PERMISSION_DENIED when the connected account lacks the CRM permission", async () => {
        await run(["crm", "permissions", otherOrg, "--actions", "none", "--actions-write", "off", "--templates", "off"])
        await expectError(await server.fetch("/api/v1/templates", { key: other.key }), 403, "CRM_PERMISSION_DENIED")
        await expectError(await server.fetch("/api/v1/conversations", { key: other.key }), 403, "CRM_PERMISSION_DENIED")
        await expectError(
          await sendMessage(other.key, { to: freshPhone(), fromNumberSid: "PN_ANY", body: "x" }),
          403,
          "CRM_PERMISSION_DENIED"
        )
        await expectAccess() // numbers are Parley's, not the CRM's
        await run([
          "crm",
          "permissions",
          otherOrg,
          "--modules",
          "Leads,Contacts,Vendors,Deals",
          "--actions",
          "all",
          "--actions-write",
          "on",
          "--templates",
          "on"
        ])
        await readJson<Page<TemplateItem>>(await server.fetch("/api/v1/templates", { key: other.key }), 200)
        await readJson<Page<ConversationSummary>>(await server.fetch("/api/v1/conversations", { key: other.key }), 200)
      }, CLI_HEAVY)
    })
  })
})
