/**
 * `GET /templates` while Zoho is down (issue 31, item 11): the last list Parley read is served, with its age
 * in seconds in the `Age` header, instead of 502; once Zoho answers again the list is read in the background
 * and the next request sees the new one. The template cache is shortened to a few seconds
 * (PARLEY_ZOHO_TEMPLATE_CACHE_MS) so that the test waits it out once in seconds, not a minute; the default's
 * value is checked in config.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ZohoFake } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const HEAVY = 240_000
/** Long enough for the first list to be read and checked while it is still fresh. */
const TEMPLATE_CACHE_MS = 3_000

describe("Zoho templates while Zoho is down", () => {
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    zoho = await ZohoFake.start()
    server = await TestServer.start({
      env: {
        PARLEY_ZOHO_CLIENT_ID: zoho.clientId,
        PARLEY_ZOHO_CLIENT_SECRET: zoho.clientSecret,
        PARLEY_ZOHO_ACCOUNTS_URL: zoho.url,
        PARLEY_ZOHO_TEMPLATE_CACHE_MS: String(TEMPLATE_CACHE_MS)
      }
    })
    demo = await server.demo()
    const started = await server.adminJson<{ url: string }>(["crm", "connect", demo.orgId, "--provider", "zoho"])
    const consent = await fetch(started.url, { redirect: "manual" })
    const callback = await fetch(consent.headers.get("location") ?? "")
    expect(callback.status, await callback.text()).toBe(200)
    const setup = await server.admin(["crm", "setup", demo.orgId])
    expect(setup.code, setup.stderr).toBe(0)
  }, HEAVY)

  afterAll(async () => {
    await server?.dispose()
    await zoho?.stop()
  })

  const list = async () => {
    const response = await server.fetch("/api/v1/templates", { key: demo.keys.live })
    const body = await response.text()
    return { status: response.status, age: response.headers.get("age"), body, names: response.status === 200 ? (JSON.parse(body) as { items: Array<{ name: string }> }).items.map((t) => t.name) : [] }
  }

  it("serves the last list read, saying how old, and reads it again once Zoho is back", async () => {
    zoho.addRecord("Parley_Templates", { Name: "Welcome", Body: "Hi", Record_Type: "-None-" })
    const fresh = await list()
    expect(fresh.status, fresh.body).toBe(200)
    expect(fresh.names).toEqual(["Welcome"])
    expect(Number(fresh.age)).toBeLessThan(5)

    await zoho.down()
    try {
      await new Promise((resolve) => setTimeout(resolve, TEMPLATE_CACHE_MS + 1_000))
      const stale = await list()
      expect(stale.status, stale.body).toBe(200)
      expect(stale.names).toEqual(["Welcome"])
      expect(Number(stale.age)).toBeGreaterThanOrEqual(TEMPLATE_CACHE_MS / 1000)
      // Asked again while Zoho is still down: the same list at once.
      const again = await list()
      expect(again).toMatchObject({ status: 200, names: ["Welcome"] })
    } finally {
      await zoho.up()
    }
    zoho.addRecord("Parley_Templates", { Name: "Reminder", Body: "See you", Record_Type: "-None-" })
    const renewed = await until(async () => {
      const r = await list()
      return r.names.includes("Reminder") ? r : undefined
    }, { timeoutMs: 30_000, what: "the list read again in the background" })
    expect(renewed.names).toEqual(["Reminder", "Welcome"])
    expect(Number(renewed.age)).toBeLessThan(TEMPLATE_CACHE_MS / 1000)
  }, HEAVY)
})
