/**
 * Zoho's concurrency cap (issue 31, item 5): with the fake capped at 5 concurrent calls (Zoho's Free edition)
 * and answering in 200 ms, 20 concurrent sends all succeed — Parley queues its calls within
 * PARLEY_ZOHO_CONCURRENCY per Zoho organisation instead of meeting Zoho's 429 — on one server (both stores)
 * and across two replicas sharing Postgres; and the write-back's PUTs and the inbound outbox's records, owed
 * from an outage and due as the sends arrive, take their turns in the same cap (checked failing when the
 * outbox workers were given Zoho's session without the cap: 3 of Zoho's 429s).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ZohoFake } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"
import { connectAndSetUp, HEAVY, startZohoSuite, zohoEnv, type ZohoSuite } from "./support/zohoSuite.js"

const SENDS = 20

const ENV = { PARLEY_ZOHO_CONCURRENCY: "5", PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "10000", PARLEY_INBOUND_UNSIGNED: "accept" }
/** Inbound texts whose Zoho records are owed when the sends arrive. */
const OWED = 10

const sendAll = (servers: ReadonlyArray<TestServer>, demo: DemoSummary, tag: string) =>
  Promise.all(Array.from({ length: SENDS }, (_, i) => {
    const server = servers[i % servers.length]
    if (server === undefined) throw new Error("no server")
    return server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": `${tag}-${i}` },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]?.sid, body: `${tag} ${i}` })
    }).then(async (r) => ({ status: r.status, text: await r.text() }))
  }))

describe("Zoho's concurrency cap", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    suite = await startZohoSuite({ env: ENV })
    ;({ zoho, server, demo } = suite)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it(`${SENDS} concurrent sends against a cap of 5 and 200 ms answers: every one accepted, Zoho's cap never hit`, async () => {
    zoho.concurrencyCap = 5
    zoho.latencyMs = 200
    zoho.maxInFlight = 0
    try {
      const answers = await sendAll([server], demo, "capped")
      expect(answers.filter((a) => a.status !== 202), JSON.stringify(answers.filter((a) => a.status !== 202).slice(0, 2))).toEqual([])
      expect(zoho.concurrencyRefusals).toBe(0)
      expect(zoho.maxInFlight).toBeLessThanOrEqual(5)
    } finally {
      zoho.concurrencyCap = undefined
      zoho.latencyMs = 0
    }
  }, HEAVY)
})

describe("Zoho's concurrency cap, shared by creation and the outboxes", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    suite = await startZohoSuite({ env: ENV })
    ;({ zoho, server, demo } = suite)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  it(`write-backs and inbound records owed from an outage go out while ${SENDS} sends arrive: one cap of 5 for all, Zoho's never hit`, async () => {
    // Texts whose statuses are owed to Zoho: sent, then Zoho goes down before their write-back (2 s + 3 s).
    const sent = await sendAll([server], demo, "owed")
    expect(sent.filter((a) => a.status !== 202)).toEqual([])
    await zoho.down()
    try {
      await until(async () => {
        const rows = await server.db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM zoho_writebacks WHERE attempts >= 1")
        return Number(rows[0]?.n) >= SENDS ? true : undefined
      }, { timeoutMs: 60_000, what: "every text's write-back failed once" })
      // And replies that arrive meanwhile: stored, their records owed in the inbound outbox.
      for (let i = 0; i < OWED; i++) {
        const response = await server.fetch("/carrier/inbound", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            From: "+14155550123",
            To: demo.numbers[0]?.phoneNumber ?? "",
            Body: `owed reply ${i}`,
            MessageSid: `SMowed${String(i).padStart(28, "0")}`
          }).toString()
        })
        expect(response.status, await response.text()).toBe(200)
      }
    } finally {
      await zoho.up()
    }
    zoho.concurrencyCap = 5
    zoho.latencyMs = 200
    zoho.maxInFlight = 0
    zoho.concurrencyRefusals = 0
    try {
      // Everything owed is due now, as the sends arrive: the write-back's PUTs, the inbound outbox (two searches
      // and an upsert a text) and the creations all ask Zoho at the same moment.
      await server.db.query("UPDATE zoho_writebacks SET due_at = 0")
      await server.db.query("UPDATE zoho_inbound SET due_at = 0")
      const answers = await sendAll([server], demo, "shared")
      expect(answers.filter((a) => a.status !== 202), JSON.stringify(answers.filter((a) => a.status !== 202).slice(0, 2))).toEqual([])
      const made = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])].filter((m) => String(m["Body"]).startsWith("owed reply "))
      await until(async () => (made().length === OWED ? true : undefined), { timeoutMs: 60_000, what: "every owed inbound record" })
      const owedWritten = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])]
        .filter((m) => String(m["Body"]).startsWith("owed ") && !String(m["Body"]).startsWith("owed reply") && m["Status"] === "Delivered")
      await until(async () => (owedWritten().length === SENDS ? true : undefined), { timeoutMs: 60_000, what: "every owed status in Zoho" })
      expect(zoho.concurrencyRefusals).toBe(0)
      expect(zoho.maxInFlight).toBeLessThanOrEqual(5)
    } finally {
      zoho.concurrencyCap = undefined
      zoho.latencyMs = 0
    }
  }, HEAVY)
})

describe.skipIf(testStore !== "postgres")("Zoho's concurrency cap across two replicas", () => {
  let zoho: ZohoFake
  let db: TestDatabase
  let replicas: ReadonlyArray<TestServer> = []
  let demo: DemoSummary

  beforeAll(async () => {
    zoho = await ZohoFake.start()
    db = await createTestDatabase("postgres")
    const first = await TestServer.start({ env: zohoEnv(zoho, ENV), database: db })
    const second = await TestServer.start({ env: zohoEnv(zoho, ENV), database: db })
    replicas = [first, second]
    demo = await first.demo()
    await connectAndSetUp(first, demo.orgId)
  }, HEAVY)

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()))
    await db?.drop()
    await zoho?.stop()
  })

  it(`${SENDS} concurrent sends spread over two replicas share one cap of 5`, async () => {
    zoho.concurrencyCap = 5
    zoho.latencyMs = 200
    zoho.maxInFlight = 0
    try {
      const answers = await sendAll(replicas, demo, "replicas")
      expect(answers.filter((a) => a.status !== 202), JSON.stringify(answers.filter((a) => a.status !== 202).slice(0, 2))).toEqual([])
      expect(zoho.concurrencyRefusals).toBe(0)
      expect(zoho.maxInFlight).toBeLessThanOrEqual(5)
    } finally {
      zoho.concurrencyCap = undefined
      zoho.latencyMs = 0
    }
  }, HEAVY)
})
