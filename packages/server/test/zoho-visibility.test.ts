/**
 * Who in the Zoho organisation sees Parley's modules (issue 31, item 12), against the Zoho fake that enforces
 * profiles as Zoho does (a module is visible to a user only if it is accessible to the user's profile and that
 * profile has View on it). After `crm setup`, a rep of the Standard profile reads Parley_Messages and
 * Parley_Templates but cannot edit them; an administrator edits; a profile that reads neither Leads nor
 * Contacts sees nothing. Where Zoho refuses the changes, `crm setup` says exactly what to set, where.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ZohoFake } from "./support/fakes/ZohoFake.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { connectZoho, HEAVY, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const STANDARD = "5725767000000026014"
const PORTAL = { id: "5725767000000026020", name: "Vendor Portal" }
const REP = { id: "5725767000000412002", zuid: "800000002", full_name: "Rita Rep", email: "rita@acme.test", profile: { name: "Standard", id: STANDARD } }
const VENDOR = { id: "5725767000000412003", zuid: "800000003", full_name: "Victor Vendor", email: "victor@acme.test", profile: { name: PORTAL.name, id: PORTAL.id } }

describe("Zoho: who sees Parley's modules", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  /** A call to the fake as one of its users, as that user's own Zoho session would make it. */
  const as = (zuid: string, method: string, path: string, body?: unknown) =>
    fetch(`${zoho.url}/crm/v8${path}`, {
      method,
      headers: { authorization: `Zoho-oauthtoken ${zoho.tokenFor(zuid)}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  beforeAll(async () => {
    suite = await startZohoSuite({
      connect: false,
      prepare: (fake) => {
        fake.addUser(REP)
        fake.addUser(VENDOR)
        fake.addProfile(PORTAL, ["Vendors"])
      }
    })
    ;({ zoho, server, demo } = suite)
    const callback = await connectZoho(server, demo.orgId)
    expect(callback.status, callback.html).toBe(200)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("crm setup: every profile that reads Leads or Contacts sees both modules (read-only), administrators edit, the others see nothing", async () => {
    const setup = await server.admin(["crm", "setup", demo.orgId, "--json"])
    expect(setup.code, setup.stderr).toBe(0)
    const report = JSON.parse(setup.stdout) as { created: Array<string>; byHand: Array<string> }
    expect(report.byHand).toEqual([])
    for (const module of ["Parley_Messages", "Parley_Templates"]) {
      expect([...zoho.profilesOf(module)].sort()).toEqual(["5725767000000026011", STANDARD].sort())
    }
    const record = { data: [{ Name: "by hand", Body: "hi" }], trigger: [] }

    // The rep: sees the module in the list and reads its records; cannot create or edit them.
    const modules = (await (await as(REP.zuid, "GET", "/settings/modules")).json()) as { modules: Array<{ api_name: string; viewable: boolean; creatable: boolean }> }
    expect(modules.modules.find((m) => m.api_name === "Parley_Messages")).toMatchObject({ viewable: true, creatable: false })
    expect(modules.modules.find((m) => m.api_name === "Parley_Templates")).toMatchObject({ viewable: true, creatable: false })
    expect([200, 204]).toContain((await as(REP.zuid, "GET", "/Parley_Messages")).status)
    expect([200, 204]).toContain((await as(REP.zuid, "GET", "/Parley_Templates")).status)
    const refused = (await (await as(REP.zuid, "POST", "/Parley_Templates", record)).json()) as { data: Array<{ code: string }> }
    expect(refused.data[0]?.code).toBe("NO_PERMISSION")

    // The administrator (the connected user) edits templates.
    const made = (await (await as("800000001", "POST", "/Parley_Templates", record)).json()) as { data: Array<{ status: string }> }
    expect(made.data[0]?.status).toBe("success")

    // A profile that reads neither Leads nor Contacts sees neither module.
    expect((await as(VENDOR.zuid, "GET", "/Parley_Messages")).status).toBe(403)
    expect((await as(VENDOR.zuid, "GET", "/Parley_Templates")).status).toBe(403)

    // Run again: nothing more to do.
    const again = JSON.parse((await server.admin(["crm", "setup", demo.orgId, "--json"])).stdout) as { created: Array<string>; byHand: Array<string> }
    expect(again).toMatchObject({ created: [], byHand: [] })
  }, HEAVY)

  it("a module made visible to one profile only (an earlier set-up) is opened to the readers; where Zoho refuses, setup says what to set where", async () => {
    // As an earlier `crm setup` left it: the administrators alone.
    const messages = zoho.modules.get("Parley_Messages")
    expect(messages).toBeDefined()
    const adminOnly = await as("800000001", "PUT", "/settings/modules/Parley_Messages", {
      modules: [{ singular_label: "Parley Message", plural_label: "Parley Messages", profiles: [{ id: "5725767000000026011" }] }]
    })
    expect(adminOnly.status).toBe(200)
    expect((await as(REP.zuid, "GET", "/Parley_Messages")).status).toBe(403)

    // Zoho refuses profile changes to this user: the report names the profile, the module and the permissions.
    zoho.profilesWritable = false
    const refused = await server.admin(["crm", "setup", demo.orgId, "--json"])
    expect(refused.code).toBe(1)
    const report = JSON.parse(refused.stdout) as { byHand: Array<string> }
    expect(report.byHand.join("\n")).toContain(`Give the profiles "Standard" access to the module "Parley Messages"`)
    expect(report.byHand.join("\n")).toContain(
      `Setup → Users and Control → Security Control → Profiles → "Standard" → Module-Level Permissions: "Parley Templates" and "Parley Messages": View only (not Create, Edit or Delete)`
    )
    expect((await as(REP.zuid, "GET", "/Parley_Messages")).status).toBe(403)

    // Allowed again: setup opens the module to the readers, read-only.
    zoho.profilesWritable = true
    const fixed = await server.admin(["crm", "setup", demo.orgId, "--json"])
    expect(fixed.code, fixed.stderr).toBe(0)
    expect((await as(REP.zuid, "GET", "/Parley_Messages")).status).not.toBe(403)
    const write = (await (await as(REP.zuid, "POST", "/Parley_Messages", { data: [{ Name: "x" }] })).json()) as { data: Array<{ code: string }> }
    expect(write.data[0]?.code).toBe("NO_PERMISSION")
  }, HEAVY)
})
