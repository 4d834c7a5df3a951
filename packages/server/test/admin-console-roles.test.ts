/**
 * Roles and the audit log over HTTP, on both stores (issue 33, items 5 and 6): `parley admins --role`, a
 * viewer refused every change the console has (403, the console's own page, nothing changed), owners alone
 * managing administrators, the organisation always keeping an owner; the audit log of console and CLI
 * changes, sign-ins and failures, with no secret in it, paged by `parley audit`, and append-only in the
 * database. Migration 0042 makes administrators from before roles owners. The browser scenario is
 * admin-console-roles-browser.test.ts.
 */
import { readFileSync } from "node:fs"
import { ConfigProvider, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.js"
import { DatabaseLive } from "../src/store/Database.js"
import { migrations } from "../src/store/migrations.js"
import { addAdmin, consoleGet, consolePost, postSignIn, type ConsoleSession, setPasswordFromLink, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"

const PASSWORD = "a long passphrase for roles"
const AUTH_TOKEN = "secret-auth-token-0123456789abcdef"

interface AuditItem {
  readonly at: string
  readonly actor: string
  readonly kind: string
  readonly subject: string | null
  readonly detail: string | null
  readonly address: string | null
}

/** Every form the console posts to (the route table's `action` and `ownerAction` lines): a viewer may post none. */
const CHANGE_ROUTES = [
  ...readFileSync(new URL("../src/admin/ConsoleRoutes.ts", import.meta.url), "utf8").matchAll(/(?:action|ownerAction)\("(\/admin\/[^"]+)"/g)
].map((m) => m[1] ?? "")

describe("console roles and audit log", () => {
  let db: TestDatabase
  let server: TestServer
  let demo: DemoSummary
  const sessions: Record<string, ConsoleSession> = {}

  const audit = (args: ReadonlyArray<string> = []) =>
    server.adminJson<{ items: ReadonlyArray<AuditItem>; next: string | null }>(["audit", "--org", demo.orgId, ...args])

  beforeAll(async () => {
    db = await createTestDatabase()
    server = await TestServer.start({ database: db })
    demo = await server.demo()
    // `parley admins create` in the test process (the real process's --password-stdin: admin-console.test.ts).
    await addAdmin(server, demo.orgId, "olga@a.example", PASSWORD)
    await addAdmin(server, demo.orgId, "adam@a.example", PASSWORD)
    await addAdmin(server, demo.orgId, "vera@a.example", PASSWORD, "viewer")
    for (const email of ["olga@a.example", "adam@a.example", "vera@a.example"]) {
      sessions[email] = await signIn(server.baseUrl, email, PASSWORD)
    }
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
    await db?.drop()
  })

  it("admins create: the first is an owner, later ones admins unless --role says; list shows roles; set-role keeps an owner", async () => {
    const listed = await server.adminJson<{ items: ReadonlyArray<{ email: string; role: string }> }>(["admins", "list", demo.orgId])
    expect(listed.items.map((a) => [a.email, a.role])).toEqual([
      ["adam@a.example", "admin"],
      ["olga@a.example", "owner"],
      ["vera@a.example", "viewer"]
    ])
    const bad = await server.cli(["admins", "create", demo.orgId, "--email", "x@a.example", "--role", "root"])
    expect(bad.code).not.toBe(0)
    const last = await server.cli(["admins", "set-role", demo.orgId, "--email", "olga@a.example", "--role", "admin"])
    expect(last.code).toBe(1)
    expect(last.stderr).toContain("last owner")
    const missing = await server.cli(["admins", "set-role", demo.orgId, "--email", "nobody@a.example", "--role", "admin"])
    expect(missing.code).toBe(1)
  })

  it("a viewer reads every page but every change is refused with the console's 403 page, and nothing changes", async () => {
    const viewer = sessions["vera@a.example"]!
    for (const path of ["/admin/keys", "/admin/crm", "/admin/providers", "/admin/rules", "/admin/events", "/admin/opt-outs", "/admin/activity", "/admin/audit", "/admin/admins"]) {
      const page = await consoleGet(server.baseUrl, viewer, path)
      expect(page.status, path).toBe(200)
    }
    expect(CHANGE_ROUTES.length).toBeGreaterThanOrEqual(19)
    const before = await audit()
    const keysBefore = await server.adminJson<{ items: ReadonlyArray<unknown> }>(["keys", "list", "--org", demo.orgId])
    for (const path of CHANGE_ROUTES) {
      const answer = await consolePost(server.baseUrl, viewer, path, {
        csrf: viewer.csrf,
        name: "viewer's key",
        scopes: "messages:read",
        mode: "live",
        account: "Viewer CRM",
        url: "https://hooks.example.com/x",
        phone: "+14155550199",
        email: "new@a.example",
        role: "owner"
      })
      expect(answer.status, path).toBe(403)
      expect(answer.headers.get("content-type"), path).toContain("text/html")
      expect(await answer.text(), path).toContain("does not allow")
    }
    const keysAfter = await server.adminJson<{ items: ReadonlyArray<unknown> }>(["keys", "list", "--org", demo.orgId])
    expect(keysAfter.items.length).toBe(keysBefore.items.length)
    expect((await audit()).items).toEqual(before.items)
    // Sign-out is not a change: a viewer may end their own session.
    const out = await consolePost(server.baseUrl, viewer, "/admin/sign-out", { csrf: viewer.csrf })
    expect(out.status).toBe(303)
  })

  it("only an owner adds administrators, changes roles and removes them; the last owner stays", async () => {
    const admin = sessions["adam@a.example"]!
    const owner = sessions["olga@a.example"]!
    const refused = await consolePost(server.baseUrl, admin, "/admin/admins/role", { csrf: admin.csrf, email: "adam@a.example", role: "owner" })
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain("managing administrators")
    // An admin still changes settings.
    const connected = await consolePost(server.baseUrl, admin, "/admin/crm/connect", { csrf: admin.csrf, account: "Adam's CRM" })
    expect(connected.status).toBe(303)

    const added = await consolePost(server.baseUrl, owner, "/admin/admins/add", { csrf: owner.csrf, email: "Nina@A.example", role: "viewer" })
    expect(added.status).toBe(200)
    const link = /(http[^<"]+set-password\?token=\w+)/.exec(await added.text())?.[1] ?? ""
    expect(link).not.toBe("")
    await setPasswordFromLink(server.baseUrl, link, PASSWORD)
    const promoted = await consolePost(server.baseUrl, owner, "/admin/admins/role", { csrf: owner.csrf, email: "nina@a.example", role: "admin" })
    expect(promoted.status).toBe(303)
    const demoteSelf = await consolePost(server.baseUrl, owner, "/admin/admins/role", { csrf: owner.csrf, email: "olga@a.example", role: "viewer" })
    expect(demoteSelf.status).toBe(409)
    const removeSelf = await consolePost(server.baseUrl, owner, "/admin/admins/remove", { csrf: owner.csrf, email: "olga@a.example" })
    expect(removeSelf.status).toBe(409)
    const removed = await consolePost(server.baseUrl, owner, "/admin/admins/remove", { csrf: owner.csrf, email: "nina@a.example" })
    expect(removed.status).toBe(303)
    const listed = await server.adminJson<{ items: ReadonlyArray<{ email: string; role: string }> }>(["admins", "list", demo.orgId])
    expect(listed.items.map((a) => a.email)).not.toContain("nina@a.example")
  })

  it("the audit log records sign-ins, failures, console and CLI changes, from where, and never a secret", async () => {
    const wrong = await postSignIn(server.baseUrl, "olga@a.example", "not the password at all")
    expect(wrong.status).toBe(401)
    const owner = sessions["olga@a.example"]!
    const created = await consolePost(server.baseUrl, owner, "/admin/keys/new", {
      csrf: owner.csrf,
      name: "audited key",
      scopes: "messages:read",
      mode: "live"
    })
    // Answered with a redirect to the page that shows the secret once (POST-redirect-GET).
    expect(created.status).toBe(303)
    const shown = await consoleGet(server.baseUrl, owner, created.headers.get("location") ?? "")
    const token = /(parley_live_\w+)/.exec(await shown.text())?.[1] ?? ""
    expect(token).not.toBe("")
    const provider = await server.cli(
      ["providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", `AC${"1".repeat(32)}`, "--auth-token-stdin"],
      { input: `${AUTH_TOKEN}\n` }
    )
    expect(provider.code, provider.stderr).toBe(0)
    const hook = await server.adminJson<{ id: string; secret: string }>(["webhooks", "add", "--org", demo.orgId, "--url", "http://127.0.0.1:9/a"])

    const { items } = await audit(["--limit", "1000"])
    const kinds = items.map((e) => `${e.actor} ${e.kind} ${e.subject ?? ""}`)
    expect(kinds).toEqual(expect.arrayContaining([
      "olga@a.example admin.signed-in ",
      "olga@a.example admin.sign-in-failed ",
      "vera@a.example admin.signed-out ",
      "cli admin.added vera@a.example",
      "adam@a.example crm.connected Adam's CRM",
      "olga@a.example admin.added nina@a.example",
      "olga@a.example admin.role-changed nina@a.example",
      "olga@a.example admin.removed nina@a.example",
      "olga@a.example key.created audited key",
      "cli provider.set twilio",
      "cli webhook.added http://127.0.0.1:9/a"
    ]))
    // Newest first; console entries say from where, CLI entries do not.
    expect(items[0]?.kind).toBe("webhook.added")
    expect(items.find((e) => e.kind === "key.created")?.address).toBe("127.0.0.1")
    expect(items.find((e) => e.kind === "key.created")?.detail).toContain("scopes=messages:read")
    expect(items.find((e) => e.kind === "provider.set")?.address).toBeNull()
    const everything = JSON.stringify(items)
    for (const secret of [token, AUTH_TOKEN, hook.secret, PASSWORD, "not the password at all", owner.csrf]) {
      expect(everything).not.toContain(secret)
    }
    // A wrong password for an email nobody has is in no organisation's log.
    await postSignIn(server.baseUrl, "ghost@a.example", "whatever it is, it is wrong")
    expect(JSON.stringify((await audit()).items)).not.toContain("ghost@a.example")
  })

  it("parley audit pages with a cursor and filters by actor and kind", async () => {
    const first = await audit(["--limit", "3"])
    expect(first.items.length).toBe(3)
    expect(first.next).not.toBeNull()
    const second = await audit(["--limit", "3", "--after", first.next ?? ""])
    expect(second.items.length).toBeGreaterThan(0)
    expect((second.items[0]?.at ?? "") <= (first.items[2]?.at ?? "")).toBe(true)
    expect(second.items).not.toContainEqual(first.items[2])
    const all = await audit(["--limit", "1000"])
    expect([...first.items, ...second.items]).toEqual(all.items.slice(0, first.items.length + second.items.length))
    const byActor = await audit(["--actor", "cli"])
    expect(byActor.items.length).toBeGreaterThan(0)
    expect(byActor.items.every((e) => e.actor === "cli")).toBe(true)
    const byKind = await audit(["--kind", "admin.signed-in"])
    expect(byKind.items.length).toBeGreaterThanOrEqual(3)
    expect(byKind.items.every((e) => e.kind === "admin.signed-in")).toBe(true)
    const human = await server.cli(["audit", "--org", demo.orgId, "--limit", "2"])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain("More: parley audit")
    const page = await consoleGet(server.baseUrl, sessions["olga@a.example"]!, "/admin/audit?actor=cli")
    const text = (await page.text()).replace(/ data-label="[^"]*"/g, "")
    expect(text).toContain("Webhook endpoint added")
    expect(text).not.toContain("<td>Signed in</td>")
  })

  it("the audit log is append-only in the database: an entry cannot be changed, nor deleted within a year", async () => {
    await expect(db.query("UPDATE audit_log SET actor = ? WHERE kind = ?", ["someone else", "key.created"])).rejects.toThrow(/append-only/)
    await expect(db.query("DELETE FROM audit_log WHERE kind = ?", ["key.created"])).rejects.toThrow(/append-only/)
    const kept = await db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM audit_log WHERE kind = ?", ["key.created"])
    expect(Number(kept[0]?.n)).toBe(1)
  })

  it("migration 0042 makes every administrator from before roles an owner", async () => {
    await server.stop()
    await db.query("ALTER TABLE admins DROP COLUMN role")
    const config = ConfigProvider.fromMap(new Map([["PARLEY_DATA_DIR", db.dataDir], ...Object.entries(db.env)]))
    const runtime = ManagedRuntime.make(DatabaseLive.pipe(Layer.provide(ServerConfig.layer), Layer.provide(Layer.setConfigProvider(config))))
    try {
      await runtime.runPromise(migrations["0042_admin_roles"])
    } finally {
      await runtime.dispose()
    }
    const roles = await db.query<{ role: string }>("SELECT role FROM admins WHERE org_id = ?", [demo.orgId])
    expect(roles.length).toBe(3)
    expect(roles.every((r) => r.role === "owner")).toBe(true)
  })
})
