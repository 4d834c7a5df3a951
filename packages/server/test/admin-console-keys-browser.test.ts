/**
 * Developer access in Chromium (issue 33, item 10), on the store this run tests: paging and searching through
 * 120 keys, restrictions shown by number and bot name, a key created and shown once (a reload shows it no more
 * and makes no second key), renamed, rolled with a 1 hour overlap (the old key answering the API until its
 * expiry, then refused), and a message's `sentBy` leading to its key. axe-core on every page and state.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHROMIUM_ARGS, findChromium } from "./support/chromium.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")
const plan = findChromium()
if (plan.kind === "missing" && process.env["CI"] === "true") throw new Error(`The console's browser tests need Chromium: ${plan.reason}`)

const PASSWORD = "a long passphrase for developer access"
const BULK = 120

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly page: string
}

describe.skipIf(plan.kind !== "ready")("Developer access in Chromium", { timeout: 180_000 }, () => {
  let server: TestServer
  let demo: DemoSummary
  let browser: Browser
  let page: Page
  let token = ""
  let rolledToken = ""
  const violations: Array<Violation> = []
  const audited: Array<string> = []

  const axe = async (name: string) => {
    // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
    await page.evaluate(AXE_SOURCE)
    const found = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))"
    )) as ReadonlyArray<Omit<Violation, "page">>
    audited.push(name)
    violations.push(...found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ ...v, page: name })))
  }

  const status = async (key: string) => (await server.fetch("/api/v1/numbers", { key })).status

  /** The names in the keys table of the page shown now. */
  const listedNames = () => page.locator("main table tbody tr td:first-child a").allInnerTexts()

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "dev@demo.example", "--password-stdin"], {
      input: `${PASSWORD}\n`
    })
    expect(created.code, created.stderr).toBe(0)
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
    browser = await chromium.launch({ executablePath: plan.kind === "ready" ? plan.path : "", headless: true, args: CHROMIUM_ARGS })
    page = await (await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })).newPage()
    page.setDefaultTimeout(90_000)
    await page.goto("/admin/sign-in")
    await page.getByLabel("Email").fill("dev@demo.example")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Developer access" }).waitFor()
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await server?.dispose()
  })

  it("pages through every key, 25 at a time, each once; restrictions are named", async () => {
    await axe("developer-access")
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
      if (pages === 1) await axe("developer-access-page-2")
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
    await axe("developer-access-search")
    await page.getByLabel("Name or prefix contains").fill("parley_test_b119")
    await page.getByRole("button", { name: "Search keys" }).click()
    await page.waitForURL(/q=parley_test_b119/)
    expect(await listedNames()).toEqual(["bulk key 119"])
    await page.getByLabel("Name or prefix contains").fill("100%")
    await page.getByRole("button", { name: "Search keys" }).click()
    await page.getByText("No keys found.").waitFor()
    await axe("developer-access-no-match")
  })

  it("creates a key shown once: a reload shows it no more and makes no second key", async () => {
    await page.goto("/admin/keys")
    await page.getByRole("link", { name: "Create key" }).click()
    await page.getByLabel("Name").fill("n".repeat(101))
    await page.getByLabel("messages:write").check()
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByText("at most 100 characters (this one has 101)").waitFor()
    await axe("create-key-name-too-long")
    await page.getByLabel("Name").fill("browser key")
    await page.getByLabel("resources:read").check()
    await page.getByLabel("Live").check()
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByRole("heading", { name: "Key created" }).waitFor()
    await axe("key-created")
    token = (await page.locator("#new-key").textContent()) ?? ""
    expect(token).toMatch(/^parley_live_\w+$/)
    await page.reload()
    await page.getByRole("heading", { name: "Key already shown" }).waitFor()
    expect(await page.content()).not.toContain(token)
    await axe("key-already-shown")
    await page.goto("/admin/keys?q=browser+key")
    expect(await listedNames()).toEqual(["browser key"])
    expect(await status(token)).toBe(200)
  })

  it("renames the key on its page", async () => {
    await page.getByRole("link", { name: /^browser key/ }).click()
    await page.getByRole("heading", { name: "Key browser key" }).waitFor()
    await axe("key-page")
    await page.getByLabel("Name", { exact: true }).fill("browser key renamed")
    await page.getByRole("button", { name: "Save name" }).click()
    await page.getByText("The key was renamed.").waitFor()
    await page.getByRole("heading", { name: "Key browser key renamed" }).waitFor()
    await axe("key-renamed")
  })

  it("rolls the key with a 1 hour overlap: both work, then the old one is refused after its expiry", async () => {
    await page.getByLabel("In 1 hour").check()
    await page.getByRole("button", { name: "Roll key" }).click()
    await page.getByRole("heading", { name: "Key rolled" }).waitFor()
    await axe("key-rolled")
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
    await axe("developer-access-after-roll")
    // The overlap running out (an hour is too long to wait): its end brought to 1.5 s from now.
    const id = /key_\w+/.exec(await page.locator("main tbody tr").nth(1).locator("a").first().getAttribute("href") ?? "")?.[0] ?? ""
    await server.db.query("UPDATE api_keys SET expires_at = ? WHERE id = ?", [new Date(Date.now() + 1_500).toISOString(), id])
    expect(await status(token)).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 2_000))
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
    await axe("message-record")
    await page.getByRole("link", { name: /^browser key renamed \(parley_live_/ }).click()
    await page.getByRole("heading", { name: "Key browser key renamed" }).waitFor()
    expect(await page.locator("main").innerText()).toContain(rolledToken.slice(0, 16))
    await axe("key-from-sent-by")
  })

  it("axe finds no serious or critical violation on any page", () => {
    expect(audited.length).toBeGreaterThanOrEqual(12)
    expect(violations).toEqual([])
  })
})
