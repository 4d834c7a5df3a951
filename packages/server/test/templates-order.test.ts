/**
 * GET /templates lists names in the order people read them — case-insensitive, accents beside their
 * letter, numbers by value (the Unicode root collation) — not by byte, on both stores; and that order
 * decides which 200 templates are listed.
 */
import { afterEach, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { readJson } from "./support/wire.js"

interface TemplateList {
  readonly items: ReadonlyArray<{ readonly id: string; readonly name: string }>
}

let server: TestServer | undefined

afterEach(async () => {
  await server?.dispose()
  server = undefined
})

const start = async (): Promise<{ server: TestServer; demo: DemoSummary }> => {
  server = await TestServer.start()
  return { server, demo: await server.demo() }
}

const insertTemplates = async (server: TestServer, orgId: string, names: ReadonlyArray<string>) => {
  for (const [index, name] of names.entries()) {
    await server.db.query(
      "INSERT INTO templates (org_id, id, crm_id, record_type, name, body) VALUES (?, ?, ?, ?, ?, ?)",
      [orgId, `order-${index}`, String(800_000 + index), null, name, `Body of ${name}`]
    )
  }
}

const listed = async (server: TestServer, key: string) =>
  (await readJson<TemplateList>(await server.fetch("/api/v1/templates", { key }), 200)).items.map((t) => t.name)

describe("GET /templates order", () => {
  it("orders names as people read them, not by byte", async () => {
    const { demo, server } = await start()
    // The demo has "Appointment reminder", "Follow-up" and "Welcome".
    await insertTemplates(server, demo.orgId, ["Zed", "alpha", "Émile", "beta", "Step 10", "Step 2", "Alpha", "emile", "Ångström"])
    expect(await listed(server, demo.keys.live)).toEqual([
      "alpha",
      "Alpha",
      "Ångström",
      "Appointment reminder",
      "beta",
      "emile",
      "Émile",
      "Follow-up",
      "Step 2",
      "Step 10",
      "Welcome",
      "Zed"
    ])
  })

  it("lists the first 200 in that order: a lower-case name is not pushed out by 200 capitalised ones", async () => {
    const { demo, server } = await start()
    const capitalised = Array.from({ length: 200 }, (_, i) => `Zone ${String(i).padStart(3, "0")}`)
    await insertTemplates(server, demo.orgId, [...capitalised, "alpha"])
    const names = await listed(server, demo.keys.live)
    expect(names).toHaveLength(200)
    // By byte every "Z…" (0x5A) comes before "alpha" (0x61), and "alpha" would not be listed at all.
    expect(names.slice(0, 4)).toEqual(["alpha", "Appointment reminder", "Follow-up", "Welcome"])
    expect(names.at(-1)).toBe("Zone 195")
  })
})
