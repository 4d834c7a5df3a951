/**
 * Never twice, through crashes (issue 22): a fake Twilio answers each create
 * with 201, and the test kills Parley (SIGKILL) 0–40 ms later — before, while
 * or after it commits the answer — then starts it again on the same store, 25
 * times in `pnpm test:soak` (3 in `pnpm test`). Each round asks for two identical texts to the same number (the
 * appointment confirmation sent twice on purpose: every round's pair to the
 * one number, so every reconciliation meets many identical candidates) and one
 * text of its own. In the end every action is Delivered, and for each
 * recipient Twilio accepted as many creates as there are actions, each action
 * holding a different one (a text alone with its recipient: exactly one
 * create, the one its StatusCallback names). The fake serves three messages a
 * page, so reconciliation has to page. Runs on SQLite and, in the Postgres
 * pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CRASH_LEASE_MS, crashEnv, crashRounds, createRetrying } from "./support/crashes.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { soakSize } from "./support/soak.js"

/** 25 kills in `pnpm test:soak`; `pnpm test` runs 3 with the same assertions (support/soak.ts). */
const ROUNDS = soakSize(3, 25)
const PN1 = "PN00000000000000000000000000000001"
const SAME_NUMBER = "+14155550177"
const SAME_TEXT = "Your appointment on Friday at 10:00 is confirmed. Reply C to cancel."
const HEAVY = 900_000


describe("kill -9 right after Twilio's 201", () => {
  let twilio: TwilioFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 30, maxPageSize: 3 })
    server = await TestServer.start({
      env: { ...crashEnv, PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "3000", PARLEY_SIM_STEP_MS: "50" }
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
    twilio.onAnswered = undefined
    await server?.dispose()
    await twilio?.stop()
  })

  it(`sends every text exactly once through ${ROUNDS} kills, identical texts to one number included`, async () => {
    const text = (to: string, body: string) =>
      createRetrying(server, demo.keys.live, "/api/v1/messages", { fromNumberSid: PN1, to, body })
    const kills = await crashRounds({
      rounds: ROUNDS,
      server,
      arm: (onAnswered) => {
        twilio.onAnswered = onAnswered
      },
      round: async (round) => {
        await Promise.all([
          text(SAME_NUMBER, SAME_TEXT),
          text(SAME_NUMBER, SAME_TEXT),
          text(`+1415555${String(2000 + round)}`, `Round ${round}: your parcel is on its way.`)
        ])
      }
    })
    expect(kills).toBe(ROUNDS)

    // Every action the crashes left half-done is picked up (its lease lapses within CRASH_LEASE_MS) and finished.
    const actions = await until(async () => {
      const rows = await server.db.query<{ id: number | string; status: string }>(
        "SELECT id, status FROM actions WHERE org_id = ? AND kind = 'message'",
        [demo.orgId]
      )
      return rows.length > 0 && rows.every((r) => r.status === "Delivered") ? rows : undefined
    }, { timeoutMs: 300_000, intervalMs: 500, what: "every text Delivered" }).catch(async (error: unknown) => {
      const rows = await server.db.query<{ id: number | string; status: string; sid: string | null }>(
        "SELECT id, status, sid FROM actions WHERE org_id = ? AND kind = 'message' AND status <> 'Delivered'",
        [demo.orgId]
      )
      throw new Error(`${String(error)}; not Delivered: ${JSON.stringify(rows)}`)
    })
    expect(actions.length).toBeGreaterThanOrEqual(3 * ROUNDS)

    const rows = await server.db.query<{ id: number | string; counterpart: string; sid: string | null }>(
      "SELECT id, counterpart, sid FROM actions WHERE org_id = ? AND kind = 'message'",
      [demo.orgId]
    )
    const actionOf = (message: { readonly statusCallback: string | null }) =>
      new URL(message.statusCallback ?? "http://x.invalid/").searchParams.get("action") ?? "none"
    const diagnosis = () =>
      JSON.stringify({
        actions: rows,
        messages: twilio.messages.map((m) => ({ sid: m.sid, to: m.to, action: actionOf(m), created: m.dateCreated }))
      })

    // Texts with the same recipient and words cannot be told apart at Twilio (its list shows no
    // StatusCallback), and a request the kill cut, asked again, can make a second one of a text of its own:
    // for each recipient, as many creates as actions, each action holding a different one of them. For a text
    // alone with its recipient that is exactly one create, the one its StatusCallback names.
    const recipients = new Set(rows.map((r) => r.counterpart))
    expect([...recipients].filter((to) => to !== SAME_NUMBER).length).toBe(ROUNDS)
    expect(rows.filter((r) => r.counterpart === SAME_NUMBER).length).toBeGreaterThanOrEqual(2 * ROUNDS)
    for (const to of recipients) {
      const actions = rows.filter((r) => r.counterpart === to)
      const created = twilio.messages.filter((m) => m.to === to)
      expect(created.length, diagnosis()).toBe(actions.length)
      expect(new Set(actions.map((r) => r.sid)), diagnosis()).toEqual(new Set(created.map((m) => m.sid)))
      if (actions.length === 1) expect(created.map(actionOf)).toEqual([String(actions[0]?.id)])
    }
    // Nothing else was created, and no create failed.
    expect(twilio.messages.length).toBe(rows.length)
    expect(twilio.requests.filter((r) => r.method === "POST").length).toBe(rows.length)
  }, HEAVY)

  it("leaves a text whose request was out when Parley died for at most one dispatch lease, then sends it once", async () => {
    // Twilio never answers this create (and makes nothing): Parley is killed while its request is out.
    twilio.hangNext()
    const to = "+14155550199"
    await createRetrying(server, demo.keys.live, "/api/v1/messages", { fromNumberSid: PN1, to, body: "Hanging on" })
    const [held] = await until(async () => {
      const rows = await server.db.query<{ id: number | string; lease_until: number | string | null }>(
        `SELECT a.id, a.lease_until FROM actions a JOIN provider_submissions p ON p.action_id = CAST(a.id AS TEXT)
         WHERE a.org_id = ? AND a.counterpart = ? AND p.last_outcome = 'pending'`,
        [demo.orgId, to]
      )
      return rows.length > 0 && twilio.requests.some((r) => r.method === "POST" && r.form.some(([, v]) => v === to))
        ? rows
        : undefined
    }, { timeoutMs: 60_000, what: "the hanging request" })
    // The lease the dead worker leaves is the dispatch lease PARLEY_DISPATCH_LEASE_MS sets (it was 5 minutes
    // for a real provider's row, whatever the setting; config.test.ts checks its default of 30 s).
    expect(Number(held?.lease_until) - Date.now()).toBeLessThanOrEqual(CRASH_LEASE_MS)
    await server.restart("SIGKILL")
    const [sent] = await until(async () => {
      const rows = await server.db.query<{ status: string }>(
        "SELECT status FROM actions WHERE org_id = ? AND counterpart = ?",
        [demo.orgId, to]
      )
      return rows[0]?.status === "Delivered" ? rows : undefined
    }, { timeoutMs: 120_000, intervalMs: 500, what: "the text Delivered" })
    expect(sent?.status).toBe("Delivered")
    expect(twilio.messages.filter((m) => m.to === to)).toHaveLength(1)
  }, HEAVY)
})
