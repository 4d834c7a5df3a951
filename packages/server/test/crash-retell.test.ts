/**
 * Never twice, through crashes, for AI calls through Retell (issue 24): the
 * Retell equivalent of crash-vapi.test.ts. A fake Retell answers each
 * create-phone-call with 201 and the test kills Parley (SIGKILL) 0–40 ms
 * later, then starts it again, 25 times (3 in `pnpm test`, 25 in `pnpm
 * test:soak`); each round asks for two identical calls to the same customer
 * and one of its own. Retell keeps the action's id
 * in the call's metadata, so here every action, identical ones included, must
 * have had exactly one create, and hold that call. Runs on SQLite and, in the
 * Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AiCallSuite, RETELL } from "./support/aiCallSuite.js"
import type { RetellFake, RetellFakeCall } from "./support/fakes/RetellFake.js"
import { CRASH_LEASE_MS } from "./support/crashes.js"
import { soakSize } from "./support/soak.js"

/** 25 kills in `pnpm test:soak`; `pnpm test` runs 3 with the same assertions (support/soak.ts). */
const ROUNDS = soakSize(3, 25)
const SAME_CUSTOMER = "+14155550377"
const HEAVY = 900_000

/** The Parley action a call names in its metadata. */
const actionOf = (call: RetellFakeCall): string | undefined => {
  const metadata: unknown = call.resource.metadata
  if (typeof metadata !== "object" || metadata === null || !("parleyActionId" in metadata)) return undefined
  return typeof metadata.parleyActionId === "string" ? metadata.parleyActionId : undefined
}

describe("kill -9 right after Retell's 201", () => {
  let retell: RetellFake
  const suite = new AiCallSuite(RETELL, { recheckMs: 3_000, unlimitedCalls: true, leaseMs: CRASH_LEASE_MS })

  beforeAll(async () => {
    retell = (await suite.start()).fake
  }, HEAVY)
  afterAll(suite.dispose)

  it(`places every call exactly once through ${ROUNDS} kills, identical calls to one customer included`, async () => {
    const kills = await suite.callThroughKills(ROUNDS, SAME_CUSTOMER)
    expect(kills).toBe(ROUNDS)

    const rows = await suite.finalCalls()
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
