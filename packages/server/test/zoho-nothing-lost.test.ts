/**
 * Zoho in production, "nothing lost" (issue 31, items 1–4), on both stores, against the Zoho fake made as
 * strict as Zoho (field lengths, per-record refusals, a mandatory field an administrator added):
 * - a refusal no retry can fix is a 4xx naming Zoho's field and code; before `crm setup`, 503 SETUP_REQUIRED;
 *   Zoho's 429 is CRM_RATE_LIMITED with Retry-After;
 * - texts longer than a small text area are cut to fit it in Zoho, kept whole in Parley; `crm setup` makes
 *   large text areas and says exactly what to change on an organisation whose fields are small;
 * - an inbound text that arrives while Zoho is down is answered 200 and stored; its Zoho record (linked to the
 *   Lead with its phone) follows from the outbox once Zoho is back, and the text's first id still finds it;
 * - a write-back is never dropped for an outage, however long; a reconnect sends it at once; a write-back Zoho
 *   refuses for good is recorded where the administrator looks (`crm status`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CUT_MARKER } from "../src/crm/zoho/ZohoFieldLengths.js"
import { CallbackReceiver } from "./support/fakes/CallbackReceiver.js"
import { Scrape } from "./support/prometheus.js"
import type { ZohoFake, ZohoFakeField } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { connectZoho, HEAVY, idempotencyKey, sendText, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const idem = () => idempotencyKey("lost")
const METRICS_TOKEN = "zoho-nothing-lost-metrics-0123456789"

describe("Zoho: nothing lost", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary
  let leadId: string

  const connect = async () => {
    const callback = await connectZoho(server, demo.orgId)
    expect(callback.status, callback.html).toBe(200)
  }
  const send = (body: Record<string, unknown>, idempotency = idem()) => sendText(server, demo.keys.live, body, idempotency)
  const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error
  const messages = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])]
  const messageFields = (): Array<ZohoFakeField> => {
    const module = zoho.modules.get("Parley_Messages")
    if (module === undefined) throw new Error("no Parley_Messages module in the fake")
    return module.fields
  }
  /** Replaces a field of Parley_Messages in the fake, as an administrator editing it in Zoho would; returns the undo. */
  const editField = (apiName: string, edit: (f: ZohoFakeField) => ZohoFakeField) => {
    const fields = messageFields()
    const index = fields.findIndex((f) => f.api_name === apiName)
    const before = fields[index]
    if (before === undefined) throw new Error(`no field ${apiName}`)
    fields[index] = edit(before)
    return () => {
      fields[index] = before
    }
  }
  const writebacks = async (actionCrmId: string) =>
    server.db.query<{ attempts: number | string; due_at: number | string }>(
      "SELECT w.attempts, w.due_at FROM zoho_writebacks w JOIN actions a ON CAST(a.id AS TEXT) = w.action_id WHERE a.crm_id = ?",
      [actionCrmId]
    )

  beforeAll(async () => {
    suite = await startZohoSuite({
      connect: false,
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "10000", PARLEY_INBOUND_UNSIGNED: "accept", PARLEY_METRICS_TOKEN: METRICS_TOKEN }
    })
    ;({ zoho, server, demo } = suite)
    leadId = zoho.addRecord("Leads", { First_Name: "Ada", Last_Name: "Lovelace", Full_Name: "Ada Lovelace", Phone: "+14155550123" })
    await connect()
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it("before `crm setup`: a send is 503 SETUP_REQUIRED (Zoho's INVALID_MODULE), not 502 retry shortly", async () => {
    try {
      const response = await send({ body: "before setup" })
      expect(response.status).toBe(503)
      const error = await errorOf(response)
      expect(error.code).toBe("SETUP_REQUIRED")
      expect(error.message).toContain("INVALID_MODULE")
      expect(error.message).toContain("parley crm setup")
    } finally {
      // The other cases run on a set-up organisation whatever this one found.
      const setup = await server.admin(["crm", "setup", demo.orgId])
      expect(setup.code, setup.stderr).toBe(0)
    }
  }, HEAVY)

  it("crm setup creates Body-like fields as large text areas (32,000 characters)", () => {
    for (const name of ["Body", "Error_Message"]) {
      const field = messageFields().find((f) => f.api_name === name)
      expect(field, name).toMatchObject({ data_type: "textarea", textarea: { type: "large" }, length: 32_000 })
    }
    expect(zoho.modules.get("Parley_Templates")?.fields.find((f) => f.api_name === "Body")).toMatchObject({ length: 32_000 })
  })

  it("a per-record refusal is 400 CRM_REJECTED naming Zoho's field and code: a mandatory field added in Zoho, a picklist value removed", async () => {
    const undoMandatory = (() => {
      const fields = messageFields()
      fields.push({ api_name: "Region", field_label: "Region", data_type: "text", system_mandatory: true })
      return () => void fields.pop()
    })()
    try {
      const response = await send({ body: "mandatory missing" })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe("CRM_REJECTED")
      expect(error.message).toContain("Region")
      expect(error.message).toContain("MANDATORY_NOT_FOUND")
    } finally {
      undoMandatory()
    }
    const undoPicklist = editField("Channel", (f) => ({ ...f, pick_list_values: [{ display_value: "WhatsApp", actual_value: "WhatsApp" }] }))
    try {
      const response = await send({ body: "picklist value gone" })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error).toMatchObject({ code: "CRM_REJECTED" })
      expect(error.message).toContain("Channel")
      expect(error.message).toContain("INVALID_DATA")
    } finally {
      undoPicklist()
    }
    // Nothing was queued for either refusal.
    const rows = await server.db.query<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM actions WHERE body IN (?, ?)",
      ["mandatory missing", "picklist value gone"]
    )
    expect(Number(rows[0]?.n)).toBe(0)
  }, HEAVY)

  it("DUPLICATE_DATA (an administrator made Name unique in Zoho) is 400 CRM_REJECTED, and the log line keeps Zoho's code and field", async () => {
    // Every text to one number has the same Name ("SMS to +1…"): the second clashes with the first.
    const undo = editField("Name", (f) => ({ ...f, unique: true }))
    try {
      const first = await send({ body: "first to a new number", to: "+14155550188" })
      expect(first.status, await first.clone().text()).toBe(202)
      const logFrom = server.output.length
      const second = await send({ body: "second to a new number", to: "+14155550188" })
      expect(second.status, await second.clone().text()).toBe(400)
      const error = await errorOf(second)
      expect(error.code).toBe("CRM_REJECTED")
      expect(error.message).toContain("Name")
      expect(error.message).toContain("DUPLICATE_DATA")
      const refused = await until(async () => {
        const lines = server.output.slice(logFrom).split("\n").filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as { message: unknown; annotations?: Record<string, unknown> })
        return lines.find((l) => JSON.stringify(l.message).includes("crm refused"))
      }, { timeoutMs: 10_000, what: "the log line of the refusal" })
      expect(refused.annotations).toMatchObject({ crmCode: "DUPLICATE_DATA", field: "Name" })
    } finally {
      undo()
    }
  }, HEAVY)

  it("Zoho at its limit (429) → 503 CRM_RATE_LIMITED with Retry-After", async () => {
    zoho.failNext(10, "429")
    try {
      const response = await send({ body: "429 always" })
      expect(response.status).toBe(503)
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/)
      expect((await errorOf(response)).code).toBe("CRM_RATE_LIMITED")
    } finally {
      zoho.clearFaults()
    }
  }, HEAVY)

  it("an organisation whose Body is a small text area: a 3,000-character text is accepted, cut with a marker in Zoho, whole in Parley; crm setup says what to change", async () => {
    const undo = editField("Body", (f) => ({ ...f, textarea: { type: "small" }, length: 2_000 }))
    try {
      // The lengths Parley read are cached; a server restart reads them again, as after ten minutes.
      await server.restart()
      const long = `Long ${"x".repeat(2_995)}`
      const response = await send({ body: long })
      expect(response.status, await response.clone().text()).toBe(202)
      const { id } = (await response.json()) as { id: string }
      const record = messages().find((m) => m.id === id)
      const body = String(record?.["Body"] ?? "")
      expect([...body].length).toBe(2_000)
      expect(body.endsWith(CUT_MARKER)).toBe(true)
      const read = (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }).then((r) => r.json())) as { body: string }
      expect(read.body).toBe(long)
      const setup = await server.admin(["crm", "setup", demo.orgId])
      expect(setup.code).toBe(1)
      expect(setup.stdout + setup.stderr).toMatch(/Body \(API name Body\) holds 2000 characters.*Large \(32,000 characters\)/)
    } finally {
      undo()
    }
  }, HEAVY)

  it("an inbound text while Zoho is down: 200 and stored; its Zoho record, linked to the Lead, follows once Zoho is back", async () => {
    await zoho.down()
    let localId: string
    try {
      const response = await server.fetch("/carrier/inbound", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: "Reply while Zoho is down", MessageSid: "SMdown0123456789abcdef0123456789ab" }).toString()
      })
      expect(response.status, await response.text()).toBe(200)
      const listed = (await server.fetch("/api/v1/messages?status=Received", { key: demo.keys.live }).then((r) => r.json())) as {
        items: Array<{ id: string; body: string }>
      }
      const stored = listed.items.find((m) => m.body === "Reply while Zoho is down")
      expect(stored).toBeDefined()
      localId = stored?.id ?? ""
      // Before its Zoho record exists, the text has Parley's own id.
      expect(localId).toMatch(/^\d{1,15}$/)
    } finally {
      await zoho.up()
    }
    const record = await until(async () => messages().find((m) => m["Body"] === "Reply while Zoho is down"), { timeoutMs: 60_000, what: "the inbound text's Zoho record" })
    expect(record).toMatchObject({ Direction: "Inbound", From_Number: "+14155550123", Lead: { id: leadId } })
    const byZohoId = await until(async () => {
      const r = await server.fetch(`/api/v1/messages/${record.id}`, { key: demo.keys.live })
      return r.status === 200 ? ((await r.json()) as { id: string; record: { id: string } | null }) : undefined
    }, { what: "the text under its Zoho id" })
    expect(byZohoId).toMatchObject({ id: record.id, record: { id: leadId } })
    // The id it was first announced by still finds it.
    const byFirstId = await server.fetch(`/api/v1/messages/${localId}`, { key: demo.keys.live })
    expect(byFirstId.status).toBe(200)
    expect(((await byFirstId.json()) as { id: string }).id).toBe(record.id)
    // One record, however many attempts: the upsert is keyed by the carrier's message id.
    expect(messages().filter((m) => m["Body"] === "Reply while Zoho is down")).toHaveLength(1)
  }, HEAVY)

  it("the carrier's retry of an inbound text already in Zoho: 200, still one text and one record", async () => {
    const post = () =>
      server.fetch("/carrier/inbound", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: "Sent twice by the carrier", MessageSid: "SMtwice123456789abcdef0123456789ab" }).toString()
      })
    const first = await post()
    expect(first.status, await first.text()).toBe(200)
    const retry = await post()
    expect(retry.status, await retry.text()).toBe(200)
    expect(messages().filter((m) => m["Body"] === "Sent twice by the carrier")).toHaveLength(1)
    const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM actions WHERE body = ?", ["Sent twice by the carrier"])
    expect(Number(rows[0]?.n)).toBe(1)
  }, HEAVY)

  it("a write-back is not dropped after 12 failed attempts; it reaches Zoho once Zoho is back", async () => {
    const response = await send({ body: "outlasts the outage" })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }
    await zoho.down()
    try {
      await until(async () => {
        const rows = await writebacks(id)
        return rows.length > 0 && Number(rows[0]?.attempts) >= 1 ? true : undefined
      }, { timeoutMs: 60_000, what: "a failed write-back" })
      // As after ~68 minutes of failures: the next failure is the 12th.
      await server.db.query("UPDATE zoho_writebacks SET attempts = 11, due_at = 0 WHERE action_id IN (SELECT CAST(id AS TEXT) FROM actions WHERE crm_id = ?)", [id])
      await until(async () => {
        const rows = await writebacks(id)
        return rows.length === 0 || Number(rows[0]?.attempts) >= 12 ? true : undefined
      }, { timeoutMs: 60_000, what: "the 12th failure" })
      const rows = await writebacks(id)
      expect(rows, "the write-back is still owed").toHaveLength(1)
      // Backoff is capped (15 minutes), not an hour.
      expect(Number(rows[0]?.due_at) - Date.now()).toBeLessThanOrEqual(15 * 60_000)
    } finally {
      await zoho.up()
    }
    // A reconnect makes it due at once, whatever its backoff.
    await connect()
    await until(async () => (messages().find((m) => m.id === id)?.["Status"] === "Delivered" ? true : undefined), {
      timeoutMs: 60_000,
      what: "the write-back after the reconnect"
    })
  }, HEAVY)

  it("a write-back Zoho refuses for good (its record was deleted in Zoho) is given up, shown in crm status and sent as a crm.record_refused event", async () => {
    const events = await CallbackReceiver.start()
    await server.adminJson(["webhooks", "add", "--org", demo.orgId, "--url", events.at("/events"), "--events", "crm.record_refused"])
    const refusedCount = async () =>
      Scrape.parse(await (await server.fetch("/metrics", { key: METRICS_TOKEN })).text())
        .value("parley_zoho_refused_total", { outbox: "writeback", code: "INVALID_DATA" })
    const countedBefore = await refusedCount()
    const response = await send({ body: "record deleted in Zoho" })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }
    zoho.records.get("Parley_Messages")?.delete(id)
    const lastError = await until(async () => {
      const status = await server.adminJson<{ lastError: { message: string } | null }>(["crm", "status", demo.orgId])
      return status.lastError?.message.includes("INVALID_DATA") === true ? status.lastError.message : undefined
    }, { timeoutMs: 60_000, what: "the refusal in crm status" })
    expect(lastError).toContain("on field id")
    // Given up: nothing of it is left to retry.
    expect(await writebacks(id)).toHaveLength(0)
    // Counted in the metric an operator alerts on.
    expect(await refusedCount()).toBe(countedBefore + 1)
    // And an integration hears of it: the action's record as the event's data.
    const event = await until(async () => {
      const found = events.received.map((r) => JSON.parse(r.body) as { type: string; data: { id: string } })
        .find((e) => e.type === "crm.record_refused")
      return found
    }, { timeoutMs: 30_000, what: "the crm.record_refused event" })
    expect(event.data.id).toBe(id)
    await events.stop()
  }, HEAVY)

  it("a write-back Zoho refuses for a permission the user lacks (NO_PERMISSION on the record) is kept, retried and shown in crm status, and lands once the permission is granted", async () => {
    // The connected user's profile loses Edit on Parley_Messages after its texts were created (Create stays).
    const profile = [...zoho.users.values()][0]?.profile.id ?? ""
    zoho.setPermission(profile, "Parley_Messages", "Edit", false)
    let granted = false
    try {
      const response = await send({ body: "edit permission withdrawn" })
      expect(response.status).toBe(202)
      const { id } = (await response.json()) as { id: string }
      const lastError = await until(async () => {
        const status = await server.adminJson<{ lastError: { message: string } | null }>(["crm", "status", demo.orgId])
        return status.lastError?.message.includes("NO_PERMISSION") === true ? status.lastError.message : undefined
      }, { timeoutMs: 60_000, what: "the permission refusal in crm status" })
      expect(lastError).toContain("NO_PERMISSION")
      expect(lastError).toContain("Crm_Implied_Edit_Parley_Messages")
      expect(lastError).toContain("retries")
      // Kept for a retry, not given up (before: given up as a refusal for good on the first answer).
      const owed = await writebacks(id)
      expect(owed).toHaveLength(1)
      expect(Number(owed[0]?.attempts)).toBeGreaterThan(0)
      zoho.setPermission(profile, "Parley_Messages", "Edit", true)
      granted = true
      const record = await until(async () => {
        const found = messages().find((m) => m["id"] === id)
        return found !== undefined && found["Status"] === "Delivered" ? found : undefined
      }, { timeoutMs: 90_000, what: "the write-back after the permission came back" })
      expect(record["Status"]).toBe("Delivered")
      expect(await writebacks(id)).toHaveLength(0)
    } finally {
      if (!granted) zoho.setPermission(profile, "Parley_Messages", "Edit", true)
    }
  }, HEAVY)

  it("an inbound text while the connection has lapsed (OAUTH_REQUIRED overnight): 200 and stored; its record follows the reconnect", async () => {
    zoho.revokeAll()
    const response = await server.fetch("/carrier/inbound", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ From: "+14155550123", To: demo.numbers[0]?.phoneNumber ?? "", Body: "Reply after the grant lapsed", MessageSid: "SMlapsed123456789abcdef0123456789a" }).toString()
    })
    expect(response.status, await response.text()).toBe(200)
    const owed = await server.db.query<{ attempts: number | string }>(
      "SELECT i.attempts FROM zoho_inbound i JOIN actions a ON CAST(a.id AS TEXT) = i.action_id WHERE a.body = ?",
      ["Reply after the grant lapsed"]
    )
    expect(owed).toHaveLength(1)
    expect(messages().some((m) => m["Body"] === "Reply after the grant lapsed")).toBe(false)
    await connect()
    const record = await until(async () => messages().find((m) => m["Body"] === "Reply after the grant lapsed"), {
      timeoutMs: 60_000,
      what: "the record after the reconnect"
    })
    expect(record).toMatchObject({ Direction: "Inbound", Lead: { id: leadId } })
  }, HEAVY)

  it("an organisation whose Body is a small text area: an AI call's 3,000-character transcript is written back cut with a marker, not given up", async () => {
    const undo = editField("Body", (f) => ({ ...f, textarea: { type: "small" }, length: 2_000 }))
    try {
      // The lengths Parley read are cached; a server restart reads them again, as after ten minutes.
      await server.restart()
      const purpose = `Purpose ${"y".repeat(2_992)}`
      const response = await server.fetch("/api/v1/ai-calls", {
        key: demo.keys.live,
        method: "POST",
        headers: { "idempotency-key": idem() },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, botId: "bot_sales", mode: "deliver_specific_message", purposeMessage: purpose })
      })
      expect(response.status, await response.clone().text()).toBe(202)
      const { id } = (await response.json()) as { id: string }
      const record = await until(async () => {
        const r = messages().find((m) => m.id === id)
        return r?.["Status"] === "Completed" && String(r["Body"] ?? "").startsWith("Bot (") ? r : undefined
      }, { timeoutMs: 60_000, what: "the call Completed in Zoho with its transcript" })
      const body = String(record["Body"] ?? "")
      expect([...body].length).toBe(2_000)
      expect(body.endsWith(CUT_MARKER)).toBe(true)
      // Nothing of it refused: the outbox empties (a later step, a recording, may still be on its way).
      await until(async () => ((await writebacks(id)).length === 0 ? true : undefined), { timeoutMs: 30_000, what: "the call's write-backs done" })
      expect(String(messages().find((m) => m.id === id)?.["Body"] ?? "").endsWith(CUT_MARKER)).toBe(true)
      // Parley keeps the whole transcript.
      const read = (await server.fetch(`/api/v1/ai-calls/${id}`, { key: demo.keys.live }).then((r) => r.json())) as { body: string }
      expect(read.body).toContain(purpose)
      expect([...read.body].length).toBeGreaterThan(3_000)
    } finally {
      undo()
    }
  }, HEAVY)
})
