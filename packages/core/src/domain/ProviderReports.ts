/**
 * What carriers and AI-call providers report about an action after it was
 * handed to them (their callbacks, the simulator's steps), already mapped
 * onto Parley's statuses by each provider, applied once, in order:
 * - the provider's raw status is kept apart in `provider_status`;
 * - a report only ever moves an action forward (Sending → Sent → Delivered;
 *   Ringing → In Progress → Completed): a duplicate, or a `sent` arriving
 *   after `delivered` (callbacks are not ordered), changes nothing;
 * - a final status (Delivered, Undelivered, Failed, Completed, No Answer,
 *   Busy, Cancelled) never changes again;
 * - the status change and its event commit together.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { CallStatus, MessageStatus, RecordStatus } from "../contract/Statuses.js"
import { ActionStore, type ActionKind, type Action, type ProviderChange } from "../ports/ActionStore.js"
import type { EventOutbox } from "../ports/EventOutbox.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { emit, eventForStatus } from "./Events.js"

const TEXT_RANK: Readonly<Record<MessageStatus, number>> = {
  Queued: 0,
  Sending: 1,
  Sent: 2,
  Delivered: 3,
  Undelivered: 3,
  Failed: 3,
  Cancelled: 3,
  Received: 3
}
const CALL_RANK: Readonly<Record<CallStatus, number>> = {
  Queued: 0,
  Ringing: 1,
  "In Progress": 2,
  Completed: 3,
  "No Answer": 3,
  Busy: 3,
  Failed: 3,
  Cancelled: 3
}
const FINAL_RANK = 3
/** How often a report is judged again after losing a race to another (a status has at most four steps). */
const MAX_RACES = 4

const rankOf = (kind: ActionKind, status: RecordStatus): number | undefined =>
  kind === "message"
    ? (TEXT_RANK as Readonly<Record<string, number>>)[status]
    : (CALL_RANK as Readonly<Record<string, number>>)[status]

/** Whether a status is final for an action of this kind (nothing moves it on). */
export const isFinal = (kind: ActionKind, status: RecordStatus): boolean => (rankOf(kind, status) ?? FINAL_RANK) >= FINAL_RANK

/** Whether a report of `next` moves an action of this kind on from `current`. */
export const movesForward = (kind: ActionKind, current: RecordStatus, next: RecordStatus): boolean => {
  const from = rankOf(kind, current)
  const to = rankOf(kind, next)
  return from !== undefined && to !== undefined && from < FINAL_RANK && to > from
}

/** One report about one action: what it changes (ProviderChange, less what the host decides), and which action. */
export interface ProviderReport extends Omit<ProviderChange, "workAt" | "modified"> {
  readonly orgId: string
  readonly actionId: string
  readonly kind: ActionKind
  /**
   * When the host should ask the provider again if no further report arrives (providers do not retry
   * callbacks that failed while the host was down); ignored once the status is final.
   */
  readonly recheckAt?: number | undefined
}

export type ReportOutcome =
  | { readonly _tag: "Applied"; readonly action: Action }
  /** A duplicate, a late report of an earlier step, or one about an action already final. */
  | { readonly _tag: "Ignored"; readonly current: RecordStatus }
  | { readonly _tag: "NotFound" }

export interface ProviderReportsService {
  readonly report: (report: ProviderReport) => Effect.Effect<ReportOutcome, StorageError>
}

export class ProviderReports extends Context.Tag("@parley/core/ProviderReports")<
  ProviderReports,
  ProviderReportsService
>() {}

export const layer: Layer.Layer<ProviderReports, never, ActionStore | UnitOfWork | EventOutbox> = Layer.effect(
  ProviderReports,
  Effect.gen(function*() {
    const store = yield* ActionStore
    const unitOfWork = yield* UnitOfWork
    const outbox = yield* Effect.context<EventOutbox>()
    return ProviderReports.of({
      report: Effect.fn("ProviderReports.report")(function*(report) {
        // Conditional on the status read: of two reports racing, one applies and the other is judged again
        // against what the first left (a `delivered` beaten by its own `sent` still applies after it).
        for (let attempt = 1; ; attempt++) {
          const found = yield* store.findAction(report.orgId, report.actionId)
          if (Option.isNone(found) || found.value.kind !== report.kind) return { _tag: "NotFound" as const }
          const current = found.value
          if (!movesForward(report.kind, current.status, report.status)) {
            return { _tag: "Ignored" as const, current: current.status }
          }
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const outcome: ReportOutcome | undefined = yield* unitOfWork.atomically(Effect.gen(function*() {
            const applied = yield* store.applyProviderReport(report.orgId, report.actionId, current.status, {
              status: report.status,
              providerStatus: report.providerStatus,
              sid: report.sid,
              errorMessage: report.errorMessage,
              body: report.body,
              audioFileId: report.audioFileId,
              workAt: isFinal(report.kind, report.status) ? null : report.recheckAt ?? null,
              modified: now
            })
            if (Option.isNone(applied)) return undefined
            const type = eventForStatus(report.kind, report.status)
            if (type !== null) yield* Effect.provide(emit(type, applied.value), outbox)
            return { _tag: "Applied" as const, action: applied.value }
          }))
          if (outcome !== undefined) return outcome
          // A status moves forward at most a few times: a report still losing after that is not progress.
          if (attempt >= MAX_RACES) return { _tag: "Ignored" as const, current: current.status }
        }
      })
    })
  })
)
