/**
 * Records the sales team can see and automate on (issue 31, items 13 and 14), end to end against the Zoho
 * fake: a Parley_Messages record is owned by its linked record's owner (else the connected user), and Zoho's
 * workflow rules run (`trigger: ["workflow"]`) exactly on inbound records and on the first write of a final
 * status while the organisation's setting is on — set by `parley crm update ORG --workflows on|off` or the
 * console's CRM page — and on nothing Parley writes while it is off. And (item 15) the README's recipe for
 * texting from a Zoho workflow rule: the webhook it documents, sent as Zoho sends it, to a real Parley server.
 */
import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, consolePost, signIn } from "./support/console.js"
import type { ZohoFake, ZohoFakeRequest } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { HEAVY, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const PN1 = "PN00000000000000000000000000000001"
const ADA = "5725767000000412001"
const BOB = { id: "5725767000000412002", zuid: "800000002", full_name: "Bob Rep", email: "bob@acme.test", profile: { name: "Standard", id: "5725767000000026014" } }
const FINAL = new Set(["Delivered", "Undelivered", "Failed", "Cancelled", "Completed", "No Answer", "Busy"])
let counter = 0
const idem = () => `zoho-wf-${Date.now()}-${++counter}`

/** The README's Zoho webhook (the JSON body of Zoho's `POST /settings/automation/webhooks`). */
interface ZohoWebhook {
  readonly url: string
  readonly http_method: string
  readonly headers: {
    readonly custom_parameters: ReadonlyArray<{ readonly name: string; readonly value: string }>
    readonly module_parameters: ReadonlyArray<{ readonly name: string; readonly value: string }>
  }
  readonly body: { readonly type: string; readonly format: string; readonly raw_data_content: string }
}

const readmeWebhook = (): ZohoWebhook => {
  const readme = readFileSync(new URL("../../../docs/crm.md", import.meta.url), "utf8")
  const block = /<!-- zoho-webhook-recipe -->\n```json\n([\s\S]*?)\n```/.exec(readme)?.[1]
  if (block === undefined) throw new Error("docs/crm.md has no zoho-webhook-recipe block")
  const parsed = JSON.parse(block) as { webhooks: ReadonlyArray<ZohoWebhook> }
  const webhook = parsed.webhooks[0]
  if (webhook === undefined) throw new Error("the recipe has no webhook")
  return webhook
}

/** A merge field as Zoho's webhooks take it: `${!Module.Api_Name}`, resolved from the triggering record. */
const MERGE_FIELD = /\$\{!Leads\.([A-Za-z_]+)\}/g

/**
 * The request Zoho makes when the rule fires for `lead` (Zoho's v8 Create Webhook API documentation; zoho/crm-oas
 * v8.0 has no webhook definition): the URL as
 * configured, custom headers as given, module headers and the raw body with each merge field replaced by the
 * record's value (`Id` is the record's id; an empty field an empty string), `Content-Type` of the body's format.
 */
const zohoRequest = (webhook: ZohoWebhook, lead: Readonly<Record<string, unknown>>, replace: Readonly<Record<string, string>>) => {
  const fill = (text: string) =>
    Object.entries(replace).reduce((t, [from, to]) => t.split(from).join(to), text)
      .replace(MERGE_FIELD, (_m, field: string) => String((field === "Id" ? lead["id"] : lead[field]) ?? ""))
  const headers = new Headers({ "content-type": "application/json" })
  for (const h of webhook.headers.custom_parameters) headers.set(h.name, fill(h.value))
  for (const h of webhook.headers.module_parameters) headers.set(h.name, fill(h.value))
  return { url: fill(webhook.url), init: { method: webhook.http_method, headers, body: fill(webhook.body.raw_data_content) } }
}

interface Written {
  readonly id: string
  readonly status: string
  readonly trigger: unknown
}

/** Every record the fake was asked to write to Parley_Messages, with the `trigger` its request carried. */
const writesOf = (requests: ReadonlyArray<ZohoFakeRequest>): ReadonlyArray<Written> =>
  requests
    .filter((r) => r.path === "/crm/v8/Parley_Messages" && r.method === "PUT")
    .flatMap((r) => {
      const body = JSON.parse(r.body) as { data: Array<{ id: string; Status: string }>; trigger?: unknown }
      return body.data.map((d) => ({ id: d.id, status: d.Status, trigger: body.trigger }))
    })

const upserts = (requests: ReadonlyArray<ZohoFakeRequest>) =>
  requests
    .filter((r) => r.path === "/crm/v8/Parley_Messages/upsert")
    .map((r) => JSON.parse(r.body) as { data: Array<Record<string, unknown>>; trigger?: unknown })

describe("Zoho: record owners and workflow rules", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary
  let bobsLead: string

  const admin = async (args: ReadonlyArray<string>) => {
    const result = await server.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
    return result
  }
  const send = (body: Record<string, unknown>) =>
    server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: PN1, ...body })
    })
  const inbound = (text: string, sid: string) =>
    server.fetch("/carrier/inbound", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: text, MessageSid: sid }).toString()
    })
  const record = (id: string) => zoho.records.get("Parley_Messages")?.get(id)
  const delivered = (id: string) =>
    until(async () => record(id)?.["Status"] === "Delivered" ? true : undefined, { timeoutMs: 30_000, what: `${id} Delivered in Zoho` })

  beforeAll(async () => {
    suite = await startZohoSuite({
      prepare: (fake) => fake.addUser(BOB),
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_INBOUND_UNSIGNED: "accept" }
    })
    ;({ zoho, server, demo } = suite)
    bobsLead = zoho.addRecord("Leads", {
      First_Name: "Ada", Last_Name: "Lovelace", Full_Name: "Ada Lovelace", Phone: "+14155550123", Owner: { name: BOB.full_name, id: BOB.id }
    })
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("a text linked to a Lead is owned by the Lead's owner; an unlinked one by the connected user; an inbound one by the matched Lead's owner", async () => {
    const from = zoho.requests.length
    const linked = await send({ body: "for Bob's lead", record: { module: "Leads", id: bobsLead } })
    expect(linked.status, await linked.clone().text()).toBe(202)
    const linkedId = ((await linked.json()) as { id: string }).id
    expect(record(linkedId)?.["Owner"]).toEqual({ name: BOB.full_name, id: BOB.id })
    // The owner came with the record Parley reads anyway (for its name and merge fields): no read of its own.
    const reads = zoho.requests.slice(from).filter((r) => r.path === `/crm/v8/Leads/${bobsLead}`)
    expect(reads).toHaveLength(1)
    expect(reads[0]?.query.get("fields")).toContain("Owner")

    const plain = await send({ body: "nobody's" })
    expect(plain.status).toBe(202)
    expect(record(((await plain.json()) as { id: string }).id)?.["Owner"]).toEqual({ name: "Ada Admin", id: ADA })

    const answer = await inbound("reply for Bob", "SM0000000000000000000000000000b0b1")
    expect(answer.status, await answer.text()).toBe(200)
    const reply = [...(zoho.records.get("Parley_Messages")?.values() ?? [])].find((m) => m["Body"] === "reply for Bob")
    expect(reply?.["Owner"]).toEqual({ name: BOB.full_name, id: BOB.id })
    expect(reply?.["Lead"]).toEqual({ id: bobsLead })
  }, HEAVY)

  it("a Lead owned by a user Zoho no longer accepts as an owner: the text is still recorded, owned by the connected user", async () => {
    const gone = "5725767000000412999"
    const orphan = zoho.addRecord("Leads", { First_Name: "Old", Full_Name: "Old Lead", Phone: "+14155550177", Owner: { name: "Gone User", id: gone } })
    const response = await send({ body: "to an orphan", record: { module: "Leads", id: orphan } })
    expect(response.status, await response.clone().text()).toBe(202)
    const id = ((await response.json()) as { id: string }).id
    expect(record(id)?.["Owner"]).toEqual({ name: "Ada Admin", id: ADA })
  }, HEAVY)

  it("workflows on (the default): an inbound record and each record's first final status run Zoho's rules; nothing else does", async () => {
    const view = JSON.parse((await admin(["crm", "update", demo.orgId, "--json"])).stdout) as { workflows: string }
    expect(view.workflows).toBe("on")
    const from = zoho.requests.length
    const runsFrom = zoho.workflowRuns.length
    const created = await send({ body: "watch me", record: { module: "Leads", id: bobsLead } })
    const id = ((await created.json()) as { id: string }).id
    const call = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: PN1, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: "Confirm at 10" })
    })
    expect(call.status).toBe(202)
    const callId = ((await call.json()) as { id: string }).id
    const answer = await inbound("a reply", "SM0000000000000000000000000000b0b2")
    expect(answer.status).toBe(200)
    await delivered(id)
    await until(async () => record(callId)?.["Status"] === "Completed" && String(record(callId)?.["Body"] ?? "") !== "" ? true : undefined, {
      timeoutMs: 30_000,
      what: "the call Completed in Zoho with its transcript"
    })
    // Everything owed reached Zoho.
    await until(async () => {
      const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM zoho_writebacks")
      return Number(rows[0]?.n) === 0 ? true : undefined
    }, { timeoutMs: 30_000, what: "the write-back outbox to empty" })
    const requests = zoho.requests.slice(from)

    // Creations: the outbound text and call without rules, the inbound reply with them.
    const made = upserts(requests)
    const outboundUpserts = made.filter((u) => u.data[0]?.["Direction"] === "Outbound")
    expect(outboundUpserts).toHaveLength(2)
    for (const u of outboundUpserts) expect(u.trigger).toEqual([])
    const replyUpsert = made.find((u) => u.data[0]?.["Direction"] === "Inbound")
    expect(replyUpsert?.trigger).toEqual(["workflow"])
    const replyId = [...(zoho.records.get("Parley_Messages")?.values() ?? [])].find((m) => m["Body"] === "a reply")?.id

    // Write-backs: the first write of a final status with rules, every other write without.
    const writes = writesOf(requests).filter((w) => w.id === id || w.id === callId)
    for (const target of [id, callId]) {
      const own = writes.filter((w) => w.id === target)
      const firstFinal = own.findIndex((w) => FINAL.has(w.status))
      expect(firstFinal, JSON.stringify(own)).toBeGreaterThanOrEqual(0)
      own.forEach((w, i) => expect(w.trigger, `${target} write ${i} (${w.status})`).toEqual(i === firstFinal ? ["workflow"] : []))
    }
    // What Zoho ran rules on: the reply's creation, the text's and the call's final status; once each.
    const runs = zoho.workflowRuns.slice(runsFrom)
    expect(runs.filter((r) => r.id === replyId)).toEqual([{ module: "Parley_Messages", id: replyId, on: "create" }])
    expect(runs.filter((r) => r.id === id)).toEqual([{ module: "Parley_Messages", id, on: "edit" }])
    expect(runs.filter((r) => r.id === callId)).toEqual([{ module: "Parley_Messages", id: callId, on: "edit" }])
  }, HEAVY)

  it("workflows off (CLI): nothing Parley writes runs a rule; on again from the console's CRM page", async () => {
    const off = JSON.parse((await admin(["crm", "update", demo.orgId, "--workflows", "off", "--json"])).stdout) as { workflows: string }
    expect(off.workflows).toBe("off")
    const from = zoho.requests.length
    const runsFrom = zoho.workflowRuns.length
    const created = await send({ body: "quietly" })
    const id = ((await created.json()) as { id: string }).id
    expect((await inbound("quiet reply", "SM0000000000000000000000000000b0b3")).status).toBe(200)
    await delivered(id)
    const requests = zoho.requests.slice(from)
    for (const u of upserts(requests)) expect(u.trigger).toEqual([])
    const writes = writesOf(requests).filter((w) => w.id === id)
    expect(writes.some((w) => w.status === "Delivered")).toBe(true)
    for (const w of writes) expect(w.trigger).toEqual([])
    expect(zoho.workflowRuns.slice(runsFrom)).toEqual([])

    // The console shows the setting and turns it back on.
    const password = "correct horse battery staple"
    const made = await server.cli(["admins", "create", demo.orgId, "--email", "wf@a.example", "--password-stdin"], { input: `${password}\n` })
    expect(made.code, made.stderr).toBe(0)
    const session = await signIn(server.baseUrl, "wf@a.example", password)
    const page = await (await consoleGet(server.baseUrl, session, "/admin/crm")).text()
    expect(page).toContain("Zoho workflow rules")
    expect(page).toContain("Turn workflow rules on")
    const turned = await consolePost(server.baseUrl, session, "/admin/crm/workflows", { csrf: session.csrf, workflows: "on" })
    expect(turned.status).toBe(303)
    expect(turned.headers.get("location")).toBe("/admin/crm?done=workflows-on")
    const on = JSON.parse((await admin(["crm", "update", demo.orgId, "--json"])).stdout) as { workflows: string }
    expect(on.workflows).toBe("on")
    const runsBefore = zoho.workflowRuns.length
    expect((await inbound("loud reply", "SM0000000000000000000000000000b0b4")).status).toBe(200)
    const loud = [...(zoho.records.get("Parley_Messages")?.values() ?? [])].find((m) => m["Body"] === "loud reply")
    expect(zoho.workflowRuns.slice(runsBefore)).toEqual([{ module: "Parley_Messages", id: loud?.id, on: "create" }])
  }, HEAVY)

  it("the README's webhook, sent as Zoho sends it, texts the template to the Lead's mobile once per rule and record", async () => {
    const webhook = readmeWebhook()
    // What Zoho's webhook API accepts (its v8 Create Webhook documentation): POST with headers and a raw JSON body of at most
    // 500 characters; at most 10 custom headers; each module header one merge field; no Host header.
    expect(webhook.http_method).toBe("POST")
    expect(webhook.body).toMatchObject({ type: "raw", format: "JSON" })
    expect(webhook.body.raw_data_content.length).toBeLessThanOrEqual(500)
    expect(webhook.headers.custom_parameters.length).toBeLessThanOrEqual(10)
    for (const h of webhook.headers.module_parameters) expect(h.value).toMatch(/^\$\{![A-Za-z_]+\.[A-Za-z_]+\}$/)
    expect([...webhook.headers.custom_parameters, ...webhook.headers.module_parameters].map((h) => h.name.toLowerCase())).not.toContain("host")
    expect(webhook.url).toMatch(/^https:\/\/[^?]*$/)

    zoho.addRecord("Parley_Templates", { Name: "Welcome", Body: "Hi ${Leads.First Name}, welcome!", Record_Type: "Leads" })
    const templates = (await server.fetch("/api/v1/templates", { key: demo.keys.live }).then((r) => r.json())) as { items: Array<{ id: string; name: string }> }
    const template = templates.items.find((t) => t.name === "Welcome")
    expect(template).toBeDefined()
    const grace = zoho.addRecord("Leads", {
      First_Name: "Grace", Last_Name: "Hopper", Full_Name: "Grace Hopper", Mobile: "+14155550199", Owner: { name: BOB.full_name, id: BOB.id }
    })
    const lead = zoho.records.get("Leads")?.get(grace) ?? {}
    const ruleKey = async (name: string) =>
      (await server.adminJson<{ key: string }>(["keys", "create", "--org", demo.orgId, "--name", name, "--scopes", "messages:write", "--mode", "live", "--numbers", PN1])).key
    const welcomeKey = await ruleKey("Zoho: welcome text")
    const fire = async (key: string) => {
      const request = zohoRequest(webhook, lead, {
        "https://parley.example.com": server.baseUrl,
        PARLEY_API_KEY: key,
        FROM_NUMBER_SID: PN1,
        TEMPLATE_UUID: template?.id ?? ""
      })
      const response = await fetch(request.url, request.init)
      return { status: response.status, replayed: response.headers.get("idempotent-replayed"), body: (await response.json()) as { id: string } }
    }

    const first = await fire(welcomeKey)
    expect(first.status, JSON.stringify(first.body)).toBe(202)
    expect(record(first.body.id)).toMatchObject({
      Direction: "Outbound", To_Number: "+14155550199", Body: "Hi Grace, welcome!", Lead: { id: grace }, Owner: { name: BOB.full_name, id: BOB.id }
    })
    // Zoho fires the rule again for the same Lead: the same text, not a second one.
    const again = await fire(welcomeKey)
    expect(again.body.id).toBe(first.body.id)
    expect(again.replayed).toBe("true")
    const toGrace = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])].filter((m) => m["To_Number"] === "+14155550199")
    expect(toGrace()).toHaveLength(1)
    // Another rule (its own key) on the same Lead texts independently.
    const other = await fire(await ruleKey("Zoho: follow-up text"))
    expect(other.status).toBe(202)
    expect(other.body.id).not.toBe(first.body.id)
    expect(toGrace()).toHaveLength(2)
  }, HEAVY)
})
