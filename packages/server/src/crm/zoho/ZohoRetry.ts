/**
 * How the two Zoho outboxes (ZohoWriteBack, ZohoInboundRecords) treat a failure: nothing Zoho may yet accept
 * is ever dropped. An outage, a 429 (the concurrency cap, or the day's API credits until they return), a
 * lapsed connection (OAUTH_REQUIRED overnight) or a missing module is retried with a backoff that doubles from
 * 2 seconds up to MAX_BACKOFF_MS, for as long as it takes; a reconnect makes everything due at once (migration
 * 0023). Only a refusal of the record itself (INVALID_DATA, MANDATORY_NOT_FOUND, DUPLICATE_DATA…), which the
 * same record will meet again, ends the retries — and is recorded where the administrator looks: the
 * connection's last error (`parley crm status`, the console's CRM page), the metric
 * `parley_zoho_refused_total` and a warning in the log with Zoho's code.
 */
import type { Crm } from "@parley/core/domain"
import { ActionStore, Events } from "@parley/core/internal"
import { Effect, Option } from "effect"
import { Metrics } from "../../observability/Metrics.js"
import type { ZohoConnectionsService } from "./ZohoConnections.js"

export const MAX_BACKOFF_MS = 15 * 60_000

export const backoffMs = (attempts: number): number => Math.min(2000 * 2 ** Math.min(attempts, 20), MAX_BACKOFF_MS)

/** A refusal no retry can change: the record as Parley sends it is what Zoho refuses. */
export const isPermanent = (error: Crm.CrmError): boolean => error.reason === "rejected"

/** Records a record Parley gave up on (see the module's comment). */
export const recordRefusal = (
  connections: ZohoConnectionsService,
  outbox: "writeback" | "inbound",
  orgId: string,
  actionId: string,
  refusal: { readonly code: string; readonly field?: string | undefined },
  now: number
) =>
  Effect.gen(function*() {
    const what = outbox === "writeback" ? "a write-back of action" : "the record of inbound text"
    const field = refusal.field === undefined ? "" : ` on field ${refusal.field}`
    yield* Effect.ignore(connections.recordError(
      orgId,
      `Zoho refused ${what} ${actionId} for good (${refusal.code}${field}); Parley keeps the action, Zoho does not have it.`,
      new Date(now).toISOString()
    ))
    const metrics = yield* Effect.serviceOption(Metrics)
    if (Option.isSome(metrics)) metrics.value.zohoRefused(outbox, refusal.code)
    // Where an integration hears of it: the action's own record as the event's data.
    const action = yield* ActionStore.ActionStore.pipe(Effect.flatMap((store) => store.findAction(orgId, actionId)))
    if (Option.isSome(action)) yield* Effect.ignore(Events.emit("crm.record_refused", action.value))
    yield* Effect.annotateLogs(Effect.logWarning("zoho refused a record for good"), {
      outbox,
      orgId,
      actionId,
      zohoCode: refusal.code,
      ...(refusal.field === undefined ? {} : { field: refusal.field })
    })
  })
