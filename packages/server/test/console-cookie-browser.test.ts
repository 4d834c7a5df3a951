/**
 * The session cookie against planting, in Chromium (issue 33, item 3): a page on another port of the same
 * host sets cookies meant to replace the administrator's session with the attacker's own — the old cookie
 * name with a narrower path (sent first), and a `__Host-` cookie with a path, which the browser refuses.
 * The administrator's next page must still be their own session's.
 */
import { createServer, type Server } from "node:http"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumPlan, closePages, openPage, sharedChromium, signInWithForm } from "./support/browser.js"
import { addAdmin, signIn } from "./support/console.js"
import { TestServer } from "./support/server.js"

const plan = chromiumPlan("the session cookie's browser test", { sqliteOnly: true })

const PASSWORD = "a long passphrase for the victim"
const ATTACKER_PASSWORD = "the attacker's own passphrase"

describe.skipIf(plan.kind !== "ready")("the session cookie in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let browser: Browser
  let attackerPage: Server
  let attackerPort = 0

  beforeAll(async () => {
    server = await TestServer.start()
    const demo = await server.demo()
    const other = (await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Attacker org"])).id
    await addAdmin(server, demo.orgId, "victim@a.example", PASSWORD)
    await addAdmin(server, other, "mallory@b.example", ATTACKER_PASSWORD)
    const attacker = await signIn(server.baseUrl, "mallory@b.example", ATTACKER_PASSWORD)
    const token = attacker.cookie.split("=")[1] ?? ""
    attackerPage = createServer((_, response) => {
      response.setHeader("set-cookie", [
        `parley_admin=${token}; Path=/admin/keys; HttpOnly`,
        `__Host-parley_admin=${token}; Path=/admin; Secure; HttpOnly`
      ])
      response.end("<!doctype html><title>Win a prize</title><p>Thanks!</p>")
    })
    await new Promise<void>((resolve) => attackerPage.listen(0, "127.0.0.1", resolve))
    const address = attackerPage.address()
    attackerPort = typeof address === "object" && address !== null ? address.port : 0
    browser = await sharedChromium(plan)
  }, 180_000)

  afterAll(async () => {
    await closePages()
    await server?.dispose()
    await new Promise<void>((resolve) => attackerPage?.close(() => resolve()))
  })

  it("a page on another port of the same host cannot put the attacker's session in the administrator's place", async () => {
    const page = await openPage(browser, server.baseUrl)
    const context = page.context()
    await signInWithForm(page, "victim@a.example", PASSWORD)
    await expect.poll(() => page.url()).toContain("/admin/keys")
    const names = (await context.cookies()).map((cookie) => cookie.name).sort()
    expect(names).toEqual(["__Host-parley_admin", "__Host-parley_device"])
    await page.goto(`http://127.0.0.1:${attackerPort}/`)
    await page.goto(`${server.baseUrl}/admin/keys`)
    const text = await page.locator("body").innerText()
    expect(text).toContain("victim@a.example")
    expect(text).not.toContain("mallory@b.example")
    await context.close()
  })
})
