/**
 * The one writer of an action's status (store/StatusChanges.ts), on the store this run tests (SQLite, or
 * Postgres with PARLEY_TEST_STORE=postgres), through both of its callers' ways in: a provider's report (the
 * core's ActionStore port, as ProviderReports calls it) and the dispatcher's leased batches. Whoever writes,
 * a change applies only while the row shows the status it was decided from (and, for the dispatcher, while
 * the worker's lease holds), records the provider's id only once, keeps what it leaves undefined, releases
 * the lease, and comes back as the row now is.
 */
import { SqlClient } from "@effect/sql"
import { ActionStore } from "@parley/core/domain"
import { Effect, ManagedRuntime, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as SqlActionStore from "../src/store/SqlActionStore.js"
import * as StatusChanges from "../src/store/StatusChanges.js"
import { storedText } from "./support/actions.js"
import { onTestDatabase } from "./support/storeLayer.js"
import { createTestDatabase, type TestDatabase, testStore } from "./support/store.js"

const ORG = "org_status"
const MODIFIED = "2026-02-01T10:00:00.000Z"

describe("the one status writer", () => {
  let db: TestDatabase
  let runtime: ManagedRuntime.ManagedRuntime<ActionStore.ActionStore | SqlClient.SqlClient, unknown>
  const run = <A, E>(effect: Effect.Effect<A, E, ActionStore.ActionStore | SqlClient.SqlClient>) => runtime.runPromise(effect)
  const writer = () => run(StatusChanges.make)
  let next = 0

  /** A text handed to the carrier (Sending, committed), optionally leased by `owner`. */
  const sending = async (overrides: Partial<ActionStore.NewAction> = {}, owner: string | null = null) => {
    const action = await run(Effect.flatMap(ActionStore.ActionStore, (store) =>
      store.insertAction(storedText(ORG, next++, { status: "Sending", read: null, errorMessage: "earlier", ...overrides }))))
    await db.query("UPDATE actions SET charged_at = 1, work_at = 5, lease_owner = ?, lease_until = ? WHERE id = ?", [
      owner,
      owner === null ? null : Date.now() + 60_000,
      Number(action.id)
    ])
    return action
  }
  const row = async (id: string) =>
    (await db.query<{
      status: string
      sid: string | null
      provider_status: string | null
      error_message: string | null
      body: string
      work_at: number | null
      lease_owner: string | null
      modified: string
    }>(
      "SELECT status, sid, provider_status, error_message, body, work_at, lease_owner, modified FROM actions WHERE id = ?",
      [Number(id)]
    ))[0]

  beforeAll(async () => {
    db = await createTestDatabase()
    runtime = ManagedRuntime.make(onTestDatabase(db, SqlActionStore.layer))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
    await db?.drop()
  })

  it("applies a provider's report while the status is the one it was decided from, and only then", async () => {
    const action = await sending({}, "worker_a")
    const report = (expected: "Sending" | "Sent", status: "Sent" | "Delivered") =>
      run(Effect.flatMap(ActionStore.ActionStore, (store) =>
        store.applyProviderReport(ORG, action.id, expected, {
          status,
          providerStatus: status.toLowerCase(),
          sid: "SM_first",
          workAt: status === "Sent" ? 99 : null,
          modified: MODIFIED
        })))
    const applied = await report("Sending", "Sent")
    // The row as it now is: the provider's id recorded, the error kept (the report did not name one).
    expect(Option.getOrThrow(applied)).toMatchObject({ id: action.id, status: "Sent", sid: "SM_first", errorMessage: "earlier" })
    // The provider drives the action now: the dispatcher's lease is released, its queue looks again at work_at.
    expect(await row(action.id)).toMatchObject({ status: "Sent", provider_status: "sent", work_at: 99, lease_owner: null })
    // A second report decided from the same, now stale, status changes nothing.
    expect(Option.isNone(await report("Sending", "Sent"))).toBe(true)
    // Another organisation's report about the same id changes nothing either.
    const foreign = await run(Effect.flatMap(ActionStore.ActionStore, (store) =>
      store.applyProviderReport("org_other", action.id, "Sent", {
        status: "Delivered",
        providerStatus: "delivered",
        workAt: null,
        modified: MODIFIED
      })))
    expect(Option.isNone(foreign)).toBe(true)
    expect((await row(action.id))?.status).toBe("Sent")
  })

  it("records the provider's id only when the action has none, keeps what a change leaves out, clears an error set to null", async () => {
    const action = await sending({ sid: "SM_answer", body: "Kept body" })
    const status = await writer()
    const [changed] = await run(status.write([{
      orgId: ORG,
      id: action.id,
      expected: "Sending",
      status: "Sent",
      workAt: null,
      modified: MODIFIED,
      sid: "SM_callback",
      errorMessage: null
    }]))
    expect(changed).toMatchObject({ status: "Sent", sid: "SM_answer", body: "Kept body", errorMessage: null, modified: MODIFIED })
    expect(await row(action.id)).toMatchObject({ sid: "SM_answer", body: "Kept body", error_message: null, work_at: null })
  })

  it("applies the dispatcher's changes only to rows its worker leases, in one statement, in the changes' order", async () => {
    const mine = [await sending({}, "worker_a"), await sending({}, "worker_a"), await sending({}, "worker_a")]
    const lapsed = await sending({}, "worker_b")
    const status = await writer()
    const change = (id: string, to: "Sent" | "Failed") => ({
      orgId: ORG,
      id,
      expected: "Sending" as const,
      status: to,
      workAt: null,
      modified: MODIFIED,
      sid: `SM_${id}`,
      providerStatus: to.toLowerCase(),
      errorMessage: to === "Failed" ? "21211: Invalid 'To' phone number" : null
    })
    const [first, second, third] = mine
    if (first === undefined || second === undefined || third === undefined) throw new Error("three actions")
    // Changes given in an order the database has no reason to return them in.
    const changed = await run(status.write(
      [change(third.id, "Sent"), change(lapsed.id, "Sent"), change(first.id, "Failed"), change(second.id, "Sent")],
      { leaseOwner: "worker_a" }
    ))
    expect(changed.map((a) => [a.id, a.status])).toEqual([[third.id, "Sent"], [first.id, "Failed"], [second.id, "Sent"]])
    expect(changed[1]).toMatchObject({ sid: `SM_${first.id}`, errorMessage: "21211: Invalid 'To' phone number" })
    expect(await row(lapsed.id)).toMatchObject({ status: "Sending", lease_owner: "worker_b" })
    for (const a of mine) expect((await row(a.id))?.lease_owner).toBeNull()
  })

  it.skipIf(testStore !== "sqlite")("looks the changed rows up by primary key on SQLite, never by scanning actions", async () => {
    // A dispatcher's batch: the planner weighs the VALUES list's size against the table's.
    const status = await writer()
    const [text, params] = status.statement(Array.from({ length: 500 }, (_, i) => ({
      orgId: ORG,
      id: String(i + 1),
      expected: "Sending" as const,
      status: "Sent" as const,
      workAt: null,
      modified: MODIFIED
    })), { leaseOwner: "worker_a" }).compile()
    const plan = await db.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
    const details = plan.map((step) => step.detail)
    expect(details.some((d) => /^SEARCH actions USING INTEGER PRIMARY KEY/.test(d)), details.join("\n")).toBe(true)
    expect(details.some((d) => /^SCAN actions\b/.test(d)), details.join("\n")).toBe(false)
  })
})
