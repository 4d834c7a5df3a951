/**
 * Zoho's concurrency cap, kept by Parley (issue 31): Zoho refuses a call beyond an organisation's cap on
 * concurrent calls (Free edition 5 … Ultimate 25) with 429. Every CRM call of an organisation — creation,
 * the write-back, inbound records, `crm setup` — takes one of PARLEY_ZOHO_CONCURRENCY slots first and gives
 * it back when Zoho has answered; a call that finds none free waits its turn (at most QUEUE_MS, then it is
 * `busy`: 503 CRM_RATE_LIMITED) instead of meeting Zoho's 429.
 *
 * Within a process the slots are a semaphore per organisation. With Postgres, replicas share them: each
 * call also leases one row of `zoho_call_slots` (migration 0024), claimed with SKIP LOCKED and released
 * after the call; a lease outlives a dead holder by at most LEASE_MS.
 */
import { SqlClient } from "@effect/sql"
import { Crm } from "@parley/core/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { ZohoConfig } from "./ZohoConfig.js"
import { DbInt } from "../../store/rows.js"
import { CALL_TIMEOUT_MS } from "./ZohoApi.js"
import type { ZohoSessionService } from "./ZohoSession.js"

/** The longest a call waits for a slot before it is answered `busy`. */
export const QUEUE_MS = 15_000
/** A slot's lease: longer than a call with its two short retries can take (ZohoApi). */
const LEASE_MS = CALL_TIMEOUT_MS * 3 + 5_000
const POLL_MS = 20

const Slot = Schema.Struct({ slot: DbInt })

export const limitCalls = (session: ZohoSessionService) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ZohoConfig
    const slots = config.zohoConcurrency
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
    const busy = () =>
      new Crm.CrmError({ operation: "zoho.slot", cause: "concurrency", reason: "busy", retryAfterSeconds: 1 })
    const storageBusy = (cause: unknown) => new Crm.CrmError({ operation: "zoho.slot", cause, reason: "unavailable" })

    /** Postgres: one row of the organisation's slots, leased to this call; waits for one to free. */
    const leaseRow = (orgId: string, deadline: number) =>
      Effect.gen(function*() {
        if (!prepared.has(orgId)) {
          for (let slot = 0; slot < slots; slot++) {
            yield* sql`INSERT INTO zoho_call_slots (org_id, slot, holder, lease_until) VALUES (${orgId}, ${slot}, '', 0)
                       ON CONFLICT (org_id, slot) DO NOTHING`
          }
          prepared.add(orgId)
        }
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          const taken = yield* Effect.flatMap(
            sql`UPDATE zoho_call_slots SET holder = ${holder}, lease_until = ${now + LEASE_MS}
                WHERE org_id = ${orgId} AND slot = (SELECT slot FROM zoho_call_slots
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
      Effect.ignore(sql`UPDATE zoho_call_slots SET lease_until = 0 WHERE org_id = ${orgId} AND slot = ${slot} AND holder = ${holder}`)

    const call: ZohoSessionService["call"] = (orgId, method, path, body) =>
      Effect.gen(function*() {
        const deadline = (yield* Clock.currentTimeMillis) + QUEUE_MS
        const inner = session.call(orgId, method, path, body)
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
    return { call } satisfies ZohoSessionService
  })
