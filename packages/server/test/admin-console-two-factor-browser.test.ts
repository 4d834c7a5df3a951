/**
 * Two-factor sign-in in Chromium (issue 33, item 4), on the SQLite pass, the whole task as an
 * administrator does it: the owner opens Security, sets two-factor up by reading the secret the page shows
 * beside its QR code (the test computes the codes as an app would: support/totp.ts), keeps the ten recovery
 * codes; signs out and in with a code; with a recovery code once, and the same recovery code refused the
 * second time; makes new recovery codes; changes their password; requires two-factor of the organisation,
 * after which another administrator must set it up before reaching any page. axe-core on every page state.
 *
 * SQLite pass only: what this file adds is the browser's part (the pages, their labels and messages, axe);
 * every state it reaches through them — set-up, codes once, recovery codes once and renewed, the password
 * change, the organisation's policy and the forced set-up, their audit entries — is checked over HTTP on both
 * stores by admin-console-two-factor.test.ts, the same queries whichever page asks (docs/development.md).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium, signInWithForm } from "./support/browser.js"
import { addAdmin } from "./support/console.js"
import { TestServer } from "./support/server.js"
import { Authenticator } from "./support/totp.js"

const plan = chromiumPlan("the two-factor browser tests", { sqliteOnly: true })

const OWNER_PASSWORD = "the owner's long passphrase"
const NEW_OWNER_PASSWORD = "the owner's newer passphrase"
const ADMIN_PASSWORD = "the admin's long passphrase"

describe.skipIf(plan.kind !== "ready")("two-factor sign-in in Chromium", { timeout: 240_000 }, () => {
  let server: TestServer
  let owner: Page
  let admin: Page
  let app: Authenticator
  let codes: ReadonlyArray<string> = []
  const axe = new Axe()

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
    const demo = await server.demo()
    await addAdmin(server, demo.orgId, "olga@demo.example", OWNER_PASSWORD, "owner")
    await addAdmin(server, demo.orgId, "adam@demo.example", ADMIN_PASSWORD, "admin")
    const browser = await sharedChromium(plan)
    owner = await openPage(browser, server.baseUrl)
    admin = await openPage(browser, server.baseUrl)
  }, 180_000)

  afterAll(async () => {
    await closePages()
    await server?.dispose()
  })

  it("the owner sets up two-factor on the Security page: QR code, the secret as text, a typed code, ten recovery codes", async () => {
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByRole("heading", { name: "Developer access" }).waitFor()
    await owner.getByRole("link", { name: "Security" }).click()
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
    expect(await owner.getByText("Two-factor sign-in is off for you.").isVisible()).toBe(true)
    await axe.check(owner, "security-off")
    await owner.getByRole("link", { name: "Set up two-factor sign-in" }).click()
    await owner.getByRole("heading", { name: "Set up two-factor sign-in" }).waitFor()
    expect(await owner.getByRole("img", { name: /QR code/ }).isVisible()).toBe(true)
    const secret = ((await owner.locator("#totp-secret").textContent()) ?? "").replace(/\s/g, "")
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    app = new Authenticator(secret)
    await axe.check(owner, "enrol")
    await owner.getByLabel("Code from the app").fill("000000")
    await owner.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await owner.getByText("That code is not right").waitFor()
    await axe.check(owner, "enrol-wrong-code")
    await owner.getByLabel("Code from the app").fill(await app.nextCode())
    await owner.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await owner.getByRole("heading", { name: "Two-factor sign-in is on" }).waitFor()
    codes = await shownCodes(owner)
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    await axe.check(owner, "recovery-codes")
    await owner.getByRole("link", { name: "Back to Security" }).click()
    expect(await owner.getByText("Recovery codes left: 10 of 10").isVisible()).toBe(true)
    await axe.check(owner, "security-on")
  })

  it("signs out and in with a code from the app", async () => {
    await signOut(owner)
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByRole("heading", { name: "Two-factor sign-in" }).waitFor()
    await axe.check(owner, "second-step")
    // Half signed in: no page opens.
    await owner.goto("/admin/keys")
    await owner.getByRole("heading", { name: "Sign in" }).waitFor()
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, await app.nextCode())
    await owner.getByRole("heading", { name: "Developer access" }).waitFor()
  })

  it("signs in with a recovery code once; the same recovery code is refused the second time", async () => {
    await signOut(owner)
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
    expect(await owner.getByText("Recovery codes left: 9 of 10").isVisible()).toBe(true)
    await signOut(owner)
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByText("That code is not right, or was used already").waitFor()
    expect(await owner.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    await axe.check(owner, "second-step-refused")
    // The refusal leaves the step open: another recovery code signs in. (Not a code from the app: it would be
    // the owner's fourth in this file, and the server takes codes only from now ± one step, each step once,
    // so a fourth waits up to 30 s for the clock. The app code after a wrong one is checked over HTTP on both
    // stores, admin-console-two-factor.test.ts.)
    await owner.getByLabel("Code", { exact: true }).fill(codes[1]!)
    await owner.getByRole("button", { name: "Verify" }).click()
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
    expect(await owner.getByText("Recovery codes left: 8 of 10").isVisible()).toBe(true)
  })

  it("makes new recovery codes with a current code; the old ones stop working", async () => {
    await owner.getByRole("link", { name: "Security" }).click()
    await owner.getByLabel("Code from the app, for new recovery codes").fill(await app.nextCode())
    await owner.getByRole("button", { name: "Make new recovery codes" }).click()
    await owner.getByRole("heading", { name: "New recovery codes" }).waitFor()
    const fresh = await shownCodes(owner)
    expect(fresh).toHaveLength(10)
    expect(fresh.filter((c) => codes.includes(c))).toEqual([])
    await axe.check(owner, "new-recovery-codes")
    const old = codes[2]!
    codes = fresh
    const other = await openPage(await sharedChromium(plan), server.baseUrl)
    await signInWithForm(other, "olga@demo.example", OWNER_PASSWORD)
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
    await axe.check(owner, "password-refused")
    await owner.getByLabel("Current password").fill(OWNER_PASSWORD)
    await owner.getByLabel("New password").fill(NEW_OWNER_PASSWORD)
    await owner.getByRole("button", { name: "Change password" }).click()
    await owner.getByText("Your password is changed.").waitFor()
    await axe.check(owner, "password-changed")
    await signOut(owner)
    await signInWithForm(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByText("The email or the password is wrong.").waitFor()
    await signInWithForm(owner, "olga@demo.example", NEW_OWNER_PASSWORD)
    await secondStep(owner, codes[0]!)
    await owner.getByRole("heading", { name: "Security", exact: true }).waitFor()
  })

  it("the owner requires two-factor for the organisation; an admin without it sets it up before anything else", async () => {
    await signInWithForm(admin, "adam@demo.example", ADMIN_PASSWORD)
    await admin.getByRole("heading", { name: "Developer access" }).waitFor()
    await admin.getByRole("link", { name: "Security" }).click()
    expect(await admin.getByText("Only an owner of this organisation changes this.").isVisible()).toBe(true)
    expect(await admin.getByRole("button", { name: /Require two-factor/ }).count()).toBe(0)
    await axe.check(admin, "security-admin")

    await owner.getByRole("button", { name: "Require two-factor sign-in for everyone" }).click()
    await owner.getByText("Two-factor sign-in is now required").waitFor()
    await axe.check(owner, "policy-required")

    // Their session ended; the password leads to the set-up, and nowhere else.
    await admin.goto("/admin/keys")
    await admin.getByRole("heading", { name: "Sign in" }).waitFor()
    await signInWithForm(admin, "adam@demo.example", ADMIN_PASSWORD)
    await admin.getByRole("heading", { name: "Set up two-factor sign-in" }).waitFor()
    expect(await admin.getByText("Your organisation requires two-factor sign-in").isVisible()).toBe(true)
    await axe.check(admin, "forced-enrol")
    await admin.goto("/admin/events")
    await admin.getByRole("heading", { name: "Sign in" }).waitFor()
    await admin.goto("/admin/sign-in/enrol")
    const adminApp = new Authenticator(((await admin.locator("#totp-secret").textContent()) ?? "").replace(/\s/g, ""))
    await admin.getByLabel("Code from the app").fill(await adminApp.nextCode())
    await admin.getByRole("button", { name: "Turn on two-factor sign-in" }).click()
    await admin.getByRole("heading", { name: "Two-factor sign-in is on" }).waitFor()
    expect(await shownCodes(admin)).toHaveLength(10)
    await axe.check(admin, "forced-enrol-codes")
    await admin.getByRole("link", { name: "Continue to the console" }).click()
    await admin.getByRole("heading", { name: "Developer access" }).waitFor()
    await admin.getByRole("link", { name: "Security" }).click()
    expect(await admin.getByText("Your organisation requires two-factor sign-in, so it cannot be turned off.").isVisible()).toBe(true)
    await axe.check(admin, "security-required")

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
    expect(axe.audited.length).toBeGreaterThanOrEqual(14)
    expect(axe.violations).toEqual([])
  })
})
