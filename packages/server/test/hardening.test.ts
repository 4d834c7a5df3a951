/**
 * Hardening found by an attacker's and a careless client's tour (issue 12),
 * over real HTTP and the real CLI on one server:
 * - bot restrictions narrow reads and cancels of AI calls, not only creation;
 * - a sender number belongs to one organisation;
 * - record names in modules the connected account may not read are hidden;
 * - keys need a connected CRM account and an expiry in the future;
 * - a carrier's retried inbound message is stored once;
 * - secrets are sealed at rest, the data directory and database are private;
 * - a live WhatsApp message outside sending hours is refused, not held;
 * - actions held by sending hours are released when the hours widen.
 */
import { createHash, randomBytes } from "node:crypto"
import { statSync } from "node:fs"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson, readUntil } from "./support/wire.js"
import { createTestDatabase, testStore } from "./support/store.js"
import { CLI_HEAVY, PN1 } from "./support/demo.js"

const WHATSAPP_SID = "PN00000000000000000000000000000003"
const CONTENT_SID = `HX${"a1".repeat(16)}`

interface ActionRecord {
  readonly id: string
  readonly status?: string | null
  readonly name?: string | null
  readonly senderName?: string | null
  readonly record?: { readonly id: string; readonly name: string } | null
  readonly linkedRecords: ReadonlyArray<{ readonly module: string; readonly id: string; readonly name: string | null }>
  readonly linkedSenders?: Record<string, string | null>
}
interface ConversationSummary {
  readonly id: string
  readonly phone: string
  readonly name: string
  readonly linkedRecords: ReadonlyArray<{ readonly module: string; readonly id: string; readonly name: string | null }>
}

let counter = 0
const idem = () => `hardening-${Date.now()}-${++counter}`
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()
const pad = (n: number) => String(n).padStart(2, "0")
/** A one-hour UTC window that opens six hours from now: closed now, whatever the time of day. */
const closedWindow = () => {
  const opens = (new Date().getUTCHours() + 6) % 24
  return `${pad(opens)}:00-${pad((opens + 1) % 24)}:00`
}

describe("hardening", () => {
  let server: TestServer
  let demo: DemoSummary

  const post = (key: string, path: string, payload: Record<string, unknown>) =>
    server.fetch(path, { key, method: "POST", headers: { "idempotency-key": idem() }, body: JSON.stringify(payload) })

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50", PARLEY_INBOUND_UNSIGNED: "accept" } })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  describe("bot restrictions on reads and cancels", () => {
    it("hides another bot's AI calls from a bot-restricted key: read and cancel are 404, the call stays Queued", async () => {
      const restricted = await server.adminJson<{ key: string }>([
        "keys", "create", "--org", demo.orgId, "--name", "support only", "--scopes", "all", "--mode", "live",
        "--bots", "bot_support"
      ])
      const payload = { to: "+14155550123", fromNumberSid: PN1, mode: "follow_script", scheduledFor: inAnHour() }
      const sales = await readJson<{ id: string }>(await post(demo.keys.live, "/api/v1/ai-calls", { ...payload, botId: "bot_sales" }), 202)
      const support = await readJson<{ id: string }>(
        await post(demo.keys.live, "/api/v1/ai-calls", { ...payload, botId: "bot_support" }),
        202
      )

      await expectError(await server.fetch(`/api/v1/ai-calls/${sales.id}`, { key: restricted.key }), 404, "NOT_FOUND")
      await expectError(
        await server.fetch(`/api/v1/ai-calls/${sales.id}/cancel`, { key: restricted.key, method: "POST" }),
        404,
        "NOT_FOUND"
      )
      const untouched = await readJson<ActionRecord>(await server.fetch(`/api/v1/ai-calls/${sales.id}`, { key: demo.keys.live }), 200)
      expect(untouched.status).toBe("Queued")

      // its own bot's call reads and cancels
      expect((await readJson<ActionRecord>(await server.fetch(`/api/v1/ai-calls/${support.id}`, { key: restricted.key }), 200)).id)
        .toBe(support.id)
      const cancelled = await readJson<{ status: string }>(
        await server.fetch(`/api/v1/ai-calls/${support.id}/cancel`, { key: restricted.key, method: "POST" }),
        200
      )
      expect(cancelled.status).toBe("cancelled")

      // texts have no bot: a bot restriction does not hide them
      const text = await readJson<{ id: string }>(
        await post(demo.keys.live, "/api/v1/messages", { to: "+14155550123", fromNumberSid: PN1, body: "hi" }),
        202
      )
      expect((await server.fetch(`/api/v1/messages/${text.id}`, { key: restricted.key })).status).toBe(200)
    }, CLI_HEAVY)
  })

  describe("a sender number belongs to one organisation", () => {
    it("refuses to add another organisation's number, and inbound to it stays with its owner", async () => {
      const other = await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Number Thief"])
      const taken = await server.cli(["numbers", "add", "--org", other.id, "--phone", "+14155550100", "--name", "Mine now"])
      expect(taken.code).not.toBe(0)
      expect(taken.stderr).toContain("already belongs to another organisation")
      const numbers = await server.adminJson<{ items: ReadonlyArray<unknown> }>(["numbers", "list", "--org", other.id])
      expect(numbers.items).toEqual([])
      // the owner can still update its own number by sid
      await server.adminOk(["numbers", "add", "--org", demo.orgId, "--phone", "+14155550100", "--name", "Sales line", "--sid", PN1])
    }, CLI_HEAVY)
  })

  describe("keys", () => {
    it("refuses a key for an organisation with no CRM account connected, saying what to do", async () => {
      const org = await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Not Yet Connected"])
      const refused = await server.cli(["keys", "create", "--org", org.id, "--name", "k", "--scopes", "all", "--mode", "live"])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain(`parley crm connect ${org.id}`)
      const keys = await server.adminJson<{ items: ReadonlyArray<unknown> }>(["keys", "list", "--org", org.id])
      expect(keys.items).toEqual([])
      await server.adminOk(["crm", "connect", org.id, "--account", "Pat"])
      await server.adminOk(["keys", "create", "--org", org.id, "--name", "k", "--scopes", "all", "--mode", "live"])
    }, CLI_HEAVY)

    it("refuses an expiry in the past", async () => {
      const refused = await server.cli([
        "keys", "create", "--org", demo.orgId, "--name", "k", "--scopes", "all", "--mode", "live",
        "--expires-at", "2020-01-01T00:00:00Z"
      ])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("--expires-at")
      expect(refused.stderr).toContain("not in the future")
    }, CLI_HEAVY)
  })

  describe("record names the connected account may not read", () => {
    it("hides Lead names from an account that may read only Contacts, in records and conversations", async () => {
      const sent = await readJson<{ id: string }>(
        await post(demo.keys.live, "/api/v1/messages", {
          to: "+447700900001",
          fromNumberSid: PN1,
          body: "About your order",
          record: { module: "Leads", id: "5001" }
        }),
        202
      )
      const visible = await readJson<ActionRecord>(await server.fetch(`/api/v1/messages/${sent.id}`, { key: demo.keys.live }), 200)
      expect(visible.record?.name).toBe("Ada Lovelace")

      await server.adminOk(["crm", "permissions", demo.orgId, "--modules", "Contacts"])
      try {
        const hidden = await readJson<ActionRecord>(await server.fetch(`/api/v1/messages/${sent.id}`, { key: demo.keys.live }), 200)
        expect(JSON.stringify(hidden)).not.toContain("Ada Lovelace")
        expect(hidden.record).toBeNull()
        expect(hidden.name).toBeNull()
        expect(hidden.linkedRecords).toEqual([{ module: "Leads", id: "5001", name: null }])
        expect(hidden.linkedSenders?.["Lead"]).toBeNull()

        const page = await readJson<{ items: ReadonlyArray<ConversationSummary> }>(
          await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
          200
        )
        const conversation = page.items.find((c) => c.phone === "+447700900001")
        expect(conversation).toBeDefined()
        expect(JSON.stringify(page)).not.toContain("Ada Lovelace")
        expect(conversation?.name).toBe("+447700900001")
        const messages = await readJson<{ items: ReadonlyArray<ActionRecord> }>(
          await server.fetch(`/api/v1/conversations/${encodeURIComponent(conversation?.id ?? "")}`, { key: demo.keys.live }),
          200
        )
        expect(JSON.stringify(messages)).not.toContain("Ada Lovelace")
      } finally {
        await server.adminOk(["crm", "permissions", demo.orgId, "--modules", "Leads,Contacts,Vendors,Deals"])
      }
    }, CLI_HEAVY)
  })

  describe("inbound retries", () => {
    it("stores a carrier's message once however often the carrier delivers it", async () => {
      const from = "+447700900777"
      const deliver = () =>
        fetch(`${server.baseUrl}/carrier/inbound`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ From: from, To: "+14155550100", Body: "Only once", MessageSid: "SMretried0001" })
        })
      for (let i = 0; i < 3; i++) expect((await deliver()).status).toBe(200)
      const page = await readJson<{ items: ReadonlyArray<ConversationSummary> }>(
        await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
        200
      )
      const conversation = page.items.find((c) => c.phone === from)
      expect(conversation).toBeDefined()
      const messages = await readJson<{ items: ReadonlyArray<ActionRecord> }>(
        await server.fetch(`/api/v1/conversations/${encodeURIComponent(conversation?.id ?? "")}`, { key: demo.keys.live }),
        200
      )
      expect(messages.items).toHaveLength(1)
      const events = await server.db.query<{ type: string; payload: string }>(
        "SELECT type, payload FROM events WHERE type = ?",
        ["message.received"]
      )
      expect(events.filter((e) => e.payload.includes(from))).toHaveLength(1)
      // another message from the same sender is another record
      const next = await fetch(`${server.baseUrl}/carrier/inbound`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ From: from, To: "+14155550100", Body: "And again", MessageSid: "SMretried0002" })
      })
      expect(next.status).toBe(200)
      const after = await readJson<{ items: ReadonlyArray<ActionRecord> }>(
        await server.fetch(`/api/v1/conversations/${encodeURIComponent(conversation?.id ?? "")}`, { key: demo.keys.live }),
        200
      )
      expect(after.items).toHaveLength(2)
    })
  })

  describe("secrets at rest", () => {
    it("stores webhook and cursor secrets sealed, never as the secret itself", async () => {
      const added = await server.adminJson<{ id: string; secret: string }>([
        "webhooks", "add", "--org", demo.orgId, "--url", "http://127.0.0.1:9/hook"
      ])
      expect(added.secret).toMatch(/^whsec_/)
      const [row] = await server.db.query<{ secret: string }>("SELECT secret FROM webhooks WHERE id = ?", [added.id])
      expect(row?.secret).toMatch(/^enc:v1:[0-9a-f]{8}:/)
      expect(row?.secret).not.toContain(added.secret.slice("whsec_".length))
      const [cursor] = await server.db.query<{ value: string }>("SELECT value FROM settings WHERE name = ?", ["cursor_secret"])
      expect(cursor?.value).toMatch(/^enc:v1:[0-9a-f]{8}:/)
      // cursors still verify: a second page is reachable through the first page's cursor
      const first = await readJson<{ nextCursor: string | null }>(
        await server.fetch("/api/v1/conversations", { key: demo.keys.live }),
        200
      )
      if (first.nextCursor !== null) {
        expect((await server.fetch(`/api/v1/conversations?cursor=${encodeURIComponent(first.nextCursor)}`, {
          key: demo.keys.live
        })).status).toBe(200)
      }
    }, CLI_HEAVY)

    it.skipIf(testStore !== "sqlite")("keeps the data directory (0700), the database and the key file (0600) private", () => {
      expect(statSync(server.dataDir).mode & 0o777).toBe(0o700)
      expect(statSync(join(server.dataDir, "parley.db")).mode & 0o777).toBe(0o600)
      expect(statSync(join(server.dataDir, "secret.key")).mode & 0o777).toBe(0o600)
    })
  })

  describe("sending hours", () => {
    it("refuses a live WhatsApp message outside sending hours (a test key is still simulated), and SMS waits", async () => {
      await server.adminOk(["orgs", "update", demo.orgId, "--sending-hours", closedWindow(), "--timezone", "UTC"])
      try {
        const whatsApp = {
          to: "+447700900002",
          fromNumberSid: WHATSAPP_SID,
          channel: "WhatsApp",
          body: "Your order shipped",
          whatsAppContentSid: CONTENT_SID
        }
        const refused = await expectError(await post(demo.keys.live, "/api/v1/messages", whatsApp), 403, "OUTSIDE_SENDING_HOURS")
        expect(refused.message).toContain("sending hours")
        expect((await readJson<{ test: boolean }>(await post(demo.keys.test, "/api/v1/messages", whatsApp), 202)).test).toBe(true)

        // an SMS is accepted and held for the window; widening the hours releases it at once
        const held = await readJson<{ id: string }>(
          await post(demo.keys.live, "/api/v1/messages", { to: "+14155550123", fromNumberSid: PN1, body: "held" }),
          202
        )
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        const waiting = await readJson<ActionRecord>(await server.fetch(`/api/v1/messages/${held.id}`, { key: demo.keys.live }), 200)
        expect(waiting.status).toBe("Queued")

        await server.adminOk(["orgs", "update", demo.orgId, "--sending-hours", "always", "--timezone", "UTC"])
        const released = await readUntil(
          () => server.fetch(`/api/v1/messages/${held.id}`, { key: demo.keys.live }).then((r) => r.json() as Promise<ActionRecord>),
          (record) => record.status !== "Queued"
        )
        expect(released.status).not.toBe("Queued")
      } finally {
        await server.adminOk(["orgs", "update", demo.orgId, "--sending-hours", "always", "--timezone", "UTC"])
      }
    }, CLI_HEAVY)
  })

  describe("secret key on Postgres", () => {
    it.skipIf(testStore !== "postgres")("refuses to start replicas without a shared PARLEY_SECRET_KEY, saying why", async () => {
      const db = await createTestDatabase()
      try {
        const { PARLEY_SECRET_KEY: _key, ...withoutKey } = db.env
        const start = TestServer.start({ database: { ...db, env: withoutKey } })
        await expect(start).rejects.toThrow(/PARLEY_SECRET_KEY is required with DATABASE_URL/)
      } finally {
        await db.drop()
      }
    }, CLI_HEAVY)
  })

  describe("secret key rotation", () => {
    const keyId = (base64: string) => createHash("sha256").update(Buffer.from(base64, "base64")).digest("hex").slice(0, 8)

    it("reseals every stored secret under a new key (old ones named as previous), and a wrong key cannot start", async () => {
      const first = randomBytes(32).toString("base64")
      const second = randomBytes(32).toString("base64")
      const received: Array<{ headers: IncomingHttpHeaders; body: string }> = []
      const receiver = createServer((request, response) => {
        let body = ""
        request.on("data", (chunk: Buffer) => (body += chunk.toString()))
        request.on("end", () => {
          received.push({ headers: request.headers, body })
          response.writeHead(204).end()
        })
      })
      await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`
      const before = await TestServer.start({ env: { PARLEY_SECRET_KEY: first, PARLEY_SIM_STEP_MS: "50" } })
      try {
        const owner = await before.demo()
        const hook = await before.adminJson<{ id: string; secret: string }>(["webhooks", "add", "--org", owner.orgId, "--url", url])
        // a secret stored before sealing existed, as an older release wrote it
        const legacy = await before.adminJson<{ id: string; secret: string }>([
          "webhooks", "add", "--org", owner.orgId, "--url", "http://127.0.0.1:9/legacy"
        ])
        await before.db.query("UPDATE webhooks SET secret = ? WHERE id = ?", [legacy.secret, legacy.id])
        const sealedFirst = await before.db.query<{ secret: string }>("SELECT secret FROM webhooks WHERE id = ?", [hook.id])
        expect(sealedFirst[0]?.secret.startsWith(`enc:v1:${keyId(first)}:`)).toBe(true)
        await before.stop()

        const after = await TestServer.start({
          database: before.db,
          env: { PARLEY_SECRET_KEY: second, PARLEY_PREVIOUS_SECRET_KEYS: first, PARLEY_SIM_STEP_MS: "50" }
        })
        try {
          const rows = await after.db.query<{ id: string; secret: string }>("SELECT id, secret FROM webhooks", [])
          for (const row of rows) expect(row.secret.startsWith(`enc:v1:${keyId(second)}:`), row.id).toBe(true)
          const [cursor] = await after.db.query<{ value: string }>("SELECT value FROM settings WHERE name = ?", ["cursor_secret"])
          expect(cursor?.value.startsWith(`enc:v1:${keyId(second)}:`)).toBe(true)

          // deliveries are still signed with the secret shown at creation
          const sent = await after.fetch("/api/v1/messages", {
            key: owner.keys.live,
            method: "POST",
            headers: { "idempotency-key": idem() },
            body: JSON.stringify({ to: "+14155550123", fromNumberSid: PN1, body: "after rotation" })
          })
          expect(sent.status).toBe(202)
          const delivered = await readUntil(async () => received.length, (n) => n > 0)
          expect(delivered).toBeGreaterThan(0)
          const [event] = received
          const headers = Object.fromEntries(
            Object.entries(event?.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v.join(",") : v ?? ""])
          )
          expect(() => new Webhook(hook.secret).verify(event?.body ?? "", headers)).not.toThrow()
        } finally {
          await after.stop()
        }

        // without the key that sealed them, the secrets cannot be opened: a plain refusal to start
        const stranger = TestServer.start({ database: before.db, env: { PARLEY_SECRET_KEY: randomBytes(32).toString("base64") } })
        await expect(stranger).rejects.toThrow(/PARLEY_PREVIOUS_SECRET_KEYS/)
        const malformed = TestServer.start({ database: before.db, env: { PARLEY_SECRET_KEY: "not-a-key" } })
        await expect(malformed).rejects.toThrow(/PARLEY_SECRET_KEY must be 32 random bytes/)
      } finally {
        receiver.close()
        await before.dispose()
      }
    }, CLI_HEAVY)
  })
})
