/**
 * Two-factor sign-in over HTTP, on both stores (issue 33, item 4): set up with a code computed from the
 * secret the page shows (support/totp.ts, not the server's code); the TOTP secret sealed and the recovery
 * codes hashed at rest; after the right password only a sign-in step, which every console page and form
 * refuses; a code used once (a replay refused), a recovery code used once; wrong codes slowed down as wrong
 * passwords are (429 with Retry-After); the owner's policy (admins and viewers refused; the owner must have
 * it first; administrators without it signed out and made to set it up); changing one's password;
 * `parley admins reset-2fa` and `require-2fa`; every event in the audit log and no secret in it. The
 * browser scenario is admin-console-two-factor-browser.test.ts.
 */
import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addAdmin, consoleGet, consolePost, type ConsoleSession, csrfOf, postSignIn, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"
import { Authenticator } from "./support/totp.js"

const PASSWORD = "a long passphrase for two-factor"
const FORM = { "content-type": "application/x-www-form-urlencoded" }

interface AuditItem {
  readonly actor: string
  readonly kind: string
  readonly subject: string | null
  readonly detail: string | null
}

const ROUTES = readFileSync(new URL("../src/admin/ConsoleRoutes.ts", import.meta.url), "utf8")
/** Every page of a signed-in administrator, and every form (the route table's lines). */
const SIGNED_IN_PAGES = [...ROUTES.matchAll(/page_\("(\/admin\/[^"]+)"/g), ...ROUTES.matchAll(/get\("(\/admin\/[^"]+)", signedIn\(/g)]
  .map((m) => m[1] ?? "")
const FORMS = [...ROUTES.matchAll(/(?:action|ownerAction|ownAction)\("(\/admin\/[^"]+)"/g), ...ROUTES.matchAll(/post\("(\/admin\/sign-out)"/g)]
  .map((m) => m[1] ?? "")

const cookieOf = (response: Response, name: string): string | undefined =>
  response.headers.getSetCookie().map((c) => c.split(";")[0] ?? "").find((c) => c.startsWith(`${name}=`) && c.length > name.length + 1)

const secretOf = (html: string) => /id="totp-secret">([A-Z2-7 ]+)</.exec(html)?.[1]?.replace(/ /g, "") ?? ""
const recoveryCodesOf = (html: string) => [...html.matchAll(/<li><code>([a-z2-7-]+)<\/code><\/li>/g)].map((m) => m[1] ?? "")

describe("two-factor sign-in", { timeout: 240_000 }, () => {
  let db: TestDatabase
  let server: TestServer
  let demo: DemoSummary
  const apps: Record<string, Authenticator> = {}
  const shown: Array<string> = []

  const audit = async (kind?: string) =>
    (await server.adminJson<{ items: ReadonlyArray<AuditItem> }>([
      "audit",
      "--org",
      demo.orgId,
      "--limit",
      "1000",
      ...(kind === undefined ? [] : ["--kind", kind])
    ])).items

  /** The right password: the answer, and the sign-in step's cookie when there is one. */
  const password = async (email: string, pass = PASSWORD) => {
    const answer = await postSignIn(server.baseUrl, email, pass)
    return { answer, step: cookieOf(answer, "__Host-parley_step"), session: cookieOf(answer, "__Host-parley_admin") }
  }

  const postCode = (step: string, code: string, path = "/admin/sign-in/code") =>
    fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: { ...FORM, cookie: step },
      body: new URLSearchParams({ code }).toString(),
      redirect: "manual"
    })

  const sessionFrom = async (answer: Response): Promise<ConsoleSession> => {
    const cookie = cookieOf(answer, "__Host-parley_admin") ?? ""
    expect(cookie).not.toBe("")
    const page = await fetch(`${server.baseUrl}/admin/security`, { headers: { cookie } })
    return { cookie, csrf: csrfOf(await page.text()) }
  }

  /** Sets two-factor up on the Security page; returns the recovery codes shown. */
  const enrol = async (email: string, session: ConsoleSession) => {
    const page = await (await consoleGet(server.baseUrl, session, "/admin/security/enrol")).text()
    const secret = secretOf(page)
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(page).toContain("<svg role=\"img\" aria-label=\"QR code")
    shown.push(secret)
    apps[email] = new Authenticator(secret)
    const done = await consolePost(server.baseUrl, session, "/admin/security/enrol", { csrf: session.csrf, code: await apps[email]!.nextCode() })
    expect(done.status).toBe(200)
    const codes = recoveryCodesOf(await done.text())
    expect(codes).toHaveLength(10)
    shown.push(...codes)
    return codes
  }

  beforeAll(async () => {
    db = await createTestDatabase()
    server = await TestServer.start({ database: db })
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "olga@t.example", PASSWORD, "owner")
    await addAdmin(server, demo.orgId, "adam@t.example", PASSWORD, "admin")
    await addAdmin(server, demo.orgId, "vera@t.example", PASSWORD, "viewer")
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
    await db?.drop()
  })

  let olgaCodes: ReadonlyArray<string> = []
  let veraCodes: ReadonlyArray<string> = []

  it("only an owner sets the policy, and only once two-factor is on for them", async () => {
    const olga = await signIn(server.baseUrl, "olga@t.example", PASSWORD)
    const adam = await signIn(server.baseUrl, "adam@t.example", PASSWORD)
    const vera = await signIn(server.baseUrl, "vera@t.example", PASSWORD)
    for (const [session, status] of [[adam, 403], [vera, 403], [olga, 409]] as const) {
      const csrf = csrfOf(await (await consoleGet(server.baseUrl, session, "/admin/security")).text())
      const refused = await consolePost(server.baseUrl, session, "/admin/security/policy", { csrf, require: "on" })
      expect(refused.status).toBe(status)
      expect(refused.headers.get("content-type")).toContain("text/html")
    }
    const olgaPage = await (await consoleGet(server.baseUrl, olga, "/admin/security")).text()
    expect(olgaPage).toContain("Two-factor sign-in is <strong>optional</strong>")
    expect(await audit("admin.two-factor-policy-changed")).toEqual([])
  })

  it("set-up: a wrong code is refused; the right one turns it on, the secret sealed and the codes hashed at rest", async () => {
    const olga = await signIn(server.baseUrl, "olga@t.example", PASSWORD)
    const wrong = await consolePost(server.baseUrl, olga, "/admin/security/enrol", { csrf: olga.csrf, code: "000000" })
    expect(wrong.status).toBe(400)
    olgaCodes = await enrol("olga@t.example", olga)
    const row = (await db.query<{ totp_secret: string | null; totp_pending_secret: string | null }>(
      "SELECT totp_secret, totp_pending_secret FROM admins WHERE email = ?",
      ["olga@t.example"]
    ))[0]
    expect(row?.totp_secret).toMatch(/^enc:v1:/)
    expect(row?.totp_secret).not.toContain(apps["olga@t.example"]!.secret)
    expect(row?.totp_pending_secret).toBeNull()
    const hashes = await db.query<{ code_hash: string }>(
      "SELECT code_hash FROM admin_recovery_codes WHERE admin_id = (SELECT id FROM admins WHERE email = ?)",
      ["olga@t.example"]
    )
    expect(hashes).toHaveLength(10)
    for (const code of olgaCodes) {
      expect(hashes.map((h) => h.code_hash).join(" ")).not.toContain(code)
      expect(hashes.map((h) => h.code_hash).join(" ")).not.toContain(code.replace(/-/g, ""))
    }
    // On already: another app cannot be swapped in (a stolen session would) without turning it off first.
    const swap = await consolePost(server.baseUrl, olga, "/admin/security/enrol", { csrf: olga.csrf, code: "123456" })
    expect(swap.status).toBe(409)
    const [after] = await db.query<{ s: string }>("SELECT totp_secret AS s FROM admins WHERE email = ?", ["olga@t.example"])
    expect(after?.s).toBe(row?.totp_secret)
    const page = await (await consoleGet(server.baseUrl, olga, "/admin/security")).text()
    expect(page).toContain("Recovery codes left: 10 of 10")
    expect(page).not.toContain(apps["olga@t.example"]!.secret)
  })

  it("after the right password only a sign-in step: every console page and form refuses it", async () => {
    const { answer, step, session } = await password("olga@t.example")
    expect(answer.status).toBe(303)
    expect(answer.headers.get("location")).toBe("/admin/sign-in/code")
    expect(session).toBeUndefined()
    expect(step).toBeDefined()
    const token = step!.split("=")[1] ?? ""
    // The step's cookie, and its token offered as a session cookie too.
    const cookie = `${step}; __Host-parley_admin=${token}`
    expect(SIGNED_IN_PAGES.length).toBeGreaterThanOrEqual(20)
    expect(FORMS.length).toBeGreaterThanOrEqual(25)
    expect(SIGNED_IN_PAGES).toContain("/admin/security")
    for (const path of SIGNED_IN_PAGES) {
      const got = await fetch(`${server.baseUrl}${path}`, { headers: { cookie }, redirect: "manual" })
      expect([path, got.status, got.headers.get("location")]).toEqual([path, 303, "/admin/sign-in"])
    }
    const keysBefore = await db.query("SELECT id FROM api_keys")
    for (const path of FORMS) {
      const posted = await fetch(`${server.baseUrl}${path}`, {
        method: "POST",
        headers: { ...FORM, cookie },
        body: new URLSearchParams({ csrf: "", name: "k", scopes: "messages:read", mode: "test", require: "off", code: "000000" }).toString(),
        redirect: "manual"
      })
      expect([path, posted.status, posted.headers.get("location")]).toEqual([path, 303, "/admin/sign-in"])
    }
    expect(await db.query("SELECT id FROM api_keys")).toEqual(keysBefore)
    // The step page itself is there, and without the step cookie it sends back to sign in.
    expect((await fetch(`${server.baseUrl}/admin/sign-in/code`, { headers: { cookie: step! } })).status).toBe(200)
    const none = await fetch(`${server.baseUrl}/admin/sign-in/code`, { redirect: "manual" })
    expect(none.headers.get("location")).toBe("/admin/sign-in?done=step-expired")
  })

  it("a code signs in once: the same code again is refused; a wrong one too", async () => {
    const app = apps["olga@t.example"]!
    const first = await password("olga@t.example")
    expect((await postCode(first.step!, "123456")).status).toBe(401)
    const right = await postCode(first.step!, await app.nextCode())
    expect(right.status).toBe(303)
    expect(right.headers.get("location")).toBe("/admin/keys")
    const session = await sessionFrom(right)
    expect((await consoleGet(server.baseUrl, session, "/admin/keys")).status).toBe(200)
    // The step is used up, and the code with it.
    expect((await postCode(first.step!, app.lastCode())).headers.get("location")).toBe("/admin/sign-in?done=step-expired")
    const again = await password("olga@t.example")
    const replay = await postCode(again.step!, app.lastCode())
    expect(replay.status).toBe(401)
    expect(cookieOf(replay, "__Host-parley_admin")).toBeUndefined()
  })

  it("a recovery code signs in once", async () => {
    const code = olgaCodes[0]!
    const first = await password("olga@t.example")
    const used = await postCode(first.step!, code.toUpperCase())
    expect(used.status).toBe(303)
    expect(used.headers.get("location")).toBe("/admin/security")
    const session = await sessionFrom(used)
    expect(await (await consoleGet(server.baseUrl, session, "/admin/security")).text()).toContain("Recovery codes left: 9 of 10")
    const second = await password("olga@t.example")
    expect((await postCode(second.step!, code)).status).toBe(401)
    const entries = await audit("admin.recovery-code-used")
    expect(entries).toHaveLength(1)
    expect(entries[0]?.detail).toBe("left=9")
  })

  it("new recovery codes need a current code; the old ones stop working", async () => {
    const first = await password("olga@t.example")
    const session = await sessionFrom(await postCode(first.step!, olgaCodes[1]!))
    const refused = await consolePost(server.baseUrl, session, "/admin/security/recovery-codes", { csrf: session.csrf, "regenerate-code": "111111" })
    expect(refused.status).toBe(400)
    const made = await consolePost(server.baseUrl, session, "/admin/security/recovery-codes", {
      csrf: session.csrf,
      "regenerate-code": await apps["olga@t.example"]!.nextCode()
    })
    expect(made.status).toBe(200)
    const fresh = recoveryCodesOf(await made.text())
    expect(fresh).toHaveLength(10)
    shown.push(...fresh)
    const old = await password("olga@t.example")
    expect((await postCode(old.step!, olgaCodes[2]!)).status).toBe(401)
    olgaCodes = fresh
  })

  it("the owner requires two-factor: an admin without it is signed out and must set it up before anything else", async () => {
    const adam = await signIn(server.baseUrl, "adam@t.example", PASSWORD)
    const olga = await sessionFrom(await postCode((await password("olga@t.example")).step!, olgaCodes[0]!))
    const on = await consolePost(server.baseUrl, olga, "/admin/security/policy", { csrf: olga.csrf, require: "on" })
    expect(on.status).toBe(303)
    expect((await consoleGet(server.baseUrl, adam, "/admin/keys")).headers.get("location")).toBe("/admin/sign-in")
    const { answer, step } = await password("adam@t.example")
    expect(answer.headers.get("location")).toBe("/admin/sign-in/enrol")
    // The forced set-up holds no session either.
    const token = step!.split("=")[1] ?? ""
    const tried = await fetch(`${server.baseUrl}/admin/keys`, { headers: { cookie: `${step}; __Host-parley_admin=${token}` }, redirect: "manual" })
    expect(tried.headers.get("location")).toBe("/admin/sign-in")
    // A code step cannot be used for the set-up page, nor the other way round.
    expect((await fetch(`${server.baseUrl}/admin/sign-in/code`, { headers: { cookie: step! }, redirect: "manual" })).headers.get("location"))
      .toBe("/admin/sign-in/enrol")
    const page = await (await fetch(`${server.baseUrl}/admin/sign-in/enrol`, { headers: { cookie: step! } })).text()
    const secret = secretOf(page)
    shown.push(secret)
    apps["adam@t.example"] = new Authenticator(secret)
    expect((await postCode(step!, "000000", "/admin/sign-in/enrol")).status).toBe(400)
    const done = await postCode(step!, await apps["adam@t.example"]!.nextCode(), "/admin/sign-in/enrol")
    expect(done.status).toBe(200)
    shown.push(...recoveryCodesOf(await done.clone().text()))
    const session = await sessionFrom(done)
    expect((await consoleGet(server.baseUrl, session, "/admin/keys")).status).toBe(200)
    // Required: it cannot be turned off.
    const off = await consolePost(server.baseUrl, session, "/admin/security/disable", {
      csrf: session.csrf,
      "disable-code": await apps["adam@t.example"]!.nextCode()
    })
    expect(off.status).toBe(409)
    expect((await db.query<{ s: string | null }>("SELECT totp_secret AS s FROM admins WHERE email = ?", ["adam@t.example"]))[0]?.s)
      .not.toBeNull()
  })

  it("wrong codes are slowed down as wrong passwords are: 429 with Retry-After, even for the right code", async () => {
    const { step } = await password("adam@t.example")
    for (let i = 0; i < 5; i++) expect((await postCode(step!, "999999")).status).toBe(401)
    const held = await postCode(step!, await apps["adam@t.example"]!.nextCode())
    expect(held.status).toBe(429)
    expect(Number(held.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(cookieOf(held, "__Host-parley_admin")).toBeUndefined()
    expect((await audit("admin.two-factor-failed")).filter((e) => e.actor === "adam@t.example").length).toBeGreaterThanOrEqual(5)
  })

  it("a viewer changes their own password: the current one is checked, other sessions end", async () => {
    // Required in this organisation now: the viewer sets it up at sign-in first.
    const { step } = await password("vera@t.example")
    const secret = secretOf(await (await fetch(`${server.baseUrl}/admin/sign-in/enrol`, { headers: { cookie: step! } })).text())
    shown.push(secret)
    apps["vera@t.example"] = new Authenticator(secret)
    const enrolled = await postCode(step!, await apps["vera@t.example"]!.nextCode(), "/admin/sign-in/enrol")
    veraCodes = recoveryCodesOf(await enrolled.clone().text())
    shown.push(...veraCodes)
    const vera = await sessionFrom(enrolled)
    const wrong = await consolePost(server.baseUrl, vera, "/admin/security/password", {
      csrf: vera.csrf,
      "current-password": "not my password at all",
      "new-password": "a brand new passphrase"
    })
    expect(wrong.status).toBe(401)
    const short = await consolePost(server.baseUrl, vera, "/admin/security/password", {
      csrf: vera.csrf,
      "current-password": PASSWORD,
      "new-password": "short"
    })
    expect(short.status).toBe(400)
    const changed = await consolePost(server.baseUrl, vera, "/admin/security/password", {
      csrf: vera.csrf,
      "current-password": PASSWORD,
      "new-password": "a brand new passphrase"
    })
    expect(changed.status).toBe(303)
    const renewed = cookieOf(changed, "__Host-parley_admin")
    expect(renewed).toBeDefined()
    expect((await consoleGet(server.baseUrl, vera, "/admin/keys")).status).toBe(303)
    expect((await fetch(`${server.baseUrl}/admin/keys`, { headers: { cookie: renewed! } })).status).toBe(200)
    expect((await password("vera@t.example")).answer.status).toBe(401)
    expect((await password("vera@t.example", "a brand new passphrase")).step).toBeDefined()
    expect((await audit("admin.password-changed")).map((e) => e.actor)).toEqual(["vera@t.example"])
    expect((await audit("admin.password-change-failed")).map((e) => e.actor)).toEqual(["vera@t.example"])
  })

  it("parley admins reset-2fa and require-2fa; the organisation's policy back to optional; turning off needs a code", async () => {
    const bad = await server.cli(["admins", "reset-2fa", demo.orgId, "--email", "nobody@t.example"])
    expect(bad.code).toBe(1)
    const reset = await server.adminJson<{ email: string; twoFactor: boolean; required: boolean }>([
      "admins",
      "reset-2fa",
      demo.orgId,
      "--email",
      "Adam@T.example"
    ])
    expect(reset).toEqual({ email: "adam@t.example", twoFactor: false, required: true })
    expect((await password("adam@t.example")).answer.headers.get("location")).toBe("/admin/sign-in/enrol")
    const optional = await server.adminJson<{ required: boolean }>(["admins", "require-2fa", demo.orgId, "--off"])
    expect(optional.required).toBe(false)
    const plain = await password("adam@t.example")
    expect(plain.answer.headers.get("location")).toBe("/admin/keys")
    expect(plain.session).toBeDefined()

    // Vera turns hers off, not Olga: a code from Olga's app here would be her fourth in this file, and the
    // server takes codes only from now ± one step, each step once, so a fourth waits up to 30 s for the clock.
    const veraPassword = "a brand new passphrase"
    const vera = await sessionFrom(await postCode((await password("vera@t.example", veraPassword)).step!, veraCodes[0]!))
    expect((await consolePost(server.baseUrl, vera, "/admin/security/disable", { csrf: vera.csrf, "disable-code": "000000" })).status).toBe(400)
    const off = await consolePost(server.baseUrl, vera, "/admin/security/disable", {
      csrf: vera.csrf,
      "disable-code": await apps["vera@t.example"]!.nextCode()
    })
    expect(off.headers.get("location")).toBe("/admin/security?done=disabled")
    expect((await password("vera@t.example", veraPassword)).session).toBeDefined()
    expect(await db.query("SELECT code_hash FROM admin_recovery_codes WHERE admin_id = (SELECT id FROM admins WHERE email = ?)", ["vera@t.example"]))
      .toEqual([])
  })

  it("every two-factor event is in the audit log, and no secret, code or password is", async () => {
    const entries = await audit()
    const kinds = new Set(entries.map((e) => e.kind))
    for (
      const kind of [
        "admin.two-factor-enrolled",
        "admin.two-factor-disabled",
        "admin.two-factor-failed",
        "admin.two-factor-reset",
        "admin.recovery-codes-regenerated",
        "admin.recovery-code-used",
        "admin.password-changed",
        "admin.password-change-failed",
        "admin.two-factor-policy-changed"
      ]
    ) expect(kinds, kind).toContain(kind)
    expect(entries.filter((e) => e.kind === "admin.two-factor-enrolled").map((e) => e.actor).sort()).toEqual([
      "adam@t.example",
      "olga@t.example",
      "vera@t.example"
    ])
    expect(entries.filter((e) => e.kind === "admin.two-factor-policy-changed").map((e) => [e.actor, e.detail])).toEqual([
      ["cli", "require=off"],
      ["olga@t.example", "require=on"]
    ])
    const text = JSON.stringify(entries)
    expect(shown.length).toBeGreaterThan(30)
    for (const secret of [...shown, PASSWORD, "a brand new passphrase", "not my password at all"]) {
      expect(text).not.toContain(secret)
      expect(text.toLowerCase()).not.toContain(secret.replace(/-/g, "").toLowerCase())
    }
    const signedIn = entries.filter((e) => e.kind === "admin.signed-in" && e.detail !== null).map((e) => e.detail)
    expect(signedIn).toContain("second factor=authenticator")
    expect(signedIn).toContain("second factor=recovery code")
  })
})
