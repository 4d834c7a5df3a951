/**
 * Never twice, through crashes, for AI calls (issue 22): the Vapi equivalent
 * of crash-twilio.test.ts. A fake Vapi answers each create with 201 and the
 * test kills Parley (SIGKILL) 0–40 ms later, then starts it again, 25 times;
 * each round asks for two identical calls to the same customer and one of its
 * own. Vapi keeps the action's id with the call (assistantOverrides.metadata),
 * so here every action, identical ones included, must have had exactly one
 * create, and hold that call. Runs on SQLite and, in the Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crashRounds, createRetrying } from "./support/crashes.js"
import { VapiFake } from "./support/fakes/VapiFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const ROUNDS = 25
const PN1 = "PN00000000000000000000000000000001"
const VAPI_PHONE = "3f1c9a2e-5b7d-4e61-9c3a-0d2b8e7f6a51"
const ASSISTANT = "a1b2c3d4-0000-4000-8000-00000000a551"
const SECRET = "vapi-server-secret-for-tests"
const SAME_CUSTOMER = "+14155550277"
const HEAVY = 900_000
const FINAL = new Set(["Completed", "No Answer", "Busy", "Failed"])

/** The Parley action a call names in its assistantOverrides.metadata. */
const actionOf = (call: { readonly assistantOverrides: Readonly<Record<string, unknown>> | null }): string | undefined => {
  const metadata = call.assistantOverrides?.["metadata"]
  if (typeof metadata !== "object" || metadata === null || !("parleyActionId" in metadata)) return undefined
  return typeof metadata.parleyActionId === "string" ? metadata.parleyActionId : undefined
}

describe("kill -9 right after Vapi's 201", () => {
  let vapi: VapiFake
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    vapi = await VapiFake.start({ stepMs: 30 })
    server = await TestServer.start({
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "3000", PARLEY_SIM_STEP_MS: "50" }
    })
    demo = await server.demo()
    for (
      const args of [
        ["orgs", "update", demo.orgId, "--call-allowance", "unlimited"],
        [
          "providers", "set", "--org", demo.orgId, "--kind", "vapi", "--api-key", vapi.apiKey, "--webhook-secret", SECRET,
          "--api-base", vapi.url
        ],
        [
          "numbers", "add", "--org", demo.orgId, "--sid", PN1, "--phone", "+14155550100", "--name", "Sales line",
          "--voice-bot", "bot_sales", "--provider-id", VAPI_PHONE
        ],
        ["bots", "add", "--org", demo.orgId, "--id", "bot_sales", "--name", "Sales qualifier", "--provider-id", ASSISTANT]
      ]
    ) {
      const result = await server.admin(args)
      if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed: ${result.stderr}`)
    }
    // The server keeps its port across restarts, so Vapi's server URL stays right.
    vapi.setServer(`${server.baseUrl}/providers/vapi/events?org=${demo.orgId}`, SECRET)
  }, HEAVY)

  afterAll(async () => {
    vapi.onAnswered = undefined
    await server?.dispose()
    await vapi?.stop()
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
        vapi.onAnswered = onAnswered
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
      calls: vapi.calls.map((c) => ({ id: c.id, action: actionOf(c) }))
    })
    for (const action of rows) {
      const placed = vapi.calls.filter((c) => actionOf(c) === String(action.id))
      expect(placed.map((c) => c.id), diagnosis).toEqual([action.sid])
    }
    expect(vapi.calls.length).toBe(rows.length)
    expect(vapi.requests.filter((r) => r.method === "POST").length).toBe(rows.length)
  }, HEAVY)
})
