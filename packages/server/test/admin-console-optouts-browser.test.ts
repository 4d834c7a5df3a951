/**
 * The Opt-outs page and the keyword settings in a real browser (Debian's Chromium through playwright-core)
 * against a real server on SQLite: an administrator opts a number out of some channels (the API then refuses
 * a text to it), reads its history, removes it after the confirmation (the text goes through), and sets the
 * organisation's own opt-out words on Sending rules, with the error for a word too long shown in the page.
 * axe-core on every state, one page load each. Over plain HTTP on both stores: admin-console-optouts.test.ts.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium } from "./support/browser.js"
import { addAdmin, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const plan = chromiumPlan("the console's opt-out browser tests", { sqliteOnly: true })

const PASSWORD = "a long passphrase for the console"
const PHONE = "+14155550181"

describe.skipIf(plan.kind !== "ready")("console opt-outs in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let page: Page
  let n = 0
  const axe = new Axe()
  const audit = (name: string) => axe.check(page, name)

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
    await addAdmin(server, demo.orgId, "olga@demo.example", PASSWORD)
    // Signed in over HTTP: the sign-in form has its own browser test.
    const session = await signIn(server.baseUrl, "olga@demo.example", PASSWORD)
    page = await openPage(await sharedChromium(plan), server.baseUrl, { session: session.cookie })
  }, 180_000)

  afterAll(async () => {
    await closePages()
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
    expect(axe.audited).toEqual(["opt-outs-empty", "opt-outs-added", "opt-out-remove-confirmation", "sending-rules-error"])
    expect(axe.violations).toEqual([])
  })
})
