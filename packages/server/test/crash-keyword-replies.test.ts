/**
 * A STOP's confirmation through kill -9 (issue 32): with `--keyword-replies parley`, the opt-out and its
 * confirmation are recorded in the inbound webhook's own transaction and the confirmation is sent by the
 * dispatcher like any text, so killing Parley (SIGKILL) between recording and sending — while Twilio is
 * unreachable, while the create is out, or 0–40 ms after Twilio's 201 — neither loses the opt-out nor sends
 * two confirmations. Runs on SQLite and, in the Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twilioSignature } from "../src/providers/twilio/TwilioSignature.js"
import { crashEnv, crashRounds } from "./support/crashes.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { soakSize } from "./support/soak.js"

const ROUNDS = soakSize(2, 10)
const HEAVY = 900_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("kill -9 between a STOP and its confirmation", () => {
  let twilio: TwilioFake
  let server: TestServer
  let demo: DemoSummary
  let line: string

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 30 })
    server = await TestServer.start({
      env: { ...crashEnv, PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "3000" }
    })
    demo = await server.demo()
    line = demo.numbers[0]!.phoneNumber
    await server.adminJson([
      "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", twilio.authToken, "--api-base", twilio.url
    ])
    await server.adminJson(["orgs", "update", demo.orgId, "--keyword-replies", "parley"])
  }, HEAVY)
  afterAll(async () => {
    twilio.onAnswered = undefined
    await server?.dispose()
    await twilio?.stop()
  })

  /** Twilio's inbound webhook, asked again (the same MessageSid, as Twilio retries) until Parley answers 200. */
  const stop = async (from: string, sid: string) => {
    const fields = { From: from, To: line, Body: "STOP", MessageSid: sid }
    for (let attempt = 0;; attempt++) {
      const url = `${server.baseUrl}/providers/twilio/inbound`
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": twilioSignature(twilio.authToken, url, Object.entries(fields))
          },
          body: new URLSearchParams(fields).toString()
        })
        if (response.status === 200) return
        if (attempt > 600) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
      } catch (error) {
        if (attempt > 600) throw error
      }
      await sleep(100)
    }
  }

  /** The number's confirmations as Parley holds them, once all are Delivered; what Twilio made; the opt-out. */
  const settled = async (customer: string) => {
    const rows = await until(async () => {
      const found = await server.db.query<{ status: string; sid: string | null }>(
        "SELECT status, sid FROM actions WHERE org_id = ? AND counterpart = ? AND direction = 'Outbound'",
        [demo.orgId, customer]
      )
      return found.length > 0 && found.every((r) => r.status === "Delivered") ? found : undefined
    }, { timeoutMs: 300_000, intervalMs: 500, what: `the confirmation to ${customer} Delivered` })
    const optOuts = await server.db.query<{ source: string }>(
      "SELECT source FROM opt_outs WHERE org_id = ? AND phone = ?",
      [demo.orgId, customer]
    )
    return { rows, atTwilio: twilio.messages.filter((m) => m.to === customer), optOuts }
  }

  it("Twilio unreachable when the STOP is recorded, Parley killed, both back: one confirmation, the opt-out kept", async () => {
    const customer = "+14155550161"
    await twilio.down()
    await stop(customer, "SMcrashdown00000000000000000000001")
    await server.restart("SIGKILL")
    await twilio.up()
    const { atTwilio, optOuts, rows } = await settled(customer)
    expect(rows).toHaveLength(1)
    expect(atTwilio).toHaveLength(1)
    expect(atTwilio[0]?.body).toMatch(/You will receive no more messages/)
    expect(optOuts).toEqual([{ source: "keyword" }])
  }, HEAVY)

  it("killed while the confirmation's create is out: sent once after the restart", async () => {
    const customer = "+14155550162"
    twilio.hangNext()
    await stop(customer, "SMcrashhang00000000000000000000001")
    await until(async () => (twilio.requests.some((r) => r.method === "POST" && r.form.some(([, v]) => v === customer)) ? true : undefined), {
      timeoutMs: 60_000,
      what: "the hanging create"
    })
    await server.restart("SIGKILL")
    const { atTwilio, optOuts, rows } = await settled(customer)
    expect(rows).toHaveLength(1)
    expect(atTwilio).toHaveLength(1)
    expect(optOuts).toEqual([{ source: "keyword" }])
  }, HEAVY)

  it(`killed 0–40 ms after Twilio's 201, ${ROUNDS} times: one confirmation per STOP`, async () => {
    const customers = Array.from({ length: ROUNDS }, (_, i) => `+1415555${String(3000 + i)}`)
    const kills = await crashRounds({
      rounds: ROUNDS,
      server,
      arm: (onAnswered) => {
        twilio.onAnswered = onAnswered
      },
      round: (index) => stop(customers[index]!, `SMcrashround${String(index).padStart(22, "0")}`)
    })
    expect(kills).toBe(ROUNDS)
    for (const customer of customers) {
      const { atTwilio, optOuts, rows } = await settled(customer)
      expect(rows).toHaveLength(1)
      expect(atTwilio).toHaveLength(1)
      expect(rows[0]?.sid).toBe(atTwilio[0]?.sid)
      expect(optOuts).toEqual([{ source: "keyword" }])
    }
  }, HEAVY)
})
