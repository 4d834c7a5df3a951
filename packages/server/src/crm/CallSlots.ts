/**
 * A CRM's concurrency cap, kept by Parley: a CRM refuses calls beyond an organisation's cap on concurrent
 * calls with 429. Every call of an organisation takes one of `slots` first and gives it back when the CRM
 * has answered; a call that finds none free waits its turn (at most QUEUE_MS, then it is `busy`: 503
 * CRM_RATE_LIMITED) instead of meeting the CRM's 429.
 *
 * Within a process the slots are a semaphore per organisation. With Postgres, replicas share them: each
 * call also leases one row of the CRM's slots table (`org_id, slot, holder, lease_until`), claimed with
 * SKIP LOCKED and released after the call; a lease outlives a dead holder by at most `leaseMs`.
 */
import { SqlClient } from "@effect/sql"
import { Crm } from "@parley/core/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { DbInt } from "../store/rows.js"

/** The longest a call waits for a slot before it is answered `busy`. */
export const QUEUE_MS = 15_000
const POLL_MS = 20

const Slot = Schema.Struct({ slot: DbInt })

export interface CallSlotsOptions {
  /** The CRM's name, for the errors' operation (`<name>.slot`). */
  readonly crm: string
  /** The table of leased slots (Postgres). */
  readonly table: string
  /** Calls in flight at once per organisation. */
  readonly slots: number
  /** A slot's lease: longer than one call, with its retries, can take. */
  readonly leaseMs: number
}

/** `withSlot(orgId, call)`: the call, made within the organisation's cap. */
export const makeCallSlots = (options: CallSlotsOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { slots } = options
    const table = sql(options.table)
    const shared = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const holder = randomUUID()
    const decodeSlot = Schema.decodeUnknown(Schema.Array(Slot))
    const semaphores = new Map<string, Effect.Semaphore>()
    const prepared = new Set<string>()
    const semaphoreOf = (orgId: string) => {
      let found = semaphores.get(orgId)
      if (found === undefined) {
        found = Effect.unsafeMakeSemaphore(slots)
        semaphores.set(orgId, found)
      }
      return found
    }
    const operation = `${options.crm}.slot`
    const busy = () => new Crm.CrmError({ operation, cause: "concurrency", reason: "busy", retryAfterSeconds: 1 })
    const storageBusy = (cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

    /** Postgres: one row of the organisation's slots, leased to this call; waits for one to free. */
    const leaseRow = (orgId: string, deadline: number) =>
      Effect.gen(function*() {
        if (!prepared.has(orgId)) {
          for (let slot = 0; slot < slots; slot++) {
            yield* sql`INSERT INTO ${table} (org_id, slot, holder, lease_until) VALUES (${orgId}, ${slot}, '', 0)
                       ON CONFLICT (org_id, slot) DO NOTHING`
          }
          prepared.add(orgId)
        }
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          const taken = yield* Effect.flatMap(
            sql`UPDATE ${table} SET holder = ${holder}, lease_until = ${now + options.leaseMs}
                WHERE org_id = ${orgId} AND slot = (SELECT slot FROM ${table}
                  WHERE org_id = ${orgId} AND slot < ${slots} AND lease_until < ${now}
                  ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING slot`,
            decodeSlot
          )
          const first = taken[0]
          if (first !== undefined) return first.slot
          if (now >= deadline) return yield* busy()
          yield* Effect.sleep(POLL_MS + Math.floor(Math.random() * POLL_MS))
        }
      })
    const releaseRow = (orgId: string, slot: number) =>
      Effect.ignore(sql`UPDATE ${table} SET lease_until = 0 WHERE org_id = ${orgId} AND slot = ${slot} AND holder = ${holder}`)

    const withSlot = <A, E>(orgId: string, inner: Effect.Effect<A, E>): Effect.Effect<A, E | Crm.CrmError> =>
      Effect.gen(function*() {
        const deadline = (yield* Clock.currentTimeMillis) + QUEUE_MS
        const guarded = shared
          ? Effect.acquireUseRelease(
            Effect.mapError(leaseRow(orgId, deadline), (error) => error._tag === "CrmError" ? error : storageBusy(error)),
            () => inner,
            (slot) => releaseRow(orgId, slot)
          )
          : inner
        const semaphore = semaphoreOf(orgId)
        // Waiting for the process's own slot, then (replicas) for a shared one, is bounded; the call itself is
        // not. Masked so that no interruption lands between taking the permit and arranging its return.
        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(Effect.timeoutOption(semaphore.take(1), QUEUE_MS)), (took) =>
            Option.isNone(took) ? Effect.fail(busy()) : Effect.ensuring(restore(guarded), semaphore.release(1)))
        )
      })
    return { withSlot }
  })
