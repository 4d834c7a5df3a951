/**
 * Consent in Zoho (issue 32, the CRM paragraph), on the store the run names, against the Zoho fake (strict about
 * checkboxes: a `boolean` field takes only true or false, and a standard module refuses a field it does not
 * have, as one `crm setup` never made):
 * - `crm setup` adds the checkboxes `Parley_SMS_Opt_Out` and `Parley_Call_Opt_Out` on Leads and Contacts;
 * - an opt-out recorded (here by an administrator's CLI) ticks the boxes on every Lead and Contact with that
 *   number, in any phone field, and lifting it clears them, through the durable outbox: a Zoho outage delays
 *   the write, never loses it; boxes deleted in Zoho make the sync wait (the connection's last error says to
 *   run `crm setup`) and `crm setup` lets it through;
 * - a box an administrator ticked in Zoho refuses a send that links the record (403 RECIPIENT_OPTED_OUT) and
 *   puts the number on the list (source `crm`), so the next, unlinked send is refused too; a test key hears the
 *   same refusal and changes nothing; a box Parley is about to clear (a START not yet written) does not refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ZohoFake } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { adminOk, HEAVY, idempotencyKey, sendText, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const SMS_BOX = "Parley_SMS_Opt_Out"
const CALL_BOX = "Parley_Call_Opt_Out"

interface Listed {
  readonly items: ReadonlyArray<{ readonly phone: string; readonly channels: ReadonlyArray<string>; readonly source: string; readonly cause: string | null }>
}

describe("Zoho: opt-out checkboxes", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  const record = (module: string, id: string) => zoho.records.get(module)?.get(id)
  const boxesOf = (module: string, id: string) => {
    const found = record(module, id)
    return { sms: found?.[SMS_BOX], call: found?.[CALL_BOX] }
  }
  const listed = (phone: string) => server.adminJson<Listed>(["optouts", "list", "--org", demo.orgId, "--phone", phone])
  const pending = async (phone: string) =>
    (await server.db.query<{ phone: string }>("SELECT phone FROM zoho_optout_syncs WHERE org_id = ? AND phone = ?", [demo.orgId, phone])).length
  const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error

  beforeAll(async () => {
    suite = await startZohoSuite({ env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "10000" } })
    ;({ zoho, server, demo } = suite)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("crm setup adds both checkboxes (Zoho's `boolean` type) on Leads and Contacts, and finds them the second time", async () => {
    for (const module of ["Leads", "Contacts"]) {
      const fields = zoho.modules.get(module)?.fields ?? []
      for (const box of [SMS_BOX, CALL_BOX]) {
        expect(fields.find((f) => f.api_name === box), `${module}.${box}`).toMatchObject({ data_type: "boolean" })
      }
    }
    const again = await server.adminJson<{ created: ReadonlyArray<string>; existing: ReadonlyArray<string> }>(["crm", "setup", demo.orgId])
    expect(again.existing).toEqual(expect.arrayContaining([`field Leads.${SMS_BOX}`, `field Contacts.${CALL_BOX}`]))
    expect(again.created.filter((c) => c.includes("Opt_Out"))).toEqual([])
  }, HEAVY)

  it("an opt-out ticks the boxes of its channels on every Lead and Contact with the number; lifting it clears them", async () => {
    const phone = "+14155550111"
    const lead = zoho.addRecord("Leads", { Full_Name: "Ada Lovelace", Last_Name: "Lovelace", Phone: phone })
    const contact = zoho.addRecord("Contacts", { Full_Name: "Ada L.", Last_Name: "L.", Mobile: phone })
    const other = zoho.addRecord("Leads", { Full_Name: "Grace Hopper", Last_Name: "Hopper", Phone: "+14155550112" })
    await adminOk(server, ["optouts", "add", "--org", demo.orgId, "--phone", phone, "--channels", "SMS"])
    await until(async () => (boxesOf("Leads", lead).sms === true && boxesOf("Contacts", contact).sms === true ? true : undefined), {
      what: "the SMS boxes ticked"
    })
    expect(boxesOf("Leads", lead)).toEqual({ sms: true, call: false })
    expect(boxesOf("Contacts", contact)).toEqual({ sms: true, call: false })
    expect(boxesOf("Leads", other)).toEqual({ sms: undefined, call: undefined })
    await until(async () => ((await pending(phone)) === 0 ? true : undefined), { what: "the outbox emptied" })

    await adminOk(server, ["optouts", "remove", "--org", demo.orgId, "--phone", phone])
    await until(async () => (boxesOf("Leads", lead).sms === false && boxesOf("Contacts", contact).sms === false ? true : undefined), {
      what: "the boxes cleared"
    })
    // Written without running the organisation's workflow rules (a box is not a status).
    expect(zoho.workflowRuns.filter((r) => r.id === lead || r.id === contact)).toEqual([])
  }, HEAVY)

  it("a Zoho outage delays the boxes, never loses them: the number waits in the outbox until Zoho answers", async () => {
    const phone = "+14155550121"
    const lead = zoho.addRecord("Leads", { Full_Name: "Alan Turing", Last_Name: "Turing", Phone: phone })
    await zoho.down()
    try {
      await adminOk(server, ["optouts", "add", "--org", demo.orgId, "--phone", phone])
      await until(async () => {
        const rows = await server.db.query<{ attempts: number | string }>(
          "SELECT attempts FROM zoho_optout_syncs WHERE org_id = ? AND phone = ?",
          [demo.orgId, phone]
        )
        return rows.length === 1 && Number(rows[0]?.attempts) >= 1 ? true : undefined
      }, { what: "a failed attempt kept in the outbox" })
      expect(boxesOf("Leads", lead).sms).toBeUndefined()
    } finally {
      await zoho.up()
    }
    await until(async () => (boxesOf("Leads", lead).sms === true ? true : undefined), { timeoutMs: 40_000, what: "the boxes after the outage" })
    expect(boxesOf("Leads", lead)).toEqual({ sms: true, call: true })
  }, HEAVY)

  it("boxes deleted in Zoho: the number waits (crm status says to run crm setup), and crm setup lets it through", async () => {
    const phone = "+14155550131"
    const contact = zoho.addRecord("Contacts", { Full_Name: "Emmy Noether", Last_Name: "Noether", Phone: phone })
    const fields = zoho.modules.get("Contacts")?.fields ?? []
    const removed = fields.filter((f) => f.api_name === SMS_BOX || f.api_name === CALL_BOX)
    for (const f of removed) fields.splice(fields.indexOf(f), 1)
    await adminOk(server, ["optouts", "add", "--org", demo.orgId, "--phone", phone, "--channels", "SMS"])
    const status = await until(async () => {
      const view = await server.adminJson<{ lastError: { message: string } | null }>(["crm", "status", demo.orgId])
      return view.lastError?.message.includes(SMS_BOX) === true ? view : undefined
    }, { what: "the refusal in crm status" })
    expect(status.lastError?.message).toContain(`parley crm setup ${demo.orgId}`)
    expect(await pending(phone)).toBe(1)
    expect(record("Contacts", contact)?.[SMS_BOX]).toBeUndefined()

    const setup = await server.adminJson<{ created: ReadonlyArray<string> }>(["crm", "setup", demo.orgId])
    expect(setup.created).toEqual(expect.arrayContaining([`field Contacts.${SMS_BOX}`, `field Contacts.${CALL_BOX}`]))
    await until(async () => (boxesOf("Contacts", contact).sms === true ? true : undefined), { timeoutMs: 40_000, what: "the box after crm setup" })
  }, HEAVY)

  it("a box ticked in Zoho refuses a send linking the record (403, the number listed with source crm), then an unlinked one", async () => {
    const phone = "+14155550141"
    const lead = zoho.addRecord("Leads", { Full_Name: "Marie Curie", Last_Name: "Curie", Phone: phone, [SMS_BOX]: true, [CALL_BOX]: false })
    // A test key hears the same answer and changes nothing.
    const tested = await sendText(server, demo.keys.test, { to: phone, body: "hello", record: { module: "Leads", id: lead } })
    expect(tested.status).toBe(403)
    expect((await errorOf(tested)).code).toBe("RECIPIENT_OPTED_OUT")
    expect((await listed(phone)).items).toEqual([])

    const linked = await sendText(server, demo.keys.live, { to: phone, body: "hello", record: { module: "Leads", id: lead } })
    expect(linked.status).toBe(403)
    const error = await errorOf(linked)
    expect(error.code).toBe("RECIPIENT_OPTED_OUT")
    expect(error.message).toContain("SMS")
    expect(error.message).toContain(`Leads record ${lead}`)
    expect((await listed(phone)).items).toMatchObject([{ phone, channels: ["SMS"], source: "crm", cause: `Leads record ${lead}` }])
    // Nothing was recorded in Zoho for the refused send.
    expect([...(zoho.records.get("Parley_Messages")?.values() ?? [])].filter((m) => m["To_Number"] === phone)).toEqual([])

    const unlinked = await sendText(server, demo.keys.live, { to: phone, body: "hello again" }, idempotencyKey("optout"))
    expect(unlinked.status).toBe(403)
    expect((await errorOf(unlinked)).code).toBe("RECIPIENT_OPTED_OUT")
  }, HEAVY)

  it("an unticked box, or a box Parley has yet to clear (START not yet written to Zoho), lets a linked send through", async () => {
    const free = "+14155550151"
    const lead = zoho.addRecord("Leads", { Full_Name: "Ada Byron", Last_Name: "Byron", Phone: free, [SMS_BOX]: false, [CALL_BOX]: false })
    const accepted = await sendText(server, demo.keys.live, { to: free, body: "hello", record: { module: "Leads", id: lead } })
    expect(accepted.status, await accepted.clone().text()).toBe(202)

    // The number's entry changed and the change waits in the outbox (Zoho was down when it opted back in): the
    // box still shows the opt-out Parley is about to lift, and the list, which has no entry, decides.
    const back = "+14155550152"
    const stale = zoho.addRecord("Leads", { Full_Name: "Hedy Lamarr", Last_Name: "Lamarr", Phone: back, [SMS_BOX]: true, [CALL_BOX]: true })
    await server.db.query(
      "INSERT INTO zoho_optout_syncs (org_id, phone, version, due_at, attempts, lease_until) VALUES (?, ?, 1, ?, 1, 0)",
      [demo.orgId, back, Date.now() + 2_000]
    )
    const through = await sendText(server, demo.keys.live, { to: back, body: "welcome back", record: { module: "Leads", id: stale } })
    expect(through.status, await through.clone().text()).toBe(202)
    expect((await listed(back)).items).toEqual([])
    await until(async () => (boxesOf("Leads", stale).sms === false ? true : undefined), { timeoutMs: 40_000, what: "the stale box cleared" })
  }, HEAVY)
})
