/**
 * Developer access in Chromium (issue 33, item 10), on the store this run tests: paging and searching through
 * 120 keys, restrictions shown by number and bot name, a key created and shown once (a reload shows it no more
 * and makes no second key), renamed, rolled with a 1 hour overlap (the old key answering the API until its
 * expiry, then refused), and a message's `sentBy` leading to its key. axe-core on every page and state.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Axe, chromiumPlan, closePages, openPage, sharedChromium, signInWithForm } from "./support/browser.js"
import { addAdmin } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const plan = chromiumPlan("the Developer access browser tests")

const PASSWORD = "a long passphrase for developer access"
const BULK = 120

describe.skipIf(plan.kind !== "ready")("Developer access in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let page: Page
  let token = ""
  let rolledToken = ""
  const axe = new Axe()

  const status = async (key: string) => (await server.fetch("/api/v1/numbers", { key })).status

  /** The names in the keys table of the page shown now. */
  const listedNames = () => page.locator("main table tbody tr td:first-child a").allInnerTexts()

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "dev@demo.example", PASSWORD)
    // 120 keys written straight into the store (their secrets are never used): the first restricted to the
    // Sales line and the Sales qualifier bot, to see them named.
    for (let i = 1; i <= BULK; i++) {
      const n = String(i).padStart(3, "0")
      await server.db.query(
        "INSERT INTO api_keys (id, org_id, name, mode, hash, prefix, scopes, number_sids, bot_ids, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
          `key_bulk${n}`, demo.orgId, `bulk key ${n}`, "test", `${"0".repeat(61)}${n}`, `parley_test_b${n}`, "[\"messages:read\"]",
          i === 1 ? `["${demo.numbers[0]?.sid ?? ""}"]` : "[]", i === 1 ? "[\"bot_sales\"]" : "[]",
          new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), null, null
        ]
      )
    }
    page = await openPage(await sharedChromium(plan), server.baseUrl)
    await signInWithForm(page, "dev@demo.example", PASSWORD, "Developer access")
  }, 180_000)

  afterAll(async () => {
    await closePages()
    await server?.dispose()
  })

  it("pages through every key, 25 at a time, each once; restrictions are named", async () => {
    await axe.check(page, "developer-access")
    const seen: Array<string> = []
    for (let pages = 1; ; pages++) {
      const names = await listedNames()
      expect(names.length).toBeLessThanOrEqual(25)
      seen.push(...names)
      const older = page.getByRole("link", { name: "Older keys" })
      if ((await older.count()) === 0) {
        expect(pages).toBe(5)
        break
      }
      await older.click()
      await page.getByRole("link", { name: "Newest keys" }).waitFor()
      if (pages === 1) await axe.check(page, "developer-access-page-2")
    }
    expect(seen).toHaveLength(BULK + 2)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.filter((n) => n.startsWith("bulk key"))).toHaveLength(BULK)
    const first = page.locator("main tbody tr", { hasText: "bulk key 001" })
    const row = await first.innerText()
    expect(row).toContain(`${demo.numbers[0]?.phoneNumber} (Sales line)`)
    expect(row).toContain("Sales qualifier")
    expect(row).not.toContain("bot_sales")
  })

  it("searches by name and by prefix", async () => {
    await page.goto("/admin/keys")
    await page.getByLabel("Name or prefix contains").fill("BULK KEY 07")
    await page.getByRole("button", { name: "Search keys" }).click()
    await page.waitForURL(/q=BULK/)
    expect((await listedNames()).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `bulk key 07${i}`))
    await axe.check(page, "developer-access-search")
    await page.getByLabel("Name or prefix contains").fill("parley_test_b119")
    await page.getByRole("button", { name: "Search keys" }).click()
    await page.waitForURL(/q=parley_test_b119/)
    expect(await listedNames()).toEqual(["bulk key 119"])
    await page.getByLabel("Name or prefix contains").fill("100%")
    await page.getByRole("button", { name: "Search keys" }).click()
    await page.getByText("No keys found.").waitFor()
    await axe.check(page, "developer-access-no-match")
  })

  it("creates a key shown once: a reload shows it no more and makes no second key", async () => {
    await page.goto("/admin/keys")
    await page.getByRole("link", { name: "Create key" }).click()
    await page.getByLabel("Name").fill("n".repeat(101))
    await page.getByLabel("messages:write").check()
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByText("at most 100 characters (this one has 101)").waitFor()
    await axe.check(page, "create-key-name-too-long")
    await page.getByLabel("Name").fill("browser key")
    await page.getByLabel("resources:read").check()
    await page.getByLabel("Live").check()
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByRole("heading", { name: "Key created" }).waitFor()
    await axe.check(page, "key-created")
    token = (await page.locator("#new-key").textContent()) ?? ""
    expect(token).toMatch(/^parley_live_\w+$/)
    await page.reload()
    await page.getByRole("heading", { name: "Key already shown" }).waitFor()
    expect(await page.content()).not.toContain(token)
    await axe.check(page, "key-already-shown")
    await page.goto("/admin/keys?q=browser+key")
    expect(await listedNames()).toEqual(["browser key"])
    expect(await status(token)).toBe(200)
  })

  it("renames the key on its page", async () => {
    await page.getByRole("link", { name: /^browser key/ }).click()
    await page.getByRole("heading", { name: "Key browser key" }).waitFor()
    await axe.check(page, "key-page")
    await page.getByLabel("Name", { exact: true }).fill("browser key renamed")
    await page.getByRole("button", { name: "Save name" }).click()
    await page.getByText("The key was renamed.").waitFor()
    await page.getByRole("heading", { name: "Key browser key renamed" }).waitFor()
    await axe.check(page, "key-renamed")
  })

  it("rolls the key with a 1 hour overlap: both work, then the old one is refused after its expiry", async () => {
    await page.getByLabel("In 1 hour").check()
    await page.getByRole("button", { name: "Roll key" }).click()
    await page.getByRole("heading", { name: "Key rolled" }).waitFor()
    await axe.check(page, "key-rolled")
    rolledToken = (await page.locator("#new-key").textContent()) ?? ""
    expect(rolledToken).toMatch(/^parley_live_\w+$/)
    expect(rolledToken).not.toBe(token)
    expect(await page.locator("main").innerText()).toContain("The old secret works until")
    expect(await status(rolledToken)).toBe(200)
    expect(await status(token)).toBe(200)
    // Both keys now carry the name; the old one's row shows its expiry.
    await page.goto("/admin/keys?q=browser+key+renamed")
    expect(await listedNames()).toEqual(["browser key renamed", "browser key renamed"])
    const expiries = await page.locator("main tbody tr td:nth-child(9)").allInnerTexts()
    expect(expiries.filter((e) => e === "never")).toHaveLength(1)
    await axe.check(page, "developer-access-after-roll")
    // The overlap running out (an hour is too long to wait): its end brought to 1.5 s from now.
    const id = /key_\w+/.exec(await page.locator("main tbody tr").nth(1).locator("a").first().getAttribute("href") ?? "")?.[0] ?? ""
    const expiresAt = Date.now() + 1_500
    await server.db.query("UPDATE api_keys SET expires_at = ? WHERE id = ?", [new Date(expiresAt).toISOString(), id])
    expect(await status(token)).toBe(200)
    // Until just past the expiry (the server reads the same clock), not a fixed two seconds.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt + 100 - Date.now())))
    expect(await status(token)).toBe(401)
    expect(await status(rolledToken)).toBe(200)
    await page.reload()
    expect(await page.locator("main tbody tr").nth(1).innerText()).toContain("expired")
  })

  it("a message's sentBy leads to its key", async () => {
    const sent = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: rolledToken,
      headers: { "idempotency-key": "keys-browser-1" },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: "Sent with the rolled key" })
    })
    expect(sent.status).toBe(202)
    const { id } = (await sent.json()) as { id: string }
    await page.getByRole("link", { name: "Activity" }).click()
    await page.getByRole("heading", { name: "Activity" }).waitFor()
    await page.getByRole("link", { name: id, exact: true }).click()
    await page.getByRole("heading", { name: `Message ${id}` }).waitFor()
    await axe.check(page, "message-record")
    await page.getByRole("link", { name: /^browser key renamed \(parley_live_/ }).click()
    await page.getByRole("heading", { name: "Key browser key renamed" }).waitFor()
    expect(await page.locator("main").innerText()).toContain(rolledToken.slice(0, 16))
    await axe.check(page, "key-from-sent-by")
  })

  it("axe finds no serious or critical violation on any page", () => {
    expect(axe.audited.length).toBeGreaterThanOrEqual(12)
    expect(axe.violations).toEqual([])
  })
})
