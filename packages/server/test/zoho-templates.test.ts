/**
 * Templates and merge fields of an organisation connected to Zoho CRM (issue 31, items 6 and 7): more
 * than 200 `Parley_Templates` records list the first 200 in the embedded CRM's order and every one of
 * them can be sent; merge fields on lookups, owners and the sender fill as Zoho's own merge does. A real
 * server on both stores against the Zoho fake.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { templateUuid } from "../src/crm/zoho/ZohoSchema.js"
import type { ZohoFake } from "./support/fakes/ZohoFake.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { HEAVY, idempotencyKey, sendText, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

describe("Zoho CRM templates and merge fields", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  const send = async (body: Record<string, unknown>) => {
    const response = await sendText(server, demo.keys.live, body, idempotencyKey("zoho-templates"))
    const text = await response.text()
    return { status: response.status, json: JSON.parse(text) as { id?: string; body?: string; error?: { code: string; message: string } }, text }
  }
  const template = (name: string, body: string, recordType = "-None-") => {
    const id = zoho.addRecord("Parley_Templates", { Name: name, Body: body, Record_Type: recordType })
    return templateUuid(demo.orgId, id)
  }

  beforeAll(async () => {
    suite = await startZohoSuite()
    ;({ zoho, server, demo } = suite)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("more than 200 templates: the first 200 as users read them (Step 2 before Step 10), and any can be sent", async () => {
    // Added in a shuffled order, so neither Zoho's order nor the ids give the expected one.
    const numbers = Array.from({ length: 250 }, (_, i) => i + 1).sort((a, b) => ((a * 7919) % 251) - ((b * 7919) % 251))
    const uuids = new Map<number, string>()
    for (const n of numbers) uuids.set(n, template(`Step ${n}`, `This is step ${n}`))
    const list = (await (await server.fetch("/api/v1/templates", { key: demo.keys.live })).json()) as { items: Array<{ id: string; name: string }> }
    expect(list.items.map((t) => t.name)).toEqual(Array.from({ length: 200 }, (_, i) => `Step ${i + 1}`))
    expect(list.items[1]?.id).toBe(uuids.get(2))
    // Step 250 is not listed, and still a template of the organisation.
    const last = await send({ templateUuid: uuids.get(250) })
    expect(last.status, last.text).toBe(202)
    expect(zoho.records.get("Parley_Messages")?.get(last.json.id ?? "")?.["Body"]).toBe("This is step 250")
  }, HEAVY)

  it("merge fields on lookups, owners and the sender fill as Zoho's merge does; an empty known field merges as nothing", async () => {
    const owner = { name: "Olga Owner", id: "5725767000000412009", email: "olga@acme.test" }
    const lead = zoho.addRecord("Leads", { First_Name: "Grace", Last_Name: "Hopper", Full_Name: "Grace Hopper", Phone: "+14155550123", Owner: owner })
    const account = zoho.addRecord("Accounts", { Account_Name: "Hopper Ltd" })
    const contact = zoho.addRecord("Contacts", { First_Name: "Grace", Full_Name: "Grace Hopper", Account_Name: { name: "Hopper Ltd", id: account }, Owner: owner })
    const deal = zoho.addRecord("Deals", { Deal_Name: "Big deal", Contact_Name: { name: "Grace Hopper", id: contact }, Owner: owner })
    const written = (id: string | undefined) => zoho.records.get("Parley_Messages")?.get(id ?? "")?.["Body"]

    const leadTemplate = template(
      "merge lead",
      "Hi ${Leads.First Name}, ${User.First Name} here (${User.Full Name}); your owner is ${Leads.Lead Owner}. Company: [${Leads.Company}]",
      "Leads"
    )
    const contactTemplate = template("merge contact", "${Contacts.First Name} of ${Contacts.Account Name}")
    const dealTemplate = template("merge deal", "${Deals.Deal Name} for ${Deals.Contact Name}, owned by ${Deals.Deal Owner}")
    const unknownTemplate = template("merge unknown", "Hi ${Leads.Favourite Colour}")
    const senderUnknownTemplate = template("merge user unknown", "From ${User.Shoe Size}")
    // Templates made in Zoho after Parley's last read are found once that read is 5 seconds old (an unknown
    // templateUuid re-reads the list at most that often).
    await new Promise((resolve) => setTimeout(resolve, 5_100))
    const toLead = await send({ templateUuid: leadTemplate, record: { module: "Leads", id: lead } })
    expect(toLead.status, toLead.text).toBe(202)
    expect(written(toLead.json.id)).toBe("Hi Grace, Ada here (Ada Admin); your owner is Olga Owner. Company: []")

    const toContact = await send({ templateUuid: contactTemplate, record: { module: "Contacts", id: contact } })
    expect(toContact.status, toContact.text).toBe(202)
    expect(written(toContact.json.id)).toBe("Grace of Hopper Ltd")

    const toDeal = await send({ templateUuid: dealTemplate, record: { module: "Deals", id: deal } })
    expect(toDeal.status, toDeal.text).toBe(202)
    expect(written(toDeal.json.id)).toBe("Big deal for Grace Hopper, owned by Olga Owner")

    // A field the module does not have, or a sender field Zoho has no merge for, is still refused, naming it.
    const unknown = await send({ templateUuid: unknownTemplate, record: { module: "Leads", id: lead } })
    expect(unknown.status).toBe(400)
    expect(unknown.json.error?.message).toContain("${Leads.Favourite Colour}")
    const noSender = await send({ templateUuid: senderUnknownTemplate, record: { module: "Leads", id: lead } })
    expect(noSender.status).toBe(400)
  }, HEAVY)
})
