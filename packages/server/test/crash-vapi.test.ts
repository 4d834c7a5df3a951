/**
 * Never twice, through crashes, for AI calls (issue 22): the Vapi equivalent
 * of crash-twilio.test.ts. A fake Vapi answers each create with 201 and the
 * test kills Parley (SIGKILL) 0–40 ms later, then starts it again, 25 times
 * (3 in `pnpm test`, 25 in `pnpm test:soak`); each round asks for two identical calls to the same customer and one of its
 * own. Vapi keeps the action's id with the call (assistantOverrides.metadata),
 * so here every action, identical ones included, must have had exactly one
 * create, and hold that call. Runs on SQLite and, in the Postgres pass, on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AiCallSuite, VAPI } from "./support/aiCallSuite.js"
import type { VapiFake } from "./support/fakes/VapiFake.js"
import { CRASH_LEASE_MS } from "./support/crashes.js"
import { soakSize } from "./support/soak.js"

/** 25 kills in `pnpm test:soak`; `pnpm test` runs 3 with the same assertions (support/soak.ts). */
const ROUNDS = soakSize(3, 25)
const SAME_CUSTOMER = "+14155550277"
const HEAVY = 900_000

/** The Parley action a call names in its assistantOverrides.metadata. */
const actionOf = (call: { readonly assistantOverrides: Readonly<Record<string, unknown>> | null }): string | undefined => {
  const metadata = call.assistantOverrides?.["metadata"]
  if (typeof metadata !== "object" || metadata === null || !("parleyActionId" in metadata)) return undefined
  return typeof metadata.parleyActionId === "string" ? metadata.parleyActionId : undefined
}

describe("kill -9 right after Vapi's 201", () => {
  let vapi: VapiFake
  const suite = new AiCallSuite(VAPI, { recheckMs: 3_000, unlimitedCalls: true, leaseMs: CRASH_LEASE_MS })

  beforeAll(async () => {
    vapi = (await suite.start()).fake
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
