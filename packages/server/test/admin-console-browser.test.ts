/**
 * The admin console in a real browser (Debian's Chromium through playwright-core) against a real server on
 * SQLite: the administrator's whole tour, and axe-core on every page. Each page's screenshot is saved under
 * test-artifacts/console/ (not committed; two of them are copied to docs/ for the README).
 * The console's security over plain HTTP, on both stores, is admin-console.test.ts.
 */
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Page } from "playwright-core"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium } from "./support/browser.js"
import { addAdmin } from "./support/console.js"
import { CallbackReceiver } from "./support/fakes/CallbackReceiver.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), "..", "test-artifacts", "console")
const plan = chromiumPlan("the admin console's browser tests", { sqliteOnly: true })

const PASSWORD = "a long passphrase for the console"

// Generous: each step is a few page loads, but the machines this runs on are shared and sometimes saturated.
describe.skipIf(plan.kind !== "ready")("admin console in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let page: Page
  let receiver: CallbackReceiver
  let shot = 0
  /** The key made in the console, revoked in the next step. */
  let consoleKey = ""
  const axe = new Axe()

  /** Screenshot and axe-core: every page the tour reaches goes through here. */
  const audit = async (name: string) => {
    await page.screenshot({ path: join(ARTIFACTS, `${String(++shot).padStart(2, "0")}-${name}.png`), fullPage: true })
    await axe.check(page, name)
  }

  const sendText = (key: string, idempotencyKey: string) =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key,
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "Hello from the console test" })
    })

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    receiver = await CallbackReceiver.start()
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "100" } })
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "dana@demo.example", PASSWORD)
    page = await openPage(await sharedChromium(plan), server.baseUrl)
  }, 180_000) // a real server and Chromium on a shared 2-core machine

  afterAll(async () => {
    await closePages()
    await server?.dispose()
    await receiver?.stop()
  })

  it("signs in with the labelled fields", async () => {
    await page.goto("/admin")
    await expect.poll(() => page.url()).toContain("/admin/sign-in")
    await audit("sign-in")
    await page.getByLabel("Email").fill("dana@demo.example")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Developer access" }).waitFor()
    await audit("developer-access")
  })

  it("creates a live key with messages:write and resources:read, shown once, that sends a text (202)", async () => {
    await page.getByRole("link", { name: "Create key" }).click()
    await page.getByLabel("Name").fill("console key")
    await page.getByLabel("messages:write").check()
    await page.getByLabel("resources:read").check()
    await page.getByLabel("Live").check()
    await audit("create-key-form")
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByRole("heading", { name: "Key created" }).waitFor()
    await expect(page.getByRole("button", { name: "Copy" }).isVisible()).resolves.toBe(true)
    await expect(page.getByText("it will not be shown again").isVisible()).resolves.toBe(true)
    await audit("key-created")
    const key = (await page.locator("#new-key").textContent()) ?? ""
    expect(key).toMatch(/^parley_live_\w+$/)
    const sent = await sendText(key, "console-key-1")
    expect(sent.status).toBe(202)
    // Shown once: the listing has its prefix, never the key.
    await page.goto("/admin/keys")
    expect(await page.content()).not.toContain(key)
    expect(await page.content()).toContain(key.slice(0, 16))
    consoleKey = key
  })

  it("revokes the key after confirmation; its next API request answers 401", async () => {
    const key = consoleKey
    await page.getByRole("link", { name: "Revoke console key" }).click()
    await page.getByRole("heading", { name: "Revoke key" }).waitFor()
    await audit("revoke-confirmation")
    await page.getByRole("button", { name: "Revoke key" }).click()
    await page.getByText("The key was revoked").waitFor()
    expect((await sendText(key, "console-key-2")).status).toBe(401)
  })

  it("adds a webhook endpoint; a signed delivery reaches the local receiver", async () => {
    await page.getByRole("link", { name: "Events" }).click()
    await page.getByLabel("Endpoint URL").fill(receiver.at("/parley-events"))
    await page.getByLabel("Description (optional)").fill("console test receiver")
    await page.getByRole("button", { name: "Add endpoint" }).click()
    await page.getByRole("heading", { name: "Endpoint added" }).waitFor()
    const secret = (await page.locator("#new-secret").textContent()) ?? ""
    expect(secret).toMatch(/^whsec_/)
    await audit("endpoint-added")
    expect((await sendText(demo.keys.live, "console-webhook-1")).status).toBe(202)
    const delivery = await until(async () => receiver.received.find((r) => r.url.endsWith("/parley-events")), {
      what: "a delivery to the endpoint added in the console"
    })
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(delivery.headers)) if (typeof value === "string") headers[name] = value
    const verified = new Webhook(secret).verify(delivery.body, headers) as { type: string }
    expect(verified.type).toMatch(/^message\./)
    await page.goto("/admin/events")
    await page.getByText("console test receiver").waitFor()
    await audit("events")
  })

  it("changes the sending hours; the API then holds a live text", async () => {
    await page.getByRole("link", { name: "Sending rules" }).click()
    // A window two hours from now, in UTC: the present is outside it.
    const hour = new Date().getUTCHours()
    const window = `${String((hour + 2) % 24).padStart(2, "0")}:00-${String((hour + 3) % 24).padStart(2, "0")}:00`
    await page.getByLabel("Sending hours").fill(window)
    await page.getByLabel("Time zone").fill("UTC")
    await page.getByRole("button", { name: "Save sending rules" }).click()
    await page.getByText("Sending rules saved.").waitFor()
    await audit("sending-rules")
    const held = await sendText(demo.keys.live, "console-held-1")
    expect(held.status).toBe(202)
    const { id } = (await held.json()) as { id: string }
    // A text sent before the change went through (the dispatcher runs: Sent within a few steps of 100 ms);
    // this one must still be waiting after the same time and more.
    const before = await until(async () => {
      const r = await server.fetch("/api/v1/messages?status=Sent,Delivered", { key: demo.keys.live })
      const body = (await r.json()) as { items: ReadonlyArray<unknown> }
      return body.items.length > 0 ? body : undefined
    }, { what: "an earlier text dispatched" })
    expect(before.items.length).toBeGreaterThan(0)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const record = (await (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live })).json()) as { status: string }
    expect(record.status).toBe("Queued")
  })

  it("shows the CRM, the providers and the activity: records with their events, conversations with their messages", async () => {
    await page.getByRole("link", { name: "CRM" }).click()
    await page.getByRole("button", { name: "Connect Zoho CRM" }).waitFor()
    await audit("crm")
    await page.getByRole("link", { name: "Providers" }).click()
    await page.getByRole("heading", { name: "Numbers" }).waitFor()
    await audit("providers")
    // Write-only secrets: a refusal is shown next to its field, a saved account shows "set", never the token.
    await page.getByLabel("Account SID").fill("AC123")
    await page.getByRole("button", { name: "Save Twilio" }).click()
    await page.locator("#field-accountSid-error").waitFor()
    expect(await page.locator("#field-accountSid-error").textContent()).toContain("must be AC followed by 32 hex digits")
    await audit("providers-error")
    const token = "console-test-auth-token-0123456789"
    await page.getByLabel("Account SID").fill(`AC${"0".repeat(32)}`)
    await page.getByLabel("Auth Token").fill(token)
    // An organisation's administrator may not point Twilio's API at an internal address (issue 35, item 16).
    await page.getByLabel("API base (optional)").first().fill("http://127.0.0.1:9")
    await page.getByRole("button", { name: "Save Twilio" }).click()
    await page.locator("#field-twilioApiBase-error").waitFor()
    expect(await page.locator("#field-twilioApiBase-error").textContent()).toContain("must be an https:// URL on twilio.com")
    await page.getByLabel("Auth Token").fill(token)
    // No such host: the held text above must not reach a real Twilio.
    await page.getByLabel("API base (optional)").first().fill("https://parley-console-test.twilio.com")
    await page.getByRole("button", { name: "Save Twilio" }).click()
    await page.getByText("Twilio is set").waitFor()
    expect(await page.content()).not.toContain(token)
    expect(await page.locator("td", { hasText: /^set$/ }).count()).toBe(1)
    // Destructive: a page of its own asks first (issue 33, item 13).
    await page.getByRole("link", { name: "Use the simulator instead of Twilio" }).click()
    await page.getByRole("heading", { name: "Use the simulator instead of Twilio?" }).waitFor()
    await audit("providers-clear-confirm")
    await page.getByRole("button", { name: "Delete the Twilio account" }).click()
    await page.getByText("Back to the simulator").waitFor()
    await page.getByRole("link", { name: "Activity" }).click()
    await page.getByRole("heading", { name: "Messages, newest first" }).waitFor()
    await audit("activity")
    await page.getByLabel("Status").selectOption("Queued")
    await page.getByRole("button", { name: "Search" }).click()
    await page.locator("tbody a").first().click()
    await page.getByRole("heading", { name: "Events" }).waitFor()
    expect(await page.locator("pre").textContent()).toContain("\"status\": \"Queued\"")
    await audit("activity-record")
    await page.getByRole("link", { name: "Back to Activity" }).click()
    await page.getByRole("heading", { name: "Conversations" }).waitFor()
    await page.getByRole("link", { name: "+14155550123" }).first().click()
    await page.getByRole("heading", { name: "Messages, newest first" }).waitFor()
    expect(await page.locator("tbody").textContent()).toContain("Hello from the console test")
    await audit("conversation")
  })

  it("signs out from any page; the console then asks to sign in again", async () => {
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByText("You are signed out.").waitFor()
    await page.goto("/admin/keys")
    await expect.poll(() => page.url()).toContain("/admin/sign-in")
  })

  it("axe-core finds no serious or critical violation on any page", () => {
    expect(axe.audited.length).toBeGreaterThanOrEqual(14)
    expect(axe.violations).toEqual([])
  })
})
