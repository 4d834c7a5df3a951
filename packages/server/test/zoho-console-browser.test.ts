/**
 * The console's "Connect Zoho CRM" button in a real browser (Debian's Chromium through playwright-core):
 * the form posts to the console, whose answer redirects to Zoho's consent page on the accounts server.
 * Chromium applies the page's CSP `form-action` to that redirect, so the accounts server's origin must be
 * allowed there or the button does nothing. Against the Zoho fake, on SQLite (see chromium.ts for when
 * Chromium is missing).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumPlan, closePages, openPage, sharedChromium, signInWithForm } from "./support/browser.js"
import { addAdmin } from "./support/console.js"
import { ZohoFake } from "./support/fakes/ZohoFake.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { zohoEnv } from "./support/zohoSuite.js"

const plan = chromiumPlan("the Zoho console button's browser test", { sqliteOnly: true })

const PASSWORD = "a long passphrase for the console"

describe.skipIf(plan.kind !== "ready")("Connect Zoho CRM in Chromium", { timeout: 180_000 }, () => {
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary
  let page: Page

  beforeAll(async () => {
    zoho = await ZohoFake.start()
    server = await TestServer.start({ env: zohoEnv(zoho) })
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "zoho@demo.example", PASSWORD)
    page = await openPage(await sharedChromium(plan), server.baseUrl)
  }, 180_000)

  afterAll(async () => {
    await closePages()
    await server?.dispose()
    await zoho?.stop()
  })

  it("the button lands on the accounts server's consent URL, and Zoho's answer connects the organisation", async () => {
    await signInWithForm(page, "zoho@demo.example", PASSWORD, "Developer access")
    await page.goto("/admin/crm")
    const blocked: Array<string> = []
    page.on("console", (message) => {
      if (message.type() === "error") blocked.push(message.text())
    })
    const consent = page.waitForRequest((request) => request.url().startsWith(`${zoho.url}/oauth/v2/auth?`), { timeout: 30_000 })
    await page.getByRole("button", { name: "Connect Zoho CRM" }).click()
    const request = await consent.catch(() => undefined)
    expect(request, `no navigation to Zoho's consent page; the browser said: ${blocked.join(" | ")}`).toBeDefined()
    const url = new URL(request?.url() ?? "http://none")
    expect(url.searchParams.get("client_id")).toBe(zoho.clientId)
    expect(url.searchParams.get("redirect_uri")).toBe(`${server.baseUrl}/oauth/zoho/callback`)
    expect(url.searchParams.get("state")).toMatch(/^[\w-]{20,}$/)
    // The fake consents at once and sends the browser back to Parley's callback.
    await page.getByRole("heading", { name: "Zoho CRM connected" }).waitFor()
    expect(await page.textContent("body")).toContain("Ada Admin")
    await page.getByRole("link", { name: "Back to the Parley console" }).click()
    await page.getByText("Zoho CRM — Acme Test Org").waitFor()
  })
})
