/**
 * Roles and the audit log in Chromium (issue 33, items 5 and 6), on the SQLite pass: an owner adds
 * a viewer on the Administrators page, the viewer sets a password from the link and sees the pages without
 * their change buttons — and when the buttons are forced back into the page, the server still refuses the
 * change with the console's own 403 page; the owner then makes them an admin, who can create a key; the
 * Audit log page shows who did it, filtered by actor and kind. axe-core on every page and state.
 *
 * SQLite pass only: what this file adds is the browser's part (buttons hidden for a viewer, the forms, the
 * console's 403 page, axe); adding administrators, roles, a viewer's refused changes and the audit log with
 * its actor and kind filters are checked over HTTP on both stores by admin-console-roles.test.ts
 * (docs/development.md).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium, signInWithForm } from "./support/browser.js"
import { addAdmin } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const plan = chromiumPlan("the roles browser tests", { sqliteOnly: true })

const OWNER_PASSWORD = "the owner's long passphrase"
const VIEWER_PASSWORD = "the viewer's long passphrase"

describe.skipIf(plan.kind !== "ready")("roles and the audit log in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let owner: Page
  let viewer: Page
  const axe = new Axe()

  const signIn = (page: Page, email: string, password: string) => signInWithForm(page, email, password, "Developer access")

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "olga@demo.example", OWNER_PASSWORD)
    const browser = await sharedChromium(plan)
    owner = await openPage(browser, server.baseUrl)
    viewer = await openPage(browser, server.baseUrl)
  }, 180_000)

  afterAll(async () => {
    await closePages()
    await server?.dispose()
  })

  it("an owner adds a viewer on the Administrators page; the one-time link is shown once", async () => {
    await signIn(owner, "olga@demo.example", OWNER_PASSWORD)
    await owner.getByRole("link", { name: "Administrators" }).click()
    await owner.getByRole("heading", { name: "Administrators" }).waitFor()
    expect(await owner.getByText("olga@demo.example (you)").isVisible()).toBe(true)
    await axe.check(owner, "administrators")
    await owner.getByLabel("Email").fill("vic@demo.example")
    await owner.getByLabel(/^viewer:/).check()
    await owner.getByRole("button", { name: "Add administrator" }).click()
    await owner.getByRole("heading", { name: "Administrator added" }).waitFor()
    await axe.check(owner, "administrator-added")
    const link = (await owner.locator("#new-link").textContent()) ?? ""
    expect(link).toMatch(/\/admin\/set-password\?token=\w+$/)

    await viewer.goto(new URL(link).pathname + new URL(link).search)
    await viewer.getByLabel("New password").fill(VIEWER_PASSWORD)
    await viewer.getByRole("button", { name: "Set password" }).click()
    await viewer.getByText("Your password is set").waitFor()
    await signIn(viewer, "vic@demo.example", VIEWER_PASSWORD)
  })

  it("a viewer sees the pages without their change buttons; forced back, the change is refused with the console's page", async () => {
    expect(await viewer.getByText("vic@demo.example (viewer)").isVisible()).toBe(true)
    expect(await viewer.getByRole("link", { name: "Create key" }).isVisible()).toBe(false)
    expect(await viewer.getByRole("button", { name: "Sign out" }).isVisible()).toBe(true)
    await axe.check(viewer, "viewer-developer-access")
    await viewer.getByRole("link", { name: "Events" }).click()
    await viewer.getByRole("heading", { name: "Events", exact: true }).waitFor()
    expect(await viewer.locator("main form[method=post]").evaluateAll((forms) => forms.filter((f) => f.checkVisibility()).length)).toBe(0)
    await axe.check(viewer, "viewer-events")
    await viewer.getByRole("link", { name: "Administrators" }).click()
    expect(await viewer.getByText("Only an owner of this organisation adds administrators").isVisible()).toBe(true)
    expect(await viewer.getByRole("button", { name: "Add administrator" }).count()).toBe(0)
    await axe.check(viewer, "viewer-administrators")

    // What a viewer could do by editing the page: the form is there, the server says no.
    await viewer.goto("/admin/keys/new")
    await viewer.evaluate("document.body.classList.remove('read-only')")
    await viewer.getByLabel("Name").fill("viewer's key")
    await viewer.getByLabel("messages:read").check()
    await viewer.getByRole("button", { name: "Create key" }).click()
    await viewer.getByRole("heading", { name: "Not allowed" }).waitFor()
    expect(await viewer.getByText("Your role (viewer) does not allow changes").isVisible()).toBe(true)
    await axe.check(viewer, "viewer-refused")
    const keys = await server.adminJson<{ items: ReadonlyArray<{ name: string }> }>(["keys", "list", "--org", demo.orgId])
    expect(keys.items.map((k) => k.name)).not.toContain("viewer's key")
  })

  it("the owner makes the viewer an admin, who can then create a key", async () => {
    await owner.goto("/admin/admins")
    await owner.getByLabel("Role of vic@demo.example", { exact: true }).selectOption("admin")
    await owner.getByRole("button", { name: "Save role for vic@demo.example" }).click()
    await owner.getByText("The role was changed").waitFor()
    await axe.check(owner, "role-changed")

    await viewer.goto("/admin/keys")
    await viewer.getByRole("link", { name: "Create key" }).click()
    await viewer.getByLabel("Name").fill("vic's key")
    await viewer.getByLabel("messages:read").check()
    await viewer.getByRole("button", { name: "Create key" }).click()
    await viewer.getByRole("heading", { name: "Key created" }).waitFor()
  })

  it("the Audit log page shows who did what and from where, filtered by actor and by kind", async () => {
    await owner.getByRole("link", { name: "Audit log" }).click()
    await owner.getByRole("heading", { name: "Audit log" }).waitFor()
    await axe.check(owner, "audit-log")
    const rows = owner.locator("main tbody tr")
    expect(await rows.first().innerText()).toContain("API key created")
    expect(await rows.first().innerText()).toContain("vic's key")
    expect(await rows.first().innerText()).toContain("127.0.0.1")

    await owner.getByLabel("Who").selectOption("vic@demo.example")
    await owner.getByRole("button", { name: "Filter" }).click()
    await owner.waitForURL(/actor=vic/)
    const byVic = await rows.allInnerTexts()
    expect(byVic.length).toBeGreaterThanOrEqual(2)
    expect(byVic.every((row) => row.includes("vic@demo.example"))).toBe(true)
    expect(byVic.join("\n")).toContain("Signed in")

    await owner.getByLabel("Who").selectOption("")
    await owner.getByLabel("What").selectOption("admin.role-changed")
    await owner.getByRole("button", { name: "Filter" }).click()
    await owner.waitForURL(/kind=admin.role-changed/)
    const changes = await rows.allInnerTexts()
    expect(changes).toHaveLength(1)
    expect(changes[0]).toContain("olga@demo.example")
    expect(changes[0]).toContain("role=admin")
    await axe.check(owner, "audit-log-filtered")
  })

  it("axe finds no serious or critical violation on any page", () => {
    expect(axe.audited.length).toBeGreaterThanOrEqual(9)
    expect(axe.violations).toEqual([])
  })
})
