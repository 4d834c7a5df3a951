/**
 * Zoho's concurrency cap, kept by Parley (issue 31; crm/CallSlots): Zoho refuses a call beyond an
 * organisation's cap on concurrent calls (Free edition 5 … Ultimate 25) with 429. Every CRM call of an
 * organisation — creation, the write-back, inbound records, `crm setup` — takes one of
 * PARLEY_ZOHO_CONCURRENCY slots first; with Postgres, replicas share them as rows of `zoho_call_slots`
 * (migration 0024).
 */
import { Effect } from "effect"
import { makeCallSlots } from "../CallSlots.js"
import { CALL_TIMEOUT_MS } from "./ZohoApi.js"
import { ZohoConfig } from "./ZohoConfig.js"
import type { ZohoSessionService } from "./ZohoSession.js"

/** A slot's lease: longer than a call with its two short retries can take (ZohoApi). */
const LEASE_MS = CALL_TIMEOUT_MS * 3 + 5_000

export const limitCalls = (session: ZohoSessionService) =>
  Effect.gen(function*() {
    const config = yield* ZohoConfig
    const { withSlot } = yield* makeCallSlots({ crm: "zoho", table: "zoho_call_slots", slots: config.zohoConcurrency, leaseMs: LEASE_MS })
    const call: ZohoSessionService["call"] = (orgId, method, path, body) => withSlot(orgId, session.call(orgId, method, path, body))
    return { call } satisfies ZohoSessionService
  })
