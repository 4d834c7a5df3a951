/**
 * The dispatcher: a durable queue in the actions table. Each process runs one
 * loop that claims due work with a lease (one atomic UPDATE; `FOR UPDATE SKIP
 * LOCKED` on Postgres so replicas never take the same row), does one step of
 * each claimed action, and releases it with the time of its next step:
 *
 *   Queued ──rules──▶ held until the sending window opens │ Failed (AI off, no allowance)
 *          └─commit (allowance taken, no longer cancellable)─▶ submit to the provider
 *   text:  Sending ─▶ Sent ─▶ Delivered │ Undelivered      (Failed at send)
 *   call:  Ringing ─▶ In Progress ─▶ Completed │ No Answer │ Busy   (Failed at start)
 *
 * Every status change and its event commit in one transaction. A process
 * that dies mid-step leaves a lease that lapses; another process (or the same
 * one restarted) redoes the step. The provider is asked with the action id as
 * its idempotency key, so a redone submission never sends twice. Nothing is
 * kept in memory per action: 100,000 scheduled actions cost 100,000 rows.
 */
import { SqlClient } from "@effect/sql"
import { Crypto, DispatchRules, type EventOutbox, Events, Organisations, Simulation, type StorageError } from "@parley/core"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { DbInt, storage } from "../store/rows.js"
import { ActionRow, toAction } from "../store/SqlCrm.js"
import * as SimulatedProviders from "./SimulatedProviders.js"
import { yieldToEventLoop } from "./yieldToEventLoop.js"

const BATCH = 200
const LEASE_MS = 30_000

const ClaimedRow = Schema.Struct({ ...ActionRow.fields, charged_at: Schema.NullOr(DbInt) })
type ClaimedRow = typeof ClaimedRow.Type
const decodeClaimed = Schema.decodeUnknown(Schema.Array(ClaimedRow))
const decodeRows = Schema.decodeUnknown(Schema.Array(ActionRow))

interface Transition {
  readonly status: string
  readonly workAt: number | null
  readonly sid?: string | undefined
  readonly providerStatus?: string | undefined
  readonly errorMessage?: string | null | undefined
  readonly body?: string | undefined
  readonly audioFileId?: string | undefined
  readonly at?: string | undefined
}

export const DispatcherLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ServerConfig
    const organisations = yield* Organisations.Organisations
    const providers = yield* SimulatedProviders.SimulatedProviders
    const outbox = yield* Effect.context<EventOutbox.EventOutbox>()
    const worker = Crypto.newId("worker")
    const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

    const claim = (now: number) =>
      Effect.flatMap(
        sql`UPDATE actions SET lease_owner = ${worker}, lease_until = ${now + LEASE_MS}
            WHERE id IN (
              SELECT id FROM actions
              WHERE work_at IS NOT NULL AND work_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
              ORDER BY work_at LIMIT ${BATCH} ${skipLocked}
            )
            RETURNING *`,
        decodeClaimed
      )

    /** Applies one status change and its event atomically, if this worker still holds the lease. */
    const transition = (row: ClaimedRow, change: Transition) =>
      sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const updated = yield* sql`UPDATE actions SET ${
          sql.update({
            status: change.status,
            work_at: change.workAt,
            lease_owner: null,
            lease_until: null,
            modified: new Date(now).toISOString(),
            ...(change.sid === undefined ? {} : { sid: change.sid }),
            ...(change.providerStatus === undefined ? {} : { provider_status: change.providerStatus }),
            ...(change.errorMessage === undefined ? {} : { error_message: change.errorMessage }),
            ...(change.body === undefined ? {} : { body: change.body }),
            ...(change.audioFileId === undefined ? {} : { audio_file_id: change.audioFileId }),
            ...(change.at === undefined ? {} : { at: change.at })
          })
        } WHERE id = ${row.id} AND lease_owner = ${worker} RETURNING *`
        const [after] = yield* decodeRows(updated)
        if (after === undefined) return
        const type = Events.eventForStatus(row.kind, change.status)
        if (type !== null) yield* Effect.provide(Events.emit(type, toAction(after)), outbox)
      }))

    const fail = (row: ClaimedRow, reason: string) =>
      transition(row, { status: "Failed", workAt: null, errorMessage: reason })

    /** Queued and not yet committed: apply the live rules, then commit to the send. */
    /**
     * An organisation's settings, read once per round rather than once per action: a round takes well
     * under a second, and the allowance itself is taken by an atomic update, never from this copy.
     */
    type Settings = (orgId: string) => Effect.Effect<Option.Option<Organisations.Organisation>, StorageError>
    const settingsForRound = (): Settings => {
      const seen = new Map<string, Option.Option<Organisations.Organisation>>()
      return (orgId) => {
        const cached = seen.get(orgId)
        return cached !== undefined
          ? Effect.succeed(cached)
          : Effect.tap(organisations.get(orgId), (found) => Effect.sync(() => seen.set(orgId, found)))
      }
    }

    const commit = (row: ClaimedRow, now: number, settings: Settings) =>
      Effect.gen(function*() {
        const organisation = yield* settings(row.org_id)
        if (Option.isNone(organisation)) return yield* fail(row, "The organisation no longer exists.")
        const decision = DispatchRules.decide(organisation.value, row.kind, now)
        if (decision._tag === "Hold") {
          yield* sql`UPDATE actions SET work_at = ${decision.until}, lease_owner = NULL, lease_until = NULL
                     WHERE id = ${row.id} AND lease_owner = ${worker}`
          return false
        }
        if (decision._tag === "Fail") {
          yield* fail(row, decision.reason)
          return false
        }
        return yield* sql.withTransaction(Effect.gen(function*() {
          // Mirror of the cancellation's condition: only one of the two can move a Queued, uncommitted row.
          const committed = yield* sql`UPDATE actions
            SET charged_at = ${now}, status = ${row.kind === "message" ? "Sending" : "Queued"}
            WHERE id = ${row.id} AND lease_owner = ${worker} AND status = 'Queued' AND charged_at IS NULL
            RETURNING id`
          if (committed.length === 0) return false
          if (!(yield* organisations.takeAllowance(row.org_id, row.kind === "message" ? "sms" : "call"))) {
            yield* fail(row, DispatchRules.ALLOWANCE_FAILURE[row.kind])
            return false
          }
          return true
        }))
      })

    /** Committed: hand it to the provider (idempotent by action id) and record the outcome. */
    const submit = (row: ClaimedRow, now: number) =>
      Effect.gen(function*() {
        const receipt = row.kind === "message"
          ? yield* providers.sendText(String(row.id), row.counterpart)
          : yield* providers.startCall(String(row.id), row.counterpart)
        const final = receipt.status === "Failed"
        yield* transition(row, {
          status: receipt.status,
          workAt: final ? null : now + config.simStepMs,
          sid: receipt.sid,
          providerStatus: receipt.providerStatus,
          errorMessage: receipt.errorMessage,
          ...(row.kind === "message" && !final ? { at: new Date(now).toISOString() } : {})
        })
      })

    /** After submission: the provider's next lifecycle step. */
    const advance = (row: ClaimedRow, now: number) =>
      Effect.gen(function*() {
        if (row.kind === "message") {
          const next = row.status === "Sent" ? Simulation.nextTextStep("Sent", row.counterpart) : null
          if (next === null) return yield* transition(row, { status: row.status, workAt: null })
          return yield* transition(row, {
            status: next.status,
            workAt: null,
            providerStatus: next.providerStatus,
            errorMessage: next.errorMessage
          })
        }
        const current = row.status === "Ringing" || row.status === "In Progress" ? row.status : null
        const next = current === null ? null : Simulation.nextCallStep(current, row.counterpart)
        if (next === null) return yield* transition(row, { status: row.status, workAt: null })
        if (next.status === "Completed") {
          const bots = yield* organisations.listBots(row.org_id)
          const bot = bots.find((b) => b.id === row.bot_id)
          return yield* transition(row, {
            status: "Completed",
            workAt: null,
            providerStatus: next.providerStatus,
            body: Simulation.transcript({
              botName: bot?.name ?? row.bot_id ?? "bot",
              mode: row.mode ?? "follow_script",
              purposeMessage: row.purpose_message,
              to: row.counterpart
            }),
            audioFileId: `AF${String(row.id).padStart(32, "0")}`
          })
        }
        return yield* transition(row, {
          status: next.status,
          workAt: next.status === "In Progress" ? now + config.simStepMs : null,
          providerStatus: next.providerStatus,
          errorMessage: next.errorMessage,
          ...(next.status === "In Progress" ? { at: new Date(now).toISOString() } : {})
        })
      })

    const step = (row: ClaimedRow, settings: Settings): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (row.status === "Queued" && row.charged_at === null) {
          if (!(yield* commit(row, now, settings))) return
          return yield* submit(row, now)
        }
        if (row.charged_at !== null && (row.status === "Sending" || row.status === "Queued")) {
          return yield* submit(row, now)
        }
        return yield* advance(row, now)
      }).pipe(storage("dispatch.step"))

    const round = Effect.gen(function*() {
      const claimed = yield* storage("dispatch.claim")(claim(yield* Clock.currentTimeMillis))
      const settings = settingsForRound()
      for (const row of claimed) {
        yield* yieldToEventLoop
        yield* step(row, settings).pipe(
          Effect.catchAll((error) =>
            Effect.annotateLogs(Effect.logWarning("dispatch step failed; it will be retried when its lease lapses"), {
              actionId: String(row.id),
              operation: error.operation
            })
          )
        )
      }
      return claimed.length
    })

    const loop = Effect.gen(function*() {
      while (true) {
        const count = yield* round.pipe(
          Effect.catchAll((error) =>
            Effect.as(Effect.logWarning(`dispatcher round failed: ${error.operation}`), 0)
          )
        )
        if (count < BATCH) yield* Effect.sleep(config.dispatchPollMs)
      }
    })

    yield* Effect.forkScoped(loop)
  })
).pipe(Layer.provide(SimulatedProviders.layer))
