/**
 * The dispatcher: a durable queue in the actions table. Each process runs one
 * loop that claims due work with a lease (one atomic UPDATE; `FOR UPDATE SKIP
 * LOCKED` on Postgres so replicas never take the same row), does one step of
 * each claimed action, and releases it with the time of its next step:
 *
 *   Queued ──rules──▶ held until the sending window (or the recipient's local one) opens │ Failed (AI off, recipient no longer allowed or opted out, no allowance)
 *          └─commit (allowance taken, no longer cancellable)─▶ submit to the provider
 *   text:  Sending ─▶ Sent ─▶ Delivered │ Undelivered      (Failed at send)
 *   call:  Ringing ─▶ In Progress ─▶ Completed │ No Answer │ Busy   (Failed at start)
 *
 * Submission goes to the organisation's provider for the kind, through the
 * core's Providers port (Submissions): a real provider it connected, whose
 * callbacks then drive the action (with a recheck in case they are lost), or
 * else the simulator, whose next step each later look finds.
 *
 * A claimed batch is worked set-wise, not action by action (ActionBatches):
 * the rules are decided once per organisation and kind, the due actions are
 * committed in one transaction (allowance taken per organisation), submitted
 * in one provider request, and moved on in one transaction that also writes
 * their events, so every status change and its event commit together. The
 * event loop gets a turn between these steps. A process that dies mid-step
 * leaves leases that lapse (Lease: 30 s, renewed only while a live worker
 * waits on a real provider); another process (or the same one restarted)
 * redoes the step: the simulator answers a repeated action id with its first
 * outcome, and a real provider's attempt that may have reached it is
 * reconciled with the provider before anything is sent again (Submissions),
 * so a redone submission never sends twice. Nothing is
 * kept in memory per action: 100,000 scheduled actions cost 100,000 rows.
 */
import { SqlClient } from "@effect/sql"
import { Crypto, DispatchRules, OptOuts, Organisations, type StorageError } from "@parley/core/internal"
import { Cause, Clock, Effect, identity, Layer, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { beat } from "../observability/Health.js"
import { forProvider, Metrics, type ProviderName } from "../observability/Metrics.js"
import * as TraceLinks from "../observability/TraceLinks.js"
import { withStoredParent } from "../observability/TraceLinks.js"
import { storage } from "../store/rows.js"
import { WorkQueue } from "../store/WorkQueue.js"
import * as ActionBatches from "./ActionBatches.js"
import { CLAIMED_COLUMNS, type ClaimedRow, decodeClaimed, fail, type Transition, transition } from "./ClaimedAction.js"
import { type Phase, phaseOf } from "./Lifecycle.js"
import * as Submissions from "./Submissions.js"
import { yieldToEventLoop } from "./yieldToEventLoop.js"

/** Rows per claim: large enough to amortise each statement, small enough that one step of a batch stays a few ms. */
const BATCH = 500
/**
 * Due rechecks every claim takes besides its BATCH (WorkQueue): a backlog of sends due before them, or a
 * process that keeps restarting with such a backlog, never holds rechecks past their time.
 */
export const RECHECK_SHARE = 100
/**
 * The shortest pause after a round that drained what was due. Waking for every action of a steady stream
 * would pay a round's fixed cost (claim, rules, provider lookups, two transactions: ~15 statements) per
 * action; a short pause lets arrivals gather into one batch at a lateness no sender notices. Shorter, the
 * rounds' fixed cost was most of the dispatcher's CPU per text at the rate POST /messages sustains;
 * longer, the steady stream's lateness neared its target (measurements in docs/benchmarks.md).
 */
export const MIN_PAUSE_MS = 10

/**
 * How long an idle loop sleeps: until the next action falls due, but at most the poll interval (an
 * action created meanwhile may be due at once) and at least MIN_PAUSE_MS. Sleeping the whole poll
 * interval instead made every scheduled action wait for the next poll, up to 50 ms late by default.
 */
export const pauseMs = (nextDue: number | null, now: number, pollMs: number): number =>
  nextDue === null ? pollMs : Math.min(pollMs, Math.max(MIN_PAUSE_MS, nextDue - now))

/** The span of one action's hand-over to its provider, a child of the request that created it. */
const dispatchSpan = (parents: ReadonlyMap<string, string>) => (row: ClaimedRow, provider: ProviderName) =>
  withStoredParent("action.dispatch", parents.get(String(row.id)), {
    "parley.action_id": String(row.id),
    "parley.kind": row.kind,
    "parley.provider": provider,
    "parley.org_id": row.org_id
  })

export const DispatcherLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ServerConfig
    const organisations = yield* Organisations.Organisations
    const optOuts = yield* OptOuts.OptOuts
    const batches = yield* ActionBatches.make
    const submissions = yield* Submissions.make(config)
    const worker = Crypto.newId("worker")
    const metrics = yield* Effect.serviceOption(Metrics)
    const links = yield* TraceLinks.make

    // The two statements every round runs whatever it finds, each in the store adapter's own SQL.
    const queue = yield* WorkQueue
    const claimNow = queue.claimer(CLAIMED_COLUMNS, BATCH, RECHECK_SHARE)
    const claim = (now: number) =>
      Effect.flatMap(
        claimNow({ owner: worker, now, until: now + config.dispatchLeaseMs }),
        // RETURNING gives no order; committing in due order decides who gets the last units of an allowance.
        (rows) => Effect.map(decodeClaimed(rows), (claimed) => [...claimed].sort((a, b) => a.due_at - b.due_at))
      )
    /** When the next action nobody holds falls due (epoch ms), if any; the `actions_work` index answers it. */
    const nextDue = queue.nextDue

    /**
     * The live rules for each organisation and kind in the batch, decided once: they depend only on the
     * organisation's settings and the time, and the allowance is taken later by an atomic update. What they
     * let through still meets the destination rules and the recipient-local hours, per action (its recipient),
     * before any provider sees it.
     */
    const decideRules = (rows: ReadonlyArray<ClaimedRow>, now: number) =>
      Effect.gen(function*() {
        const decisions = new Map<string, DispatchRules.DispatchDecision>()
        const settings = new Map<string, Organisations.Organisation>()
        for (const orgId of new Set(rows.map((r) => r.org_id))) {
          const organisation = yield* organisations.get(orgId)
          if (Option.isSome(organisation)) settings.set(orgId, organisation.value)
          for (const kind of ["message", "ai_call"] as const) {
            decisions.set(`${orgId} ${kind}`, Option.match(organisation, {
              onNone: () => ({ _tag: "Fail", reason: "The organisation no longer exists." }),
              onSome: (org) => DispatchRules.decide(org, kind, now)
            }))
          }
        }
        return (row: ClaimedRow): DispatchRules.DispatchDecision => {
          const ruled = decisions.get(`${row.org_id} ${row.kind}`) ?? { _tag: "Send" }
          // A keyword's answer is not held by the sending hours (DispatchRules.isKeywordReply).
          const decision: DispatchRules.DispatchDecision = ruled._tag === "Hold" && row.keyword_reply_to !== null
            ? { _tag: "Send" }
            : ruled
          const organisation = settings.get(row.org_id)
          if (decision._tag !== "Send" || organisation === undefined) return decision
          const destination = DispatchRules.decideDestination(organisation, row.line, row.counterpart)
          // Nor by the recipient's hours: a STOP's confirmation the next morning would be a text to someone who said stop.
          return destination._tag === "Send" && row.keyword_reply_to === null
            ? DispatchRules.decideRecipientHours(organisation, row.counterpart, now)
            : destination
        }
      })

    /** Queued and uncommitted: apply the rules, then commit what may be sent. Returns the rows to submit. */
    const commitDue = (rows: ReadonlyArray<ClaimedRow>, now: number, modified: string) =>
      Effect.gen(function*() {
        if (rows.length === 0) return []
        const rule = yield* decideRules(rows, now)
        const holds = new Map<number, Array<ClaimedRow>>()
        const refused: Array<Transition> = []
        const send: Array<ClaimedRow> = []
        for (const row of rows) {
          const decision = rule(row)
          if (decision._tag === "Hold") {
            const held = holds.get(decision.until)
            if (held === undefined) holds.set(decision.until, [row])
            else held.push(row)
          } else if (decision._tag === "Fail") refused.push(fail(row, decision.reason, modified))
          else send.push(row)
        }
        if (holds.size > 0 || refused.length > 0) {
          yield* batches.transaction(Effect.gen(function*() {
            for (const [until, held] of holds) yield* batches.hold(worker, until, held)
            yield* batches.apply(worker, refused)
          }))
        }
        yield* yieldToEventLoop
        // Consent last, with nothing between it and the commit: a STOP recorded up to here stops the send.
        const consenting = yield* consentOf(send, modified)
        return yield* batches.commit(worker, consenting, now, modified)
      })

    /**
     * The rows whose recipients have not opted out of their channel, and keywords' answers; the others fail,
     * naming the opt-out (DispatchRules.decideConsent). One read per organisation in the batch.
     */
    const consentOf = (rows: ReadonlyArray<ClaimedRow>, modified: string) =>
      Effect.gen(function*() {
        if (rows.length === 0) return rows
        const refused: Array<Transition> = []
        const send: Array<ClaimedRow> = []
        for (const orgId of new Set(rows.map((r) => r.org_id))) {
          const mine = rows.filter((r) => r.org_id === orgId)
          const entries = yield* optOuts.findMany(orgId, mine.map((r) => r.counterpart))
          for (const row of mine) {
            // A keyword's answer goes to a number that may have just opted out: a STOP's confirmation.
            const decision = row.keyword_reply_to !== null
              ? { _tag: "Send" as const }
              : DispatchRules.decideConsent(entries.get(row.counterpart), row.kind, row.type)
            if (decision._tag === "Fail") refused.push(fail(row, decision.reason, modified))
            else send.push(row)
          }
        }
        if (refused.length > 0) yield* batches.transaction(batches.apply(worker, refused))
        return send
      })

    /** A real provider's row: its lease renewed while its request lasts, its answer recorded the moment it comes. */
    const hooks = (modified: string): Submissions.SubmitHooks => ({
      hold: (row, until) =>
        storage("dispatch.hold")(Effect.map(
          sql`UPDATE actions SET lease_until = ${until}
              WHERE id = ${Number(row.id)} AND lease_owner = ${worker} AND status = ${row.status} RETURNING id`,
          (rows) => rows.length > 0
        )),
      apply: (row, change) => storage("dispatch.record")(batches.apply(worker, [transition(row, change, modified)])),
      traced: () => identity
    })

    /**
     * Whether this process has yet to run a round with rechecks in it. Its first such round runs them before
     * its sends: after a crash they are the overdue work (their callbacks may have been lost while it was
     * down), and a process that dies again during its first sends — a crash loop — must not starve them.
     * Later rounds run rechecks beside the sends, so a slow provider's sends never hold them up.
     */
    let rechecksFirst = true

    /** One claimed batch: commit what is due, submit what is committed, move everything else on. */
    const work = (claimed: ReadonlyArray<ClaimedRow>, now: number): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        const modified = new Date(now).toISOString()
        const phase = (p: Phase) => claimed.filter((r) => phaseOf(r) === p)
        const advancing = phase("advance")
        // Each provider is asked again about what it has: a real one's status, the simulator's next step.
        const follow = submissions.recheck(advancing, now, hooks(modified))
        const first = rechecksFirst && advancing.length > 0
        if (advancing.length > 0) rechecksFirst = false
        const early = first ? yield* follow : null
        const committed = yield* storage("dispatch.commit")(commitDue(phase("commit"), now, modified))
        const toSubmit = [...phase("submit"), ...committed]
        yield* yieldToEventLoop
        if (Option.isSome(metrics) && toSubmit.length > 0) {
          const handedAt = yield* Clock.currentTimeMillis
          for (const row of toSubmit) metrics.value.dispatchLate((handedAt - row.due_at) / 1000)
        }
        // While traces are exported, each hand-over is a span under the request that created the action.
        const parents = yield* links.actionParents(toSubmit.map((r) => r.id))
        // Real providers' rows are sent and recorded one by one (hooks); the simulator's come back as changes.
        const submit = submissions.submit(toSubmit, now, { ...hooks(modified), traced: dispatchSpan(parents) })
        const [submitted, followed] = early !== null
          ? [yield* submit, early]
          : yield* Effect.all([submit, follow], { concurrency: 2 })
        yield* yieldToEventLoop
        const transitions = [...submitted, ...followed].map(([row, change]) => transition(row, change, modified))
        yield* storage("dispatch.transition")(batches.transaction(batches.apply(worker, transitions))).pipe(
          forProvider("simulator")
        )
      })

    const round = Effect.gen(function*() {
      yield* yieldToEventLoop
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* storage("dispatch.claim")(claim(now))
      if (claimed.length > 0) {
        yield* yieldToEventLoop
        yield* work(claimed, now).pipe(
          Effect.catchAll((error) =>
            Effect.annotateLogs(Effect.logWarning("dispatch batch failed; it will be retried when its leases lapse"), {
              actions: claimed.length,
              actionIds: claimed.map((row) => String(row.id)),
              operation: error.operation
            })
          )
        )
      }
      return claimed.length
    })

    const loop = Effect.gen(function*() {
      while (true) {
        yield* beat("dispatcher")
        // A defect in one round (a stored secret that no longer opens, say) must not stop sending for good.
        const count = yield* round.pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(
              Effect.logWarning(
                `dispatcher round failed: ${
                  Cause.failureOption(cause).pipe(Option.match({ onNone: () => "unexpected failure", onSome: (e) => e.operation }))
                }`
              ),
              0
            )
          )
        )
        if (count < BATCH) {
          const now = yield* Clock.currentTimeMillis
          // Failing to look is no reason to spin: the poll interval then, as before.
          const next = yield* nextDue(now).pipe(Effect.orElseSucceed(() => null))
          yield* Effect.sleep(pauseMs(next, now, config.dispatchPollMs))
        }
      }
    })

    yield* Effect.forkScoped(loop)
  })
)
