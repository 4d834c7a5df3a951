/**
 * The admin console's security over plain HTTP, on both stores: `parley admins`, administrators who see
 * only their own organisation (forged requests with another organisation's valid session answer 404),
 * CSRF, the session cookie's attributes, and the slowdown after wrong passwords.
 * The browser scenario is admin-console-browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, consolePost, type ConsoleSession, csrfOf, postSignIn, setPasswordFromLink, signIn } from "./support/console.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const PASSWORD_A = "a long passphrase for A"
const PASSWORD_B = "another passphrase, for B"

describe("admin console security", () => {
  let server: TestServer
  let demo: DemoSummary
  let orgB: string
  let keyOfA: { readonly id: string; readonly key: string }
  let webhookOfA: string
  let adaSession: ConsoleSession | undefined
  /** Ada's session, signed in once for the tests that only use one (a sign-in is a scrypt hash on the server). */
  const ada = async () => (adaSession ??= await signIn(server.baseUrl, "ada@a.example", PASSWORD_A))

  beforeAll(async () => {
    // The public URL is https: the session cookie must then be Secure.
    server = await TestServer.start({ env: { PARLEY_PUBLIC_URL: "https://console.example.test" } })
    demo = await server.demo()
    orgB = (await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Other org"])).id
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "ada@a.example", "--password-stdin"], {
      input: `${PASSWORD_A}\n`
    })
    expect(created.code, created.stderr).toBe(0)
    const invited = await server.adminJson<{ email: string; link: string }>(["admins", "create", orgB, "--email", "Bob@B.example"])
    expect(invited.email).toBe("bob@b.example")
    expect(invited.link).toMatch(/^https:\/\/console\.example\.test\/admin\/set-password\?token=\w+$/)
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD_B)
    // A link works once.
    await expect(setPasswordFromLink(server.baseUrl, invited.link, "someone else's password")).rejects.toThrow("404")
    keyOfA = await server.adminJson(["keys", "create", "--org", demo.orgId, "--name", "A's", "--scopes", "all", "--mode", "live"])
    webhookOfA = (await server.adminJson<{ id: string }>([
      "webhooks", "add", "--org", demo.orgId, "--url", "http://127.0.0.1:9/none"
    ])).id
  }, 180_000) // a real server and a real CLI process on a shared 2-core machine

  afterAll(async () => {
    await server?.dispose()
  })

  it("admins: a short password is refused, list shows who has set one, remove ends the account", async () => {
    const short = await server.cli(["admins", "create", demo.orgId, "--email", "c@a.example", "--password-stdin"], {
      input: "too short\n"
    })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain("at least 12 characters")
    const twice = await server.cli(["admins", "create", orgB, "--email", "ADA@a.example", "--password-stdin"], {
      input: `${PASSWORD_A}\n`
    })
    expect(twice.code).toBe(1)
    expect(twice.stderr).toContain("already an administrator")
    const temp = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "temp@a.example"])
    const listed = await server.adminJson<{ items: Array<{ email: string; passwordSet: boolean }> }>(["admins", "list", demo.orgId])
    expect(listed.items).toEqual([
      expect.objectContaining({ email: "ada@a.example", passwordSet: true }),
      expect.objectContaining({ email: "temp@a.example", passwordSet: false })
    ])
    await setPasswordFromLink(server.baseUrl, temp.link, "temporary passphrase")
    const session = await signIn(server.baseUrl, "temp@a.example", "temporary passphrase")
    expect(await server.adminJson(["admins", "remove", demo.orgId, "--email", "temp@a.example"])).toEqual({
      email: "temp@a.example",
      removed: true
    })
    // Removing an administrator ends their sessions.
    expect((await consoleGet(server.baseUrl, session, "/admin/keys")).status).toBe(303)
    // Another organisation's administrator is not removable from here.
    const foreign = await server.admin(["admins", "remove", demo.orgId, "--email", "bob@b.example"])
    expect(foreign.code).toBe(1)
  })

  it("Developer access shows when each key was last used: never until its first request, then that request's time, written to the store", async () => {
    const fresh = await server.adminJson<{ id: string; key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", "Usage probe", "--scopes", "resources:read", "--mode", "live"
    ])
    const session = await ada()
    const row = async () => {
      const page = await (await consoleGet(server.baseUrl, session, "/admin/keys")).text()
      // Cells carry their column's name (data-label, for narrow screens); a time its ISO instant in `datetime`.
      const cell = /<tr>\s*<td[^>]*><a [^>]*>Usage probe<\/a><\/td>(?:<td[^>]*>.*?<\/td>\s*){6}<td[^>]*>(.*?)<\/td>/s.exec(page)?.[1]
      return cell === undefined ? undefined : /<time datetime="([^"]+)"/.exec(cell)?.[1] ?? cell
    }
    expect(await row()).toBe("never")
    const before = new Date().toISOString()
    expect((await fetch(`${server.baseUrl}/api/v1/numbers`, { headers: { authorization: `Bearer ${fresh.key}` } })).status).toBe(200)
    const shown = await row()
    expect(shown !== undefined && shown >= before.slice(0, 19)).toBe(true)
    // Noted in memory on the request path, written beside it (KeyUsage.FLUSH_EVERY).
    const stored = await until(async () => {
      const rows = await server.db.query<{ last_used_at: string }>("SELECT last_used_at FROM api_key_usage WHERE key_id = ?", [fresh.id])
      return rows.length === 0 ? undefined : rows
    }, { timeoutMs: 30_000, intervalMs: 100, what: "the key's use written to the store" })
    expect(stored[0]?.last_used_at).toBe(shown)
  }, 60_000)

  it("a session cookie is __Host- prefixed, HttpOnly, SameSite=Lax, Secure, and pages are neither framed nor cached", async () => {
    const response = await postSignIn(server.baseUrl, "ada@a.example", PASSWORD_A)
    expect(response.status).toBe(303)
    const [cookie = "", device = ""] = response.headers.getSetCookie()
    expect(cookie).toMatch(/^__Host-parley_admin=\w+; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/)
    expect(device).toMatch(/^__Host-parley_device=[\w.-]+; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/)
    const page = await fetch(`${server.baseUrl}/admin/keys`, { headers: { cookie: cookie.split(";")[0] ?? "" } })
    expect(page.status).toBe(200)
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
    expect(page.headers.get("content-security-policy")).not.toContain("unsafe-inline")
    expect(page.headers.get("x-frame-options")).toBe("DENY")
    expect(page.headers.get("cache-control")).toBe("no-store")
    expect(await page.text()).not.toMatch(/<script(?![^>]*\bsrc=)/)
    const anonymous = await fetch(`${server.baseUrl}/admin/keys`, { redirect: "manual" })
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get("location")).toBe("/admin/sign-in")
  })

  it("another organisation's administrator gets 404 for everything of A, and A's things stay as they were", async () => {
    const b = await signIn(server.baseUrl, "bob@b.example", PASSWORD_B)
    const forged = await Promise.all([
      consolePost(server.baseUrl, b, "/admin/keys/revoke", { csrf: b.csrf, id: keyOfA.id }),
      consoleGet(server.baseUrl, b, `/admin/keys/revoke?id=${keyOfA.id}`),
      consolePost(server.baseUrl, b, "/admin/events/delete", { csrf: b.csrf, id: webhookOfA }),
      consolePost(server.baseUrl, b, "/admin/events/rotate", { csrf: b.csrf, id: webhookOfA }),
      consolePost(server.baseUrl, b, "/admin/events/disable", { csrf: b.csrf, id: webhookOfA }),
      consoleGet(server.baseUrl, b, `/admin/events/delete?id=${webhookOfA}`)
    ])
    expect(forged.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404])
    // A's message, read with B's session.
    const sent = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: keyOfA.key,
      headers: { "idempotency-key": "console-cross-org" },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "for A only" })
    })
    expect(sent.status).toBe(202)
    const { id } = (await sent.json()) as { id: string }
    expect((await consoleGet(server.baseUrl, b, `/admin/activity/record?kind=message&id=${id}`)).status).toBe(404)
    const listing = await (await consoleGet(server.baseUrl, b, "/admin/activity")).text()
    expect(listing).not.toContain("for A only")
    expect(listing).not.toContain(`id=${id}"`)
    const keysOfB = await (await consoleGet(server.baseUrl, b, "/admin/keys")).text()
    expect(keysOfB).not.toContain("A&#39;s")
    // A's key still works and A's endpoint is still enabled.
    expect((await server.fetch("/api/v1/numbers", { key: keyOfA.key })).status).toBe(200)
    const endpoints = await server.adminJson<{ items: Array<{ id: string; status: string }> }>(["webhooks", "list", "--org", demo.orgId])
    expect(endpoints.items.find((w) => w.id === webhookOfA)?.status).toBe("enabled")
  })

  it("a conversation's page says how many media a message carries (a media-only one has no text)", async () => {
    const a = await ada()
    await server.adminJson([
      "inbound", "--org", demo.orgId, "--from", "+447700900077", "--to", demo.numbers[0]?.phoneNumber ?? "", "--body", "",
      "--media-url", "https://example.com/1.jpg", "--media-url", "https://example.com/2.jpg"
    ])
    const page = (await (await server.fetch("/api/v1/conversations", { key: keyOfA.key })).json()) as {
      items: ReadonlyArray<{ id: string; phone: string }>
    }
    const conversation = page.items.find((c) => c.phone === "+447700900077")
    const shown = await (await consoleGet(server.baseUrl, a, `/admin/activity/conversation?id=${encodeURIComponent(conversation?.id ?? "")}`)).text()
    expect(shown.replace(/ data-label="[^"]*"/g, "")).toContain("<td>Inbound</td><td>Received</td><td> [2 media]</td>")
  })

  it("a state-changing request without the session's CSRF token is refused (403) and changes nothing", async () => {
    const a = await ada()
    const key = await server.adminJson<{ id: string; key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", "csrf target", "--scopes", "resources:read", "--mode", "live"
    ])
    const missing = await consolePost(server.baseUrl, a, "/admin/keys/revoke", { id: key.id })
    const wrong = await consolePost(server.baseUrl, a, "/admin/keys/revoke", { id: key.id, csrf: "x".repeat(43) })
    const crossSite = await fetch(`${server.baseUrl}/admin/keys/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: a.cookie, origin: "https://evil.example" },
      body: new URLSearchParams({ id: key.id, csrf: a.csrf }).toString(),
      redirect: "manual"
    })
    expect([missing.status, wrong.status, crossSite.status]).toEqual([403, 403, 403])
    expect((await server.fetch("/api/v1/numbers", { key: key.key })).status).toBe(200)
    // With the token it goes through: the refusals above were about the token.
    const done = await consolePost(server.baseUrl, a, "/admin/keys/revoke", { id: key.id, csrf: a.csrf })
    expect(done.status).toBe(303)
    expect((await server.fetch("/api/v1/numbers", { key: key.key })).status).toBe(401)
  })

  it("signing out ends the session on the server", async () => {
    const a = await signIn(server.baseUrl, "ada@a.example", PASSWORD_A)
    const out = await consolePost(server.baseUrl, a, "/admin/sign-out", { csrf: a.csrf })
    expect(out.status).toBe(303)
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0")
    // The old cookie, replayed, no longer opens anything.
    const replayed = await consoleGet(server.baseUrl, a, "/admin/keys")
    expect(replayed.status).toBe(303)
    expect(replayed.headers.get("location")).toBe("/admin/sign-in")
  })

  it("after 5 wrong passwords an email must wait, even with the right password; the wait is said next to the field", async () => {
    const invited = await server.cli(["admins", "create", orgB, "--email", "slow-b@b.example", "--password-stdin"], {
      input: "the right password here\n"
    })
    expect(invited.code, invited.stderr).toBe(0)
    const attempts: Array<number> = []
    for (let i = 0; i < 5; i++) attempts.push((await postSignIn(server.baseUrl, "slow-b@b.example", `wrong ${i} password`)).status)
    expect(attempts).toEqual([401, 401, 401, 401, 401])
    // An unknown email is answered exactly as a wrong password: the page does not tell who has an account.
    const unknown = await postSignIn(server.baseUrl, "nobody@b.example", "the right password here")
    expect(unknown.status).toBe(401)
    expect(await unknown.text()).toContain("The email or the password is wrong.")
    const held = await postSignIn(server.baseUrl, "slow-b@b.example", "the right password here")
    expect(held.status).toBe(429)
    const text = await held.text()
    expect(text).toMatch(/try again in \d+ seconds/)
    expect(text).toContain("id=\"field-password-error\"")
    // Another email from the same address is not held yet (its limit is 20 failures).
    expect((await postSignIn(server.baseUrl, "ada@a.example", PASSWORD_A)).status).toBe(303)
    expect(csrfOf(text)).toBe("")
  })
})
