/**
 * Pages outside the console's routes that a browser opens carry the console's headers (issue 33, item 7): the
 * documentation page and the OAuth callback page are not framed and have a Content-Security-Policy; an unknown
 * /admin address, a method a console page does not take and a console form over the body limit answer the
 * console's own page (HTML, its headers), not the API's JSON, while the API keeps its JSON. Over HTTP on both
 * stores; in Chromium (SQLite pass) the documentation page runs under its policy with no script refused, and
 * the console's 404 and 413 pages are axe clean.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium } from "./support/browser.js"
import { type ConsoleSession, consolePost, setPasswordFromLink, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const PASSWORD = "a long passphrase for the console"
const MAX_BODY = 4096

const plan = chromiumPlan("the console's framing browser test", { sqliteOnly: true })

const expectFramingHeaders = (response: Response) => {
  expect(response.headers.get("x-frame-options")).toBe("DENY")
  expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
  expect(response.headers.get("content-security-policy")).toContain("default-src 'none'")
  expect(response.headers.get("x-content-type-options")).toBe("nosniff")
}

describe("pages a browser opens carry the console's headers", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let session: ConsoleSession

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_MAX_BODY_BYTES: String(MAX_BODY) } })
    demo = await server.demo()
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "fay@demo.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    session = await signIn(server.baseUrl, "fay@demo.example", PASSWORD)
  }, 120_000)

  afterAll(async () => {
    await server?.dispose()
  })

  it("the documentation page and the OAuth callback page are neither framed nor open to other scripts", async () => {
    const docs = await fetch(`${server.baseUrl}/docs`)
    expect(docs.status).toBe(200)
    expectFramingHeaders(docs)
    expect(docs.headers.get("content-security-policy")).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/)
    expect(docs.headers.get("content-security-policy")).not.toContain("'unsafe-inline' ;")
    const callback = await fetch(`${server.baseUrl}/oauth/zoho/callback?error=access_denied`)
    expect(callback.headers.get("content-type")).toContain("text/html")
    expectFramingHeaders(callback)
    expect(await callback.text()).toContain("Back to the Parley console")
  })

  it("an unknown console address and a wrong method answer the console's page; the API keeps its JSON", async () => {
    const unknown = await fetch(`${server.baseUrl}/admin/no-such-page`, { headers: { cookie: session.cookie } })
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get("content-type")).toContain("text/html")
    expectFramingHeaders(unknown)
    expect(await unknown.text()).toContain("There is no console page at this address.")
    const wrongMethod = await fetch(`${server.baseUrl}/admin/activity`, { method: "POST", headers: { cookie: session.cookie } })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("GET")
    expect(wrongMethod.headers.get("content-type")).toContain("text/html")
    const api = await fetch(`${server.baseUrl}/api/v1/nothing`)
    expect(api.status).toBe(404)
    expect(api.headers.get("content-type")).toContain("application/json")
    const outside = await fetch(`${server.baseUrl}/administrator`)
    expect(outside.headers.get("content-type")).toContain("application/json")
  })

  it("a console form over the body limit answers the console's 413 page and changes nothing", async () => {
    const response = await consolePost(server.baseUrl, session, "/admin/opt-outs/add", {
      csrf: session.csrf,
      phone: "+14155550111",
      channels: "SMS",
      reason: "x".repeat(MAX_BODY)
    })
    expect(response.status).toBe(413)
    expect(response.headers.get("content-type")).toContain("text/html")
    expectFramingHeaders(response)
    expect(await response.text()).toContain("nothing was changed")
    const listed = await server.db.query("SELECT phone FROM opt_outs WHERE phone = ?", ["+14155550111"])
    expect(listed).toEqual([])
  })

  describe.skipIf(plan.kind !== "ready")("in Chromium", () => {
    let page: Page
    const axe = new Axe()
    const audit = (name: string) => axe.check(page, name)

    beforeAll(async () => {
      page = await openPage(await sharedChromium(plan), server.baseUrl, { session: session.cookie })
    }, 120_000)

    afterAll(async () => {
      await closePages()
    })

    it("the documentation page runs its own scripts under its policy, none refused", async () => {
      const refused: Array<string> = []
      page.on("console", (message) => {
        if (message.text().includes("Content Security Policy") && message.text().includes("script")) refused.push(message.text())
      })
      await page.goto("/docs")
      // Scalar renders the contract's operations from its inline script: one appears only if the script ran.
      await page.getByText("List sender numbers permitted to the key").first().waitFor()
      expect(refused).toEqual([])
    })

    it("an unknown console address and an oversized form show the console's page; axe finds nothing", async () => {
      await page.goto("/admin/no-such-page")
      await page.getByRole("heading", { name: "Not found" }).waitFor()
      await audit("not-found")
      await page.goto("/admin/opt-outs")
      await page.getByLabel("Number to opt out").fill("+14155550112")
      await page.getByLabel("Reason (optional)").fill("y".repeat(MAX_BODY))
      await page.getByRole("button", { name: "Opt out" }).click()
      await page.getByRole("heading", { name: "Form too large" }).waitFor()
      await audit("form-too-large")
      expect(axe.violations).toEqual([])
    })
  })
})
