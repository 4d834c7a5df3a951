/**
 * Handing claimed actions to their providers, whichever they are: for each
 * action, the organisation's provider for that kind through the core's
 * Providers port (providers/ProvidersLive.ts: the one it set, or else the
 * simulator). What a provider does is its client's; what follows is the same
 * for every provider.
 *
 * A provider whose sends are idempotent (the simulator keeps them by action
 * id) is handed its rows in one request, and their changes go back to the
 * dispatcher, which applies them with the rest of its batch: a redone
 * submission answers the first outcome, so no journal is needed. Every other
 * provider goes through the journal below.
 *
 * Never twice. A submission is journalled (provider_submissions) before each
 * attempt, and its outcome is committed together with what the answer does to
 * the action (the provider's id, the status): a crash leaves either both or
 * neither. Any attempt that may have reached the provider — in flight when the
 * process died, a dropped connection, a 5xx, even an answer recorded without
 * its id — makes every later attempt look at the provider first
 * (reconciliation) and never send while a candidate there is unexplained:
 * - every message (call) the provider has from the sender to the recipient in
 *   the attempt's window is a candidate, all pages of its list read;
 * - a candidate whose id another action has recorded is that action's; a
 *   candidate the provider tags with another action's id (metadata) is that action's;
 * - of the others, the action adopts its own (the provider's tag) or else the oldest.
 *   The same text to the same person twice (two appointment confirmations)
 *   makes two candidates, and each action adopts one. Adoptions in one
 *   organisation are decided one at a time (its row locked), and not while
 *   another action to the same recipient may be mid-request (its candidate
 *   could be that one's): then the action waits a moment and looks again;
 * - with no candidate left, nothing was sent: send.
 * An attempt known not to have sent (a 429, a refused connection) after none
 * that may have is simply made again.
 *
 * Each row's lease is short (Lease.LEASE_MS by default) and renewed while its request
 * lasts, so a slow provider never lets another worker take the row
 * mid-request, while a crash delays the action by at most one lease. After the
 * provider accepts, its callbacks drive the action (ProviderReports), with a
 * recheck in case they are lost.
 *
 * What the provider answers, planned by the core (DispatchPlan, the same for
 * the core's own dispatcher):
 * - accepted: the provider's id and status are recorded, the action waits for callbacks;
 * - rejected (an invalid number, an unsubscribed recipient, a region not allowed, WhatsApp outside the
 *   session…): Failed, with the provider's code and message;
 * - credentials refused: Failed at once, saying to fix the organisation's provider settings;
 * - rate limited, unavailable, or unknown: tried again with exponential backoff (honouring Retry-After),
 *   up to DispatchPlan.MAX_ATTEMPTS, then Failed.
 */
import { SqlClient } from "@effect/sql"
import { Consent, DispatchPlan, ProviderReports, Providers, type StorageError } from "@parley/core/internal"
import { Clock, Effect, Option, Schema } from "effect"
import type { ServerSettings } from "../config/ServerConfig.js"
import { forProvider } from "../observability/Metrics.js"
import { providerNamed } from "../providers/Registry.js"
import { DbInt, storage } from "../store/rows.js"
import { RowLocks } from "../store/RowLocks.js"
import { ProviderHandoffs } from "../store/SqlProviderHandoffs.js"
import { transactions } from "../store/Transactions.js"
import { type Change, type ClaimedRow, handoffOf } from "./ClaimedAction.js"
import { renewalEvery } from "./Lease.js"

/** While another action to the same recipient may be mid-request, how long a reconciliation waits before looking again. */
const RIVAL_WAIT_MS = 5_000
/** Requests to one provider at once from one process. */
const CONCURRENCY = 8

const Journal = Schema.Struct({
  action_id: Schema.String,
  provider: Schema.String,
  attempts: DbInt,
  first_attempt_at: DbInt,
  last_outcome: Schema.String
})
const decodeJournal = Schema.decodeUnknown(Schema.Array(Journal))
const decodeSids = Schema.decodeUnknown(Schema.Array(Schema.Struct({ sid: Schema.String })))

/**
 * What became of the last attempt:
 * - pending: its request may be out (or its process died with it out);
 * - reconciling: it is looking at the provider before sending (an earlier attempt may have sent);
 * - accepted: answered, committed with the provider's id;
 * - not_sent: known not to have sent, and no earlier attempt may have;
 * - unknown: it, or an earlier attempt, may have sent.
 * Only not_sent lets the next attempt send without looking.
 */
type Outcome = "pending" | "reconciling" | "accepted" | "not_sent" | "unknown"

interface Attempt {
  readonly attempts: number
  readonly firstAt: number
  /** Whether an earlier attempt may have reached the provider: look before sending again. */
  readonly reconcile: boolean
  /**
   * The provider an earlier attempt that may have sent went to, when the organisation has since replaced
   * it with another of the same kind: the new one cannot tell whether the old one placed the call.
   */
  readonly replaced: string | null
}

/** What the dispatcher lends the submissions: its lease on a row, and applying a row's change. */
export interface SubmitHooks {
  /** Extends this worker's lease on the row; false when it was lost (another worker, or a callback, has the row). */
  readonly hold: (row: ClaimedRow, until: number) => Effect.Effect<boolean, StorageError>
  /** Applies the row's change (with its event); run it inside a transaction. */
  readonly apply: (row: ClaimedRow, change: Change) => Effect.Effect<void, StorageError>
  /** Wraps the row's hand-over in its trace span (observability/TraceLinks). */
  readonly traced: (
    row: ClaimedRow,
    provider: string
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const { failed, mayHaveSent } = DispatchPlan

const labelOf = (name: string) => providerNamed(name)?.label ?? name

export const make = (config: ServerSettings) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const providers = yield* Providers.Providers
    const consent = yield* Consent.Consent
    const transaction = yield* transactions
    const locks = yield* RowLocks
    const handoffs = yield* ProviderHandoffs

    /**
     * Counts an attempt before it is made; answers the attempt with what the earlier ones left. Every
     * outcome but not_sent may have reached the provider, accepted included (an answer recorded without the
     * provider's id, by a version that committed them apart, is as good as unknown).
     */
    const journal = (id: string, provider: string, now: number) =>
      storage("providers.journal")(Effect.gen(function*() {
        const [previous] = yield* Effect.flatMap(
          sql`SELECT action_id, provider, attempts, first_attempt_at, last_outcome FROM provider_submissions
              WHERE action_id = ${id}`,
          decodeJournal
        )
        const reconcile = previous !== undefined && previous.last_outcome !== "not_sent"
        if (reconcile && previous.provider !== provider) {
          return { attempts: previous.attempts, firstAt: previous.first_attempt_at, reconcile, replaced: previous.provider }
        }
        const outcome: Outcome = reconcile ? "reconciling" : "pending"
        const [current] = yield* Effect.flatMap(
          sql`INSERT INTO provider_submissions ${
            sql.insert({ action_id: id, provider, attempts: 1, first_attempt_at: now, last_attempt_at: now, last_outcome: outcome })
          } ON CONFLICT (action_id) DO UPDATE SET attempts = provider_submissions.attempts + 1,
              provider = excluded.provider, last_attempt_at = excluded.last_attempt_at,
              last_outcome = excluded.last_outcome
            RETURNING action_id, provider, attempts, first_attempt_at, last_outcome`,
          decodeJournal
        )
        return {
          attempts: current?.attempts ?? 1,
          firstAt: current?.first_attempt_at ?? now,
          reconcile,
          replaced: null
        } satisfies Attempt
      }))

    const settleOutcome = (id: string, outcome: Outcome) =>
      storage("providers.outcome")(sql`UPDATE provider_submissions SET last_outcome = ${outcome} WHERE action_id = ${id}`)

    /** The attempt's outcome and the change its answer makes, in one commit: a crash leaves both or neither. */
    const settle = (row: ClaimedRow, outcome: Outcome, change: Change, hooks: SubmitHooks) =>
      storage("providers.settle")(transaction(Effect.zipRight(settleOutcome(String(row.id), outcome), hooks.apply(row, change))))

    /**
     * Whether another action from the same line to the same recipient may have its request out right now
     * (journalled pending, its lease live): a candidate nobody has recorded could be that action's.
     */
    const rivalInFlight = (row: ClaimedRow, now: number) =>
      Effect.gen(function*() {
        const rivals = yield* sql`SELECT id FROM actions
          WHERE org_id = ${row.org_id} AND line = ${row.line} AND counterpart = ${row.counterpart} AND kind = ${row.kind}
            AND id <> ${Number(row.id)} AND sid IS NULL AND charged_at IS NOT NULL AND lease_until > ${now}`
        if (rivals.length === 0) return false
        const sending = yield* sql`SELECT action_id FROM provider_submissions
          WHERE action_id IN ${sql.in(rivals.map((r) => String(r["id"])))} AND last_outcome = 'pending'`
        return sending.length > 0
      })

    /**
     * Decides, from the candidates the provider has, whether this action's earlier attempt reached it: adopts
     * the action's own candidate (recording it, with the outcome, in the same commit), or says to send (no
     * candidate left unexplained), or to wait (one is, and another action's request may be out). One decision
     * per organisation at a time (its row locked): two actions never adopt the same candidate.
     */
    const adoptOrSend = (
      row: ClaimedRow,
      candidates: ReadonlyArray<{ readonly id: string; readonly owner: string | null; readonly change: Change }>,
      hooks: SubmitHooks
    ) =>
      storage("providers.reconcile")(transaction(Effect.gen(function*() {
        const id = String(row.id)
        yield* locks.lockOrganisation(row.org_id)
        // A candidate the provider says is another action's is explained.
        const open = candidates.filter((c) => c.owner === null || c.owner === id)
        const claimed = open.length === 0 ? [] : yield* Effect.flatMap(
          sql`SELECT sid FROM actions
              WHERE org_id = ${row.org_id} AND sid IN ${sql.in(open.map((c) => c.id))} AND id <> ${Number(row.id)}`,
          decodeSids
        )
        const free = open.filter((c) => !claimed.some((r) => r.sid === c.id))
        const chosen = free.find((c) => c.owner === id) ??
          (free.length > 0 && !(yield* rivalInFlight(row, yield* Clock.currentTimeMillis)) ? free[0] : undefined)
        if (chosen !== undefined) {
          yield* settleOutcome(id, "accepted")
          yield* hooks.apply(row, chosen.change)
          return "adopted" as const
        }
        if (free.length > 0) return "wait" as const
        // Nothing there is this action's: its request goes out now (a rival's reconciliation sees it pending).
        yield* settleOutcome(id, "pending")
        return "send" as const
      })))

    /** Runs a row's work with its lease renewed while it lasts: a crash lets the lease lapse within the lease. */
    const keepingLease = <A, E, R>(row: ClaimedRow, hooks: SubmitHooks, work: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.zipRight(
        Effect.forkScoped(Effect.gen(function*() {
          while (true) {
            yield* Effect.sleep(renewalEvery(config.dispatchLeaseMs))
            const held = yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + config.dispatchLeaseMs).pipe(
              // A renewal that failed is tried again at the next; the lease has two more in hand.
              Effect.orElseSucceed(() => true)
            )
            // Lost: a callback (or, after a stall, another worker) has the row now.
            if (!held) return
          }
        })),
        work
      ))

    /** What an unsuccessful answer does to the action (DispatchPlan: the same for every dispatcher). */
    const afterFailure = (
      provider: Providers.ProviderChoice,
      row: ClaimedRow,
      error: Providers.ProviderFailure,
      attempts: number,
      now: number
    ): Change =>
      DispatchPlan.afterFailure(
        { provider, orgId: row.org_id, status: row.status, attempts, now, lookAgainMs: config.providerRecheckMs },
        error
      )

    /** What an attempt came to: an answer to record, or an earlier attempt's message adopted (recorded already). */
    type Submitted = { readonly change: Change; readonly outcome: Outcome } | "adopted"
    const answered = (change: Change, error: Providers.ProviderFailure, attempt: Attempt): Submitted => ({
      change,
      // Once an attempt may have sent, every later one looks first, whatever the later ones met.
      outcome: mayHaveSent(error) || attempt.reconcile ? "unknown" : "not_sent"
    })
    /** Refused before any request: Failed, nothing sent. */
    const notSent = (errorMessage: string): Submitted => ({ change: failed(errorMessage), outcome: "not_sent" })
    /** Another action's request may be out, and a candidate could be its: look again in a moment. */
    const waiting = (row: ClaimedRow, now: number): Submitted => ({
      change: { status: row.status, workAt: now + Math.min(RIVAL_WAIT_MS, config.providerRecheckMs) },
      outcome: "unknown"
    })

    /**
     * One attempt at handing the row to its provider: look first when an earlier attempt may have reached
     * it, then send. What the provider reports as sent (a template's text) is written at once, whatever
     * the status: its callbacks may already have moved the action on, and the change then no longer applies.
     */
    const attemptOne = (
      provider: Providers.ProviderChoice,
      row: ClaimedRow,
      attempt: Attempt,
      now: number,
      hooks: SubmitHooks
    ): Effect.Effect<Submitted, StorageError> => {
      if (attempt.replaced !== null) {
        return Effect.succeed<Submitted>({
          change: failed(
            `The organisation replaced ${labelOf(attempt.replaced)} with ${provider.label} after Parley handed this ` +
              `to ${labelOf(attempt.replaced)}; whether it was sent is unknown to Parley.`
          ),
          outcome: "unknown"
        })
      }
      const { client } = provider
      const action = handoffOf(row)
      const refused = client.cannotSend(action)
      if (refused !== null) return Effect.succeed(notSent(refused))
      return Effect.gen(function*() {
        if (attempt.reconcile) {
          const found = yield* client.candidates(action, attempt.firstAt, now)
          const decision = yield* adoptOrSend(row, found, hooks)
          if (decision === "adopted") return decision
          if (decision === "wait") return waiting(row, now)
        }
        const change = yield* client.send(action, now)
        if (change.body !== undefined) {
          yield* storage("providers.sentText")(
            sql`UPDATE actions SET body = ${change.body} WHERE id = ${Number(row.id)} AND org_id = ${row.org_id}`
          )
        }
        return { change, outcome: "accepted" } satisfies Submitted
      }).pipe(
        Effect.catchIf(
          (error): error is Providers.ProviderFailure => error._tag !== "StorageError",
          (error) =>
            Effect.as(
              // The carrier's "unsubscribed" refusal is the recipient's STOP given there: Parley keeps it too.
              error.reason === "unsubscribed"
                ? consent.fromCarrier(row.org_id, row.counterpart, {
                  actionId: String(row.id),
                  channel: Consent.channelOf(row.kind, row.type),
                  message: `${error.code ?? ""} ${error.message}`.trim(),
                  at: new Date(now).toISOString()
                })
                : Effect.void,
              answered(afterFailure(provider, row, error, attempt.attempts, now), error, attempt)
            )
        )
      )
    }

    /** Applies a row's change in its own transaction. */
    const record = (row: ClaimedRow, hooks: SubmitHooks, change: Change) =>
      storage("providers.record")(transaction(hooks.apply(row, change)))

    /** Journalled rows among these: handed to a real provider at least once. */
    const journalled = (rows: ReadonlyArray<ClaimedRow>) =>
      rows.length === 0
        ? Effect.succeed(new Map<string, typeof Journal.Type>())
        : storage("providers.journalRead")(Effect.map(
          Effect.flatMap(
            sql`SELECT action_id, provider, attempts, first_attempt_at, last_outcome FROM provider_submissions
                WHERE action_id IN ${sql.in(rows.map((r) => String(r.id)))}`,
            decodeJournal
          ),
          (found) => new Map(found.map((j) => [j.action_id, j]))
        ))

    /** A row's change, for the dispatcher to apply with the rest of its batch. */
    type Batched = readonly [ClaimedRow, Change]

    /** Rows handed to an idempotent provider (the simulator) in one request per provider. */
    const sendAll = (
      groups: ReadonlyMap<Providers.ProviderChoice, ReadonlyArray<ClaimedRow>>,
      now: number,
      hooks: SubmitHooks
    ) =>
      Effect.gen(function*() {
        const changes: Array<Batched> = []
        for (const [provider, rows] of groups) {
          const { client } = provider
          const answered = yield* (client.sendAll ?? ((actions, at) =>
            Effect.map(
              Effect.forEach(actions, (action) => Effect.map(client.send(action, at), (change) => [action.id, change] as const)),
              (pairs) => new Map(pairs)
            )))(rows.map(handoffOf), now).pipe(
              // An idempotent provider that fails is asked again when the leases lapse: it answers the first outcome.
              Effect.catchIf(
                (error): error is Providers.ProviderFailure => error._tag !== "StorageError",
                (error) =>
                  Effect.as(
                    Effect.annotateLogs(Effect.logWarning("provider did not answer; the batch will be redone"), {
                      provider: provider.name,
                      cause: error.message
                    }),
                    new Map<string, Change>()
                  )
              )
            )
          for (const row of rows) {
            const change = answered.get(String(row.id))
            if (change !== undefined) changes.push([row, change])
          }
          yield* Effect.forEach(rows, (row) => hooks.traced(row, provider.name)(Effect.void), { discard: true })
        }
        return changes
      })

    /**
     * Hands each row to the organisation's provider for its kind. Rows of idempotent providers (the
     * simulator) go in one request each and their changes come back for the dispatcher to apply; every
     * other row's answer is recorded the moment it comes. A row that an earlier attempt handed to a real
     * provider the organisation has since removed fails, saying so, rather than being simulated.
     */
    const submit = (
      rows: ReadonlyArray<ClaimedRow>,
      now: number,
      hooks: SubmitHooks
    ): Effect.Effect<ReadonlyArray<Batched>, StorageError> =>
      Effect.gen(function*() {
        if (rows.length === 0) return []
        const session = yield* providers.session
        const batched = new Map<Providers.ProviderChoice, Array<ClaimedRow>>()
        const journalledRows: Array<{ row: ClaimedRow; provider: Providers.ProviderChoice }> = []
        // The provider is the organisation's for the kind: asked once per organisation and kind.
        const byOrgAndKind = new Map<string, Array<ClaimedRow>>()
        for (const row of rows) {
          const key = `${row.org_id}\u0000${row.kind}`
          const group = byOrgAndKind.get(key)
          if (group === undefined) byOrgAndKind.set(key, [row])
          else group.push(row)
        }
        for (const group of byOrgAndKind.values()) {
          const first = group[0]
          if (first === undefined) continue
          const provider = yield* session.current(first.org_id, first.kind)
          if (!provider.client.idempotent) {
            for (const row of group) journalledRows.push({ row, provider })
          } else {
            const same = batched.get(provider)
            if (same === undefined) batched.set(provider, group)
            else same.push(...group)
          }
        }
        const orphans = yield* journalled([...batched.values()].flat())
        for (const [provider, group] of batched) {
          const kept = group.filter((row) => !orphans.has(String(row.id)))
          if (kept.length < group.length) batched.set(provider, kept)
        }
        for (const orphan of orphans.values()) {
          const row = rows.find((r) => String(r.id) === orphan.action_id)
          if (row === undefined) continue
          yield* record(row, hooks, failed(
            `The organisation's ${labelOf(orphan.provider)} account was removed after Parley handed ` +
              "this to it; whether it was sent is unknown to Parley."
          ))
        }
        yield* Effect.forEach(journalledRows, ({ provider, row }) =>
          Effect.gen(function*() {
            // Renewed while the request lasts; a row another worker (or a callback) took is left to it.
            if (!(yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + config.dispatchLeaseMs))) return
            yield* keepingLease(row, hooks, Effect.gen(function*() {
              const attempt = yield* journal(String(row.id), provider.name, now)
              const submitted = yield* attemptOne(provider, row, attempt, now, hooks)
              if (submitted !== "adopted") yield* settle(row, submitted.outcome, submitted.change, hooks)
            }))
          }).pipe(
            hooks.traced(row, provider.name),
            forProvider(provider.name),
            // One row's storage failure leaves its lease to lapse (its attempt stays pending: reconciled next time).
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider submission not recorded; it will be reconciled"), {
                actionId: String(row.id),
                cause: error._tag
              })
            )
          ), { concurrency: CONCURRENCY, discard: true })
        return yield* sendAll(batched, now, hooks)
      })

    /**
     * Actions a provider has, due for a look: a real provider's (their attempts are journalled) because its
     * callbacks were lost or late, the simulator's for its next step. Asks the provider that has the action
     * for its status and applies what moves the action on; otherwise looks again later, until the action is
     * final or DispatchPlan.MAX_TRACKING_MS old. A real provider's rows are recorded one by one; the simulator's changes
     * come back for the dispatcher to apply with the rest of its batch.
     */
    const recheck = (
      rows: ReadonlyArray<ClaimedRow>,
      now: number,
      hooks: SubmitHooks
    ): Effect.Effect<ReadonlyArray<Batched>, StorageError> =>
      Effect.gen(function*() {
        if (rows.length === 0) return []
        const session = yield* providers.session
        const known = yield* journalled(rows)
        const tracked = rows.filter((r) => known.has(String(r.id)))
        yield* Effect.forEach(tracked, (row) => {
          const entry = known.get(String(row.id))
          const name = entry?.provider ?? ""
          return Effect.gen(function*() {
            if (!(yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + config.dispatchLeaseMs))) return
            // The organisation no longer has that provider: nobody can say more about the action.
            const provider = yield* session.named(row.org_id, name)
            const change = Option.isNone(provider)
              ? { status: row.status, workAt: null }
              : yield* keepingLease(row, hooks, recheckOne(provider.value, row, entry?.first_attempt_at ?? now, now))
            yield* record(row, hooks, change)
          }).pipe(
            forProvider(name),
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider recheck not recorded; it will be tried again"), {
                actionId: String(row.id),
                cause: error._tag
              })
            )
          )
        }, { concurrency: CONCURRENCY, discard: true })
        // Handed over without a journal: the simulator has them.
        const changes: Array<Batched> = []
        for (const row of rows) {
          if (known.has(String(row.id))) continue
          const simulator = yield* session.named(row.org_id, Providers.SIMULATOR)
          if (Option.isNone(simulator)) continue
          changes.push([row, yield* recheckOne(simulator.value, row, null, now)])
        }
        return changes
      })

    const recheckOne = (
      provider: Providers.ProviderChoice,
      row: ClaimedRow,
      firstAt: number | null,
      now: number
    ): Effect.Effect<Change> => {
      const unchanged: Change = { status: row.status, workAt: DispatchPlan.lookAgainAt(provider.client.lookAgainMs, firstAt, now, "nothing new") }
      if (row.sid === null) return Effect.succeed(unchanged)
      return provider.client.recheck(handoffOf(row), row.sid, now).pipe(
        Effect.flatMap((found) =>
          Option.isSome(found) && found.value.notPlaced === true && row.sid !== null
            // Ended without being placed, for a reason that passes: put back in the queue (its lease given up,
            // so the unchanged status recorded after this skips it); Failed once its attempts ran out.
            ? Effect.map(
              handoffs.placeAgain(row.org_id, String(row.id), { sid: row.sid, providerStatus: found.value.providerStatus ?? "" }, now),
              (outcome) => outcome === "exhausted" ? found : Option.none()
            )
            : Effect.succeed(found)
        ),
        Effect.map((found): Change => {
          if (Option.isNone(found)) return unchanged
          const { notPlaced: _notPlaced, ...recheck } = found.value
          const status = recheck.status
          if (!ProviderReports.movesForward(row.kind, row.status, status)) return unchanged
          return {
            ...recheck,
            workAt: ProviderReports.isFinal(row.kind, status)
              ? null
              : DispatchPlan.lookAgainAt(provider.client.lookAgainMs, firstAt, now, "moved")
          }
        }),
        Effect.orElseSucceed(() => unchanged)
      )
    }

    return { submit, recheck }
  })
