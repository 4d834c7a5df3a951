/**
 * The session cookie against planting, in Chromium (issue 33, item 3): a page on another port of the same
 * host sets cookies meant to replace the administrator's session with the attacker's own — the old cookie
 * name with a narrower path (sent first), and a `__Host-` cookie with a path, which the browser refuses.
 * The administrator's next page must still be their own session's.
 */
import { createServer, type Server } from "node:http"
import { chromium, type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signIn } from "./support/console.js"
import { CHROMIUM_ARGS, findChromium } from "./support/chromium.js"
import { TestServer } from "./support/server.js"

const onSqlite = process.env["PARLEY_TEST_STORE"] !== "postgres"
const plan = onSqlite ? findChromium() : { kind: "missing" as const, reason: "the browser scenario runs on the SQLite pass" }
if (onSqlite && plan.kind === "missing" && process.env["CI"] === "true") {
  throw new Error(`The console's browser tests need Chromium: ${plan.reason}`)
}

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
    for (const [org, email, password] of [[demo.orgId, "victim@a.example", PASSWORD], [other, "mallory@b.example", ATTACKER_PASSWORD]] as const) {
      const created = await server.cli(["admins", "create", org, "--email", email, "--password-stdin"], { input: `${password}\n` })
      expect(created.code, created.stderr).toBe(0)
    }
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
    const path = plan.kind === "ready" ? plan.path : ""
    browser = await chromium.launch({ executablePath: path, headless: true, args: CHROMIUM_ARGS })
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await server?.dispose()
    await new Promise<void>((resolve) => attackerPage?.close(() => resolve()))
  })

  it("a page on another port of the same host cannot put the attacker's session in the administrator's place", async () => {
    const context = await browser.newContext({ baseURL: server.baseUrl })
    const page = await context.newPage()
    await page.goto("/admin/sign-in")
    await page.getByLabel("Email").fill("victim@a.example")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
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
