/**
 * Never twice, through crashes, for AI calls through Retell (issue 24): the
 * Retell equivalent of crash-vapi.test.ts. A fake Retell answers each
 * create-phone-call with 201 and the test kills Parley (SIGKILL) 0–40 ms
 * later, then starts it again, 25 times; each round asks for two identical
 * calls to the same customer and one of its own. Retell keeps the action's id
 * in the call's metadata, so here every action, identical ones included, must
 * have had exactly one create, and hold that call. Runs on SQLite and, in the
 * Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crashRounds, createRetrying } from "./support/crashes.js"
import { RetellFake, type RetellFakeCall } from "./support/fakes/RetellFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const ROUNDS = 25
const PN1 = "PN00000000000000000000000000000001"
const FROM = "+14155550100"
const AGENT = "agent_0123456789abcdef01234567"
const SAME_CUSTOMER = "+14155550377"
const HEAVY = 900_000
const FINAL = new Set(["Completed", "No Answer", "Busy", "Failed"])

/** The Parley action a call names in its metadata. */
const actionOf = (call: RetellFakeCall): string | undefined => {
  const metadata: unknown = call.resource.metadata
  if (typeof metadata !== "object" || metadata === null || !("parleyActionId" in metadata)) return undefined
  return typeof metadata.parleyActionId === "string" ? metadata.parleyActionId : undefined
}

describe("kill -9 right after Retell's 201", () => {
  let retell: RetellFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    retell = await RetellFake.start({ stepMs: 30, agents: [AGENT], numbers: [{ number: FROM }] })
    server = await TestServer.start({
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "3000", PARLEY_SIM_STEP_MS: "50" }
    })
    demo = await server.demo()
    for (
      const args of [
        ["orgs", "update", demo.orgId, "--call-allowance", "unlimited"],
        ["providers", "set", "--org", demo.orgId, "--kind", "retell", "--api-key", retell.apiKey, "--api-base", retell.url],
        ["numbers", "add", "--org", demo.orgId, "--sid", PN1, "--phone", FROM, "--name", "Sales line", "--voice-bot", "bot_sales"],
        ["bots", "add", "--org", demo.orgId, "--id", "bot_sales", "--name", "Sales qualifier", "--provider-id", AGENT]
      ]
    ) {
      const result = await server.admin(args)
      if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed: ${result.stderr}`)
    }
    // The server keeps its port across restarts, so the agent's webhook URL stays right.
    retell.setWebhook(`${server.baseUrl}/providers/retell/events?org=${demo.orgId}`, AGENT)
  }, HEAVY)

  afterAll(async () => {
    if (retell !== undefined) retell.onAnswered = undefined
    await server?.dispose()
    await retell?.stop()
  })

  it(`places every call exactly once through ${ROUNDS} kills, identical calls to one customer included`, async () => {
    const call = (to: string, purposeMessage: string) =>
      createRetrying(server, demo.keys.live, "/api/v1/ai-calls", {
        to,
        fromNumberSid: PN1,
        botId: "bot_sales",
        mode: "deliver_specific_message",
        purposeMessage
      })
    const kills = await crashRounds({
      rounds: ROUNDS,
      server,
      arm: (onAnswered) => {
        retell.onAnswered = onAnswered
      },
      round: async (round) => {
        await Promise.all([
          call(SAME_CUSTOMER, "Confirm Friday at 10"),
          call(SAME_CUSTOMER, "Confirm Friday at 10"),
          call(`+1415555${String(3000 + round)}`, `Round ${round}: confirm the delivery`)
        ])
      }
    })
    expect(kills).toBe(ROUNDS)

    const rows = await until(async () => {
      const found = await server.db.query<{ id: number | string; status: string; sid: string | null }>(
        "SELECT id, status, sid FROM actions WHERE org_id = ? AND kind = 'ai_call'",
        [demo.orgId]
      )
      return found.length > 0 && found.every((r) => FINAL.has(r.status)) ? found : undefined
    }, { timeoutMs: 300_000, intervalMs: 500, what: "every call final" })
    expect(rows.length).toBeGreaterThanOrEqual(3 * ROUNDS)
    expect(rows.filter((r) => r.status !== "Completed")).toEqual([])
    const diagnosis = JSON.stringify({
      actions: rows,
      calls: retell.calls.map((c) => ({ id: c.resource.call_id, action: actionOf(c) }))
    })
    for (const action of rows) {
      const placed = retell.calls.filter((c) => actionOf(c) === String(action.id))
      expect(placed.map((c) => c.resource.call_id), diagnosis).toEqual([action.sid])
    }
    expect(retell.calls.length).toBe(rows.length)
    // list-calls is a POST too: only creates count.
    expect(retell.requests.filter((r) => r.method === "POST" && r.path === "/v2/create-phone-call").length).toBe(rows.length)
  }, HEAVY)
})
