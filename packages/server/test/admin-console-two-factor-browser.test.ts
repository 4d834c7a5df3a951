/**
 * Two-factor sign-in in Chromium (issue 33, item 4), on the store this run tests, the whole task as an
 * administrator does it: the owner opens Security, sets two-factor up by reading the secret the page shows
 * beside its QR code (the test computes the codes as an app would: support/totp.ts), keeps the ten recovery
 * codes; signs out and in with a code; with a recovery code once, and the same recovery code refused the
 * second time; makes new recovery codes; changes their password; requires two-factor of the organisation,
 * after which another administrator must set it up before reaching any page. axe-core on every page state.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHROMIUM_ARGS, findChromium } from "./support/chromium.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { Authenticator } from "./support/totp.js"

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")
const plan = findChromium()
if (plan.kind === "missing" && process.env["CI"] === "true") throw new Error(`The console's browser tests need Chromium: ${plan.reason}`)

const OWNER_PASSWORD = "the owner's long passphrase"
const NEW_OWNER_PASSWORD = "the owner's newer passphrase"
const ADMIN_PASSWORD = "the admin's long passphrase"

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly page: string
}

describe.skipIf(plan.kind !== "ready")("two-factor sign-in in Chromium", { timeout: 240_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let browser: Browser
  let owner: Page
  let admin: Page
  let app: Authenticator
  let codes: ReadonlyArray<string> = []
  const violations: Array<Violation> = []
  const audited: Array<string> = []

  const axe = async (page: Page, name: string) => {
    // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
    await page.evaluate(AXE_SOURCE)
    const found = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))"
    )) as ReadonlyArray<Omit<Violation, "page">>
    audited.push(name)
    violations.push(...found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ ...v, page: name })))
  }

  const password = async (page: Page, email: string, pass: string) => {
    await page.goto("/admin/sign-in")
    await page.getByLabel("Email").fill(email)
    await page.getByLabel("Password").fill(pass)
    await page.getByRole("button", { name: "Sign in" }).click()
  }

  const secondStep = async (page: Page, code: string) => {
    await page.getByRole("heading", { name: "Two-factor sign-in" }).waitFor()
    await page.getByLabel("Code", { exact: true }).fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
  }

  const signOut = async (page: Page) => {
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByText("You are signed out.").waitFor()
  }

  const shownCodes = async (page: Page) => (await page.locator("#recovery-codes li code").allTextContents()).map((c) => c.trim())

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    for (const [email, pass, role] of [["olga@demo.example", OWNER_PASSWORD, "owner"], ["adam@demo.example", ADMIN_PASSWORD, "admin"]]) {
      const created = await server.cli(["admins", "create", demo.orgId, "--email", email!, "--password-stdin", "--role", role!], {
        input: `${pass}\n`
      })
      expect(created.code, created.stderr).toBe(0)
    }
    browser = await chromium.launch({ executablePath: plan.kind === "ready" ? plan.path : "", headless: true, args: CHROMIUM_ARGS })
    const open = async () => {
      const page = await (await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })).newPage()
      page.setDefaultTimeout(90_000)
      return page
    }
    owner = await open()
    admin = await open()
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await server?.dispose()
  })

  it("the owner sets up two-factor on the Security page: QR code, the secret as text, a typed code, ten recovery codes", async () => {
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByRole("heading", { name: "Developer access" }).waitFor()
    await owner.getByRole("link", { name: "Security" }).click()
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
    expect(await owner.getByText("Two-factor sign-in is off for you.").isVisible()).toBe(true)
    await axe(owner, "security-off")
    await owner.getByRole("link", { name: "Set up two-factor sign-in" }).click()
    await owner.getByRole("heading", { name: "Set up two-factor sign-in" }).waitFor()
    expect(await owner.getByRole("img", { name: /QR code/ }).isVisible()).toBe(true)
    const secret = ((await owner.locator("#totp-secret").textContent()) ?? "").replace(/\s/g, "")
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    app = new Authenticator(secret)
    await axe(owner, "enrol")
    await owner.getByLabel("Code from the app").fill("000000")
    await owner.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await owner.getByText("That code is not right").waitFor()
    await axe(owner, "enrol-wrong-code")
    await owner.getByLabel("Code from the app").fill(await app.nextCode())
    await owner.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await owner.getByRole("heading", { name: "Two-factor sign-in is on" }).waitFor()
    codes = await shownCodes(owner)
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    await axe(owner, "recovery-codes")
    await owner.getByRole("link", { name: "Back to Security" }).click()
    expect(await owner.getByText("Recovery codes left: 10 of 10").isVisible()).toBe(true)
    await axe(owner, "security-on")
  })

  it("signs out and in with a code from the app", async () => {
    await signOut(owner)
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByRole("heading", { name: "Two-factor sign-in" }).waitFor()
    await axe(owner, "second-step")
    // Half signed in: no page opens.
    await owner.goto("/admin/keys")
    await owner.getByRole("heading", { name: "Sign in" }).waitFor()
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, await app.nextCode())
    await owner.getByRole("heading", { name: "Developer access" }).waitFor()
  })

  it("signs in with a recovery code once; the same recovery code is refused the second time", async () => {
    await signOut(owner)
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
    expect(await owner.getByText("Recovery codes left: 9 of 10").isVisible()).toBe(true)
    await signOut(owner)
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByText("That code is not right, or was used already").waitFor()
    expect(await owner.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    await axe(owner, "second-step-refused")
    await owner.getByLabel("Code", { exact: true }).fill(await app.nextCode())
    await owner.getByRole("button", { name: "Verify" }).click()
    await owner.getByRole("heading", { name: "Developer access" }).waitFor()
  })

  it("makes new recovery codes with a current code; the old ones stop working", async () => {
    await owner.getByRole("link", { name: "Security" }).click()
    await owner.getByLabel("Code from the app, for new recovery codes").fill(await app.nextCode())
    await owner.getByRole("button", { name: "Make new recovery codes" }).click()
    await owner.getByRole("heading", { name: "New recovery codes" }).waitFor()
    const fresh = await shownCodes(owner)
    expect(fresh).toHaveLength(10)
    expect(fresh.filter((c) => codes.includes(c))).toEqual([])
    await axe(owner, "new-recovery-codes")
    const old = codes[1]!
    codes = fresh
    const other = await (await browser.newContext({ baseURL: server.baseUrl })).newPage()
    await password(other, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(other, old)
    await other.getByText("That code is not right").waitFor()
    await other.context().close()
  })

  it("changes the password: the current one is asked for; the next sign-in takes the new one", async () => {
    await owner.goto("/admin/security")
    await owner.getByLabel("Current password").fill("not the password at all")
    await owner.getByLabel("New password").fill(NEW_OWNER_PASSWORD)
    await owner.getByRole("button", { name: "Change password" }).click()
    await owner.getByText("The current password is wrong.").waitFor()
    await axe(owner, "password-refused")
    await owner.getByLabel("Current password").fill(OWNER_PASSWORD)
    await owner.getByLabel("New password").fill(NEW_OWNER_PASSWORD)
    await owner.getByRole("button", { name: "Change password" }).click()
    await owner.getByText("Your password is changed.").waitFor()
    await axe(owner, "password-changed")
    await signOut(owner)
    await password(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByText("The email or the password is wrong.").waitFor()
    await password(owner, "olga@demo.example", NEW_OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
  })

  it("the owner requires two-factor for the organisation; an admin without it sets it up before anything else", async () => {
    await password(admin, "adam@demo.example", ADMIN_PASSWORD)
    await admin.getByRole("heading", { name: "Developer access" }).waitFor()
    await admin.getByRole("link", { name: "Security" }).click()
    expect(await admin.getByText("Only an owner of this organisation changes this.").isVisible()).toBe(true)
    expect(await admin.getByRole("button", { name: /Require two-factor/ }).count()).toBe(0)
    await axe(admin, "security-admin")

    await owner.getByRole("button", { name: "Require two-factor sign-in for everyone" }).click()
    await owner.getByText("Two-factor sign-in is now required").waitFor()
    await axe(owner, "policy-required")

    // Their session ended; the password leads to the set-up, and nowhere else.
    await admin.goto("/admin/keys")
    await admin.getByRole("heading", { name: "Sign in" }).waitFor()
    await password(admin, "adam@demo.example", ADMIN_PASSWORD)
    await admin.getByRole("heading", { name: "Set up two-factor sign-in" }).waitFor()
    expect(await admin.getByText("Your organisation requires two-factor sign-in").isVisible()).toBe(true)
    await axe(admin, "forced-enrol")
    await admin.goto("/admin/events")
    await admin.getByRole("heading", { name: "Sign in" }).waitFor()
    await admin.goto("/admin/sign-in/enrol")
    const adminApp = new Authenticator(((await admin.locator("#totp-secret").textContent()) ?? "").replace(/\s/g, ""))
    await admin.getByLabel("Code from the app").fill(await adminApp.nextCode())
    await admin.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await admin.getByRole("heading", { name: "Two-factor sign-in is on" }).waitFor()
    expect(await shownCodes(admin)).toHaveLength(10)
    await axe(admin, "forced-enrol-codes")
    await admin.getByRole("link", { name: "Continue to the console" }).click()
    await admin.getByRole("heading", { name: "Developer access" }).waitFor()
    await admin.getByRole("link", { name: "Security" }).click()
    expect(await admin.getByText("Your organisation requires two-factor sign-in, so it cannot be turned off.").isVisible()).toBe(true)
    await axe(admin, "security-required")

    await owner.getByRole("link", { name: "Audit log" }).click()
    await owner.getByLabel("What").selectOption("admin.two-factor-enrolled")
    await owner.getByRole("button", { name: "Filter" }).click()
    await owner.waitForURL(/kind=admin.two-factor-enrolled/)
    const rows = await owner.locator("main tbody tr").allInnerTexts()
    expect(rows).toHaveLength(2)
    expect(rows.join("\n")).toContain("adam@demo.example")
    expect(rows.join("\n")).toContain("olga@demo.example")
  })

  it("axe finds no serious or critical violation on any page state", () => {
    expect(audited.length).toBeGreaterThanOrEqual(14)
    expect(violations).toEqual([])
  })
})
