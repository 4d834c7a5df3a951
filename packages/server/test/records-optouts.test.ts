/**
 * The built-in CRM shows the opt-out state on its records (issue 32, the CRM paragraph), on the store the run
 * names: `parley records list` prints each record's opted-out channels (`OPT-OUT`, `-` when none) and `--json`
 * carries them as `optedOut`, following the list as it changes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

interface Listed {
  readonly items: ReadonlyArray<{ readonly id: string; readonly phone: string | null; readonly optedOut: ReadonlyArray<string> }>
}

describe("built-in CRM records and the opt-out list", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
  }, 120_000)

  afterAll(async () => {
    await server?.dispose()
  })

  const admin = async (args: ReadonlyArray<string>) => {
    const result = await server.admin(args)
    expect(result.code, result.stderr).toBe(0)
    return result.stdout
  }
  const listed = async () => (await server.adminJson<Listed>(["records", "list", "--org", demo.orgId])).items

  it("records list shows the channels a record's number is opted out of, and nothing once it opts back in", async () => {
    const phone = "+14155550161"
    await admin(["records", "add", "--org", demo.orgId, "--module", "Contacts", "--id", "c-optout", "--name", "Opted Out", "--phone", phone])
    await admin(["records", "add", "--org", demo.orgId, "--module", "Leads", "--id", "l-nophone", "--name", "No Phone"])
    await admin(["optouts", "add", "--org", demo.orgId, "--phone", phone, "--channels", "SMS,Call"])

    const rows = await listed()
    expect(rows.find((r) => r.id === "c-optout")).toMatchObject({ phone, optedOut: ["SMS", "Call"] })
    expect(rows.find((r) => r.id === "l-nophone")).toMatchObject({ phone: null, optedOut: [] })
    const printed = await admin(["records", "list", "--org", demo.orgId])
    expect(printed).toContain("OPT-OUT")
    expect(printed.split("\n").find((line) => line.includes("c-optout"))).toContain("SMS,Call")

    await admin(["optouts", "remove", "--org", demo.orgId, "--phone", phone])
    expect((await listed()).find((r) => r.id === "c-optout")).toMatchObject({ optedOut: [] })
  }, 120_000)
})
