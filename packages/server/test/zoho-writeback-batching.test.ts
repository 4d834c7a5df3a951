/**
 * The Zoho write-back's batching (issue 25's goal: a delivered text costs ≤ 0.05 further Zoho calls), on
 * both stores: texts accepted in a steady trickle go back to Zoho in shared PUTs of up to 100 records, not
 * in one PUT per write-back round, and still arrive within the documented flush interval.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BATCH, FLUSH_MS } from "../src/crm/zoho/ZohoWriteBack.js"
import type { ZohoFake } from "./support/fakes/ZohoFake.js"
import { until } from "./support/poll.js"
import type { DemoSummary, TestServer } from "./support/server.js"
import { HEAVY, startZohoSuite, type ZohoSuite } from "./support/zohoSuite.js"

const TEXTS = 40

describe("Zoho write-back batching", () => {
  let suite: ZohoSuite
  let zoho: ZohoFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    suite = await startZohoSuite({ env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "10000" } })
    ;({ zoho, server, demo } = suite)
  }, HEAVY)

  afterAll(async () => {
    await suite?.dispose()
  })

  const puts = () => zoho.requests.filter((r) => r.method === "PUT" && r.path === "/crm/v8/Parley_Messages").length
  const records = () => [...(zoho.records.get("Parley_Messages")?.values() ?? [])]

  it(`writes a steady trickle of texts back in shared PUTs (≤ 0.05 a delivered text), within the flush interval`, async () => {
    const before = { puts: puts(), records: records().length }
    const started = Date.now()
    // One text every 50 ms for 2 seconds: many write-back rounds (every 250 ms) see a few rows due.
    for (let i = 0; i < TEXTS; i++) {
      const response = await server.fetch("/api/v1/messages", {
        key: demo.keys.live,
        method: "POST",
        headers: { "idempotency-key": `trickle-${i}` },
        body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: `Trickle ${i}` })
      })
      expect(response.status).toBe(202)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(records().length - before.records).toBe(TEXTS)
    await until(async () => (records().filter((r) => r["Status"] === "Delivered").length >= TEXTS ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: "every text to be Delivered in Zoho"
    })
    const elapsed = Date.now() - started
    const writeBacks = puts() - before.puts
    expect(TEXTS).toBeLessThan(BATCH)
    // All of them fit one PUT; two at most if a flush fell between the last texts' changes.
    expect(writeBacks, `${writeBacks} PUTs for ${TEXTS} delivered texts`).toBeLessThanOrEqual(2)
    expect(writeBacks / TEXTS).toBeLessThanOrEqual(0.05)
    // The last text was accepted ~2 s after the first; its write-back is at most the outbox's 2 s delay,
    // the flush interval and a poll later (with room for a loaded machine).
    expect(elapsed).toBeLessThan(2_000 + TEXTS * 100 + 2_000 + FLUSH_MS + 5_000)
  }, 60_000)
})
