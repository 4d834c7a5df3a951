/**
 * The Opt-outs page and the keyword settings in a real browser (Debian's Chromium through playwright-core)
 * against a real server on SQLite: an administrator opts a number out of some channels (the API then refuses
 * a text to it), reads its history, removes it after the confirmation (the text goes through), and sets the
 * organisation's own opt-out words on Sending rules, with the error for a word too long shown in the page.
 * axe-core on every state, one page load each. Over plain HTTP on both stores: admin-console-optouts.test.ts.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHROMIUM_ARGS, findChromium } from "./support/chromium.js"
import { setPasswordFromLink, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

const onSqlite = process.env["PARLEY_TEST_STORE"] !== "postgres"
const plan = onSqlite ? findChromium() : { kind: "missing" as const, reason: "the browser scenario runs on the SQLite pass" }
if (onSqlite && plan.kind === "missing") {
  if (process.env["CI"] === "true") throw new Error(`The console's browser tests need Chromium: ${plan.reason}`)
  process.stderr.write(`\n*** SKIPPED: the console's opt-out browser tests: ${plan.reason} ***\n\n`)
}

const PASSWORD = "a long passphrase for the console"
const PHONE = "+14155550181"

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
}

describe.skipIf(plan.kind !== "ready")("console opt-outs in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let browser: Browser
  let page: Page
  let n = 0
  const audited: Array<string> = []
  const violations: Array<Violation & { readonly page: string }> = []

  const audit = async (name: string) => {
    // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
    await page.evaluate(AXE_SOURCE)
    const found = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help })))"
    )) as ReadonlyArray<Violation>
    audited.push(name)
    violations.push(...found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ ...v, page: name })))
  }

  const text = () =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `console-optouts-browser-${++n}` },
      body: JSON.stringify({ to: PHONE, fromNumberSid: demo.numbers[0]?.sid, body: "Hello" })
    })

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "olga@demo.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    // Signed in over HTTP: the sign-in form has its own browser test.
    const session = await signIn(server.baseUrl, "olga@demo.example", PASSWORD)
    const [name, value] = session.cookie.split("=")
    browser = await chromium.launch({ executablePath: plan.kind === "ready" ? plan.path : "", headless: true, args: CHROMIUM_ARGS })
    const context = await browser.newContext({ baseURL: server.baseUrl })
    // The session cookie is `__Host-` prefixed: Secure, Path=/, no Domain (Chromium keeps it on loopback http).
    await context.addCookies([{ name: name ?? "", value: value ?? "", domain: "127.0.0.1", path: "/", secure: true, httpOnly: true, sameSite: "Lax" }])
    page = await context.newPage()
    page.setDefaultTimeout(90_000)
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await server?.dispose()
  })

  it("opts a number out of SMS and Call with a reason; the API refuses a text to it; the history shows it", async () => {
    await page.goto("/admin/opt-outs")
    await page.getByText("No opt-outs.").waitFor()
    await audit("opt-outs-empty")
    await page.getByLabel("Number to opt out").fill(PHONE)
    await page.getByLabel("WhatsApp", { exact: true }).uncheck()
    await page.getByLabel("Reason (optional)").fill("Asked on the phone")
    await page.getByRole("button", { name: "Opt out" }).click()
    await page.getByText("The number was opted out").waitFor()
    expect(await page.getByRole("table", { name: `Opt-out of ${PHONE}` }).textContent()).toContain("SMS, Callconsole")
    expect(await page.getByRole("table", { name: `History of ${PHONE}, newest first` }).textContent()).toContain("olga@demo.example")
    await audit("opt-outs-added")
    expect((await text()).status).toBe(403)
  })

  it("removes it after the confirmation; the text then goes through", async () => {
    await page.getByRole("link", { name: `Remove the opt-out of ${PHONE}` }).click()
    await page.getByRole("heading", { name: `Let ${PHONE} be texted and called again?` }).waitFor()
    await audit("opt-out-remove-confirmation")
    await page.getByRole("button", { name: "Remove opt-out" }).click()
    await page.getByText("The opt-out was lifted").waitFor()
    expect((await text()).status).toBe(202)
  })

  it("Sending rules: a word too long is refused beside its field; then the words and STOP-stops-calls are saved", async () => {
    await page.getByRole("link", { name: "Sending rules" }).click()
    await page.getByLabel("Own opt-out words").fill(`ARRET, ${"x".repeat(41)}`)
    await page.getByRole("button", { name: "Save sending rules" }).click()
    await page.getByText("is longer than 40 characters").waitFor()
    expect(await page.getByLabel("Own opt-out words").getAttribute("aria-invalid")).toBe("true")
    await audit("sending-rules-error")
    await page.getByLabel("Own opt-out words").fill("ARRET, BAJA")
    await page.getByLabel("STOP also stops AI calls").uncheck()
    await page.getByRole("button", { name: "Save sending rules" }).click()
    await page.getByText("Sending rules saved.").waitFor()
    expect(await page.getByLabel("Own opt-out words").inputValue()).toBe("ARRET, BAJA")
    expect(await page.getByLabel("STOP also stops AI calls").isChecked()).toBe(false)
  })

  it("axe-core finds no serious or critical violation on any of these pages", () => {
    expect(audited).toEqual(["opt-outs-empty", "opt-outs-added", "opt-out-remove-confirmation", "sending-rules-error"])
    expect(violations).toEqual([])
  })
})
