/**
 * Rechecks through a crash loop (issue 35, item 18): texts Twilio accepted
 * but whose status callbacks were lost reach Delivered through Parley's
 * rechecks even while Parley keeps being killed (SIGKILL) and started again,
 * each start meeting a send due with them. Every create hangs during the
 * loop (Twilio never answers: a slow provider), and the next text is asked
 * for while the process is stuck on the last one, so each start's first claim
 * holds both that send and the due rechecks. Before, a round ran its sends
 * before its rechecks: every start died inside its sends, and the rechecks
 * never ran. Runs on SQLite and, in the Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createRetrying } from "./support/crashes.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const HEAVY = 300_000
const PN1 = "PN00000000000000000000000000000001"
/** The recheck interval here (the README's 30 s, shortened). */
const RECHECK_MS = 3_000
const LOST = ["+14155550301", "+14155550302", "+14155550303"]
/** Starts after the rechecks fell due, each with a send due beside them. */
const STARTS_AFTER_DUE = 2

describe("kill -9 in a loop with rechecks due", () => {
  let twilio: TwilioFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 30 })
    server = await TestServer.start({
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: String(RECHECK_MS) }
    })
    demo = await server.demo()
    for (
      const args of [
        ["orgs", "update", demo.orgId, "--sms-allowance", "unlimited"],
        [
          "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
          "--auth-token", twilio.authToken, "--api-base", twilio.url
        ]
      ]
    ) {
      const result = await server.admin(args)
      if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed: ${result.stderr}`)
    }
  }, HEAVY)

  afterAll(async () => {
    await server?.dispose()
    await twilio?.stop()
  })

  const statusesOf = (numbers: ReadonlyArray<string>) =>
    server.db.query<{ counterpart: string; status: string; sid: string | null }>(
      `SELECT counterpart, status, sid FROM actions WHERE org_id = ? AND counterpart IN (${numbers.map(() => "?").join(", ")})`,
      [demo.orgId, ...numbers]
    )
  const createArrived = (to: string) =>
    twilio.requests.some((r) => r.method === "POST" && r.form.some(([k, v]) => k === "To" && v === to))

  it("delivers texts whose callbacks were lost while every start dies in its sends", async () => {
    // Accepted by Twilio, every callback lost (unsigned: refused): only a recheck can tell Parley.
    twilio.tweakNextCallbacks({ signature: "none" }, LOST.length)
    for (const to of LOST) {
      await createRetrying(server, demo.keys.live, "/api/v1/messages", { fromNumberSid: PN1, to, body: "Your parcel is on its way." })
    }
    await until(async () => {
      const rows = await statusesOf(LOST)
      const posted = twilio.messages.every((m) => twilio.callbacksFor(m.sid).length >= 3)
      return rows.length === LOST.length && rows.every((r) => r.sid !== null) && twilio.messages.length === LOST.length &&
          posted
        ? rows
        : undefined
    }, { what: "the texts accepted and their callbacks lost", timeoutMs: 30_000 })
    const due = Date.now() + RECHECK_MS
    const before = await statusesOf(LOST)
    expect(before.filter((r) => r.status === "Delivered"), "delivered before any recheck").toEqual([])

    // From now on Twilio never answers a create: each process gets stuck in its sends until it is killed.
    twilio.hangNext(1_000)
    let sent = 0
    const send = async () => {
      const to = `+1415555040${sent++}`
      await createRetrying(server, demo.keys.live, "/api/v1/messages", { fromNumberSid: PN1, to, body: "Hello" })
      return to
    }
    let stuckOn = await send()
    let startsAfterDue = 0
    let restarts = 0
    while (startsAfterDue < STARTS_AFTER_DUE) {
      await until(async () => createArrived(stuckOn) ? true : undefined, { what: `the create to ${stuckOn}`, timeoutMs: 60_000 })
      // Asked for while the process is stuck: the next start's first claim holds it with whatever else is due.
      const next = await send()
      const startsAfter = Date.now() > due
      await server.restart("SIGKILL")
      restarts++
      if (startsAfter) startsAfterDue++
      stuckOn = next
    }
    // The last start is stuck on its send again: what moved the lost texts ran before it or beside it.
    await until(async () => createArrived(stuckOn) ? true : undefined, { what: `the create to ${stuckOn}`, timeoutMs: 60_000 })
    const rows = await statusesOf(LOST)
    expect(rows.map((r) => r.status), `after ${restarts} restarts`).toEqual(LOST.map(() => "Delivered"))
  }, HEAVY)
})
