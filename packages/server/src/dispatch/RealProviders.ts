/**
 * Submission to real providers: Twilio for an organisation's texts and
 * WhatsApp, Vapi for its AI calls, when it has connected them (`parley
 * providers set`); everything else stays with the simulator.
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
 *   candidate Vapi tags with another action's id is that action's;
 * - of the others, the action adopts its own (Vapi's tag) or else the oldest.
 *   The same text to the same person twice (two appointment confirmations)
 *   makes two candidates, and each action adopts one. Adoptions in one
 *   organisation are decided one at a time (its row locked), and not while
 *   another action to the same recipient may be mid-request (its candidate
 *   could be that one's): then the action waits a moment and looks again;
 * - with no candidate left, nothing was sent: send.
 * An attempt known not to have sent (a 429, a refused connection) after none
 * that may have is simply made again.
 *
 * Each row's lease is short (Lease.LEASE_MS) and renewed while its request
 * lasts, so a slow provider never lets another worker take the row
 * mid-request, while a crash delays the action by at most one lease. After the
 * provider accepts, its callbacks drive the action (ProviderReports), with a
 * recheck in case they are lost.
 *
 * What the provider answers:
 * - accepted: the provider's id and status are recorded, the action waits for callbacks;
 * - rejected (invalid number 21211, unsubscribed 21610, region 21408, WhatsApp outside the session 63016…):
 *   Failed, with the provider's code and message;
 * - credentials refused (20003 / 401): Failed at once, saying to fix the organisation's provider settings
 *   (retrying could never succeed);
 * - rate limited, unavailable, or unknown: tried again with exponential backoff (honouring Retry-After),
 *   up to MAX_ATTEMPTS, then Failed.
 */
import { SqlClient } from "@effect/sql"
import type { RecordStatus } from "@parley/core"
import { Organisations, ProviderReports, type StorageError } from "@parley/core/domain"
import { Clock, Effect, Option, Schema } from "effect"
import type { ServerSettings } from "../config/ServerConfig.js"
import { forProvider } from "../observability/Metrics.js"
import { twilioStatusCallback } from "../providers/CallbackUrls.js"
import * as Twilio from "../providers/twilio/TwilioClient.js"
import { twilioMessageStatus } from "../providers/twilio/TwilioStatuses.js"
import * as Vapi from "../providers/vapi/VapiClient.js"
import { vapiCallStatus, vapiEnding } from "../providers/vapi/VapiStatuses.js"
import { forUpdate } from "../store/Dialect.js"
import { DbInt, storage } from "../store/rows.js"
import {
  ProviderAccounts,
  type TwilioAccountSettings,
  type VapiAccountSettings
} from "../store/SqlProviderAccounts.js"
import { transactions } from "../store/Transactions.js"
import type { Change, ClaimedRow } from "./ClaimedAction.js"
import { LEASE_MS, LEASE_RENEWAL_MS } from "./Lease.js"

/** Attempts before giving up: with the backoff below, about two hours of retrying. */
export const MAX_ATTEMPTS = 16
const BASE_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 15 * 60_000
/** After an unknown outcome, the provider may still be creating the message or call: wait before looking. */
const UNKNOWN_OUTCOME_WAIT_MS = 30_000
/** While another action to the same recipient may be mid-request, how long a reconciliation waits before looking again. */
const RIVAL_WAIT_MS = 5_000
/** How long Parley keeps asking a provider about an action whose reports stopped: two days. */
const MAX_TRACKING_MS = 48 * 3_600_000
/** Requests to one provider at once from one process. */
const CONCURRENCY = 8

export const backoffMs = (attempts: number, retryAfterMs: number | null): number =>
  Math.max(retryAfterMs ?? 0, Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1)))

const Journal = Schema.Struct({
  action_id: Schema.String,
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
}

/** An organisation's numbers and bots, for their Vapi ids. */
interface VapiDirectory {
  readonly numbers: ReadonlyArray<Organisations.NumberRow>
  readonly bots: ReadonlyArray<Organisations.BotRow>
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
    provider: "twilio" | "vapi"
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** A message or call at the provider that may be the action's: its id, and the Parley action it names, if any. */
interface Candidate<A> {
  readonly id: string
  /** The Parley action id the provider keeps with it (Vapi's metadata); null when it keeps none (Twilio). */
  readonly owner: string | null
  readonly found: A
}

type Failure = Twilio.TwilioSendError | Vapi.VapiCallError

const failed = (errorMessage: string, providerStatus?: string): Change => ({
  status: "Failed",
  workAt: null,
  errorMessage,
  ...(providerStatus === undefined ? {} : { providerStatus })
})

export const make = (config: ServerSettings) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* ProviderAccounts
    const organisations = yield* Organisations.Organisations
    const transaction = yield* transactions

    /**
     * Counts an attempt before it is made; answers the attempt with what the earlier ones left. Every
     * outcome but not_sent may have reached the provider, accepted included (an answer recorded without the
     * provider's id, by a version that committed them apart, is as good as unknown).
     */
    const journal = (id: string, provider: string, now: number) =>
      storage("providers.journal")(Effect.gen(function*() {
        const [previous] = yield* Effect.flatMap(
          sql`SELECT action_id, attempts, first_attempt_at, last_outcome FROM provider_submissions WHERE action_id = ${id}`,
          decodeJournal
        )
        const reconcile = previous !== undefined && previous.last_outcome !== "not_sent"
        const outcome: Outcome = reconcile ? "reconciling" : "pending"
        const [current] = yield* Effect.flatMap(
          sql`INSERT INTO provider_submissions ${
            sql.insert({ action_id: id, provider, attempts: 1, first_attempt_at: now, last_attempt_at: now, last_outcome: outcome })
          } ON CONFLICT (action_id) DO UPDATE SET attempts = provider_submissions.attempts + 1,
              last_attempt_at = excluded.last_attempt_at, last_outcome = excluded.last_outcome
            RETURNING action_id, attempts, first_attempt_at, last_outcome`,
          decodeJournal
        )
        return { attempts: current?.attempts ?? 1, firstAt: current?.first_attempt_at ?? now, reconcile } satisfies Attempt
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
    const adoptOrSend = <A>(
      row: ClaimedRow,
      candidates: ReadonlyArray<Candidate<A>>,
      toChange: (found: A) => Change,
      hooks: SubmitHooks
    ) =>
      storage("providers.reconcile")(transaction(Effect.gen(function*() {
        const id = String(row.id)
        yield* sql`SELECT id FROM organisations WHERE id = ${row.org_id} ${forUpdate(sql)}`
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
          yield* hooks.apply(row, toChange(chosen.found))
          return "adopted" as const
        }
        if (free.length > 0) return "wait" as const
        // Nothing there is this action's: its request goes out now (a rival's reconciliation sees it pending).
        yield* settleOutcome(id, "pending")
        return "send" as const
      })))

    /** Runs a row's work with its lease renewed while it lasts: a crash lets the lease lapse within LEASE_MS. */
    const keepingLease = <A, E, R>(row: ClaimedRow, hooks: SubmitHooks, work: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.zipRight(
        Effect.forkScoped(Effect.gen(function*() {
          while (true) {
            yield* Effect.sleep(LEASE_RENEWAL_MS)
            const held = yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + LEASE_MS).pipe(
              // A renewal that failed is tried again at the next; the lease has two more in hand.
              Effect.orElseSucceed(() => true)
            )
            // Lost: a callback (or, after a stall, another worker) has the row now.
            if (!held) return
          }
        })),
        work
      ))

    /** Whether a failed attempt may have reached the provider. */
    const mayHaveSent = (error: Failure) => error.reason === "unknown_outcome" || (error.status !== null && error.status >= 500)

    /** What an unsuccessful answer does to the action. */
    const afterFailure = (
      provider: "Twilio" | "Vapi",
      orgId: string,
      row: ClaimedRow,
      error: Failure,
      attempts: number,
      now: number
    ): Change => {
      const code = "code" in error && error.code !== null ? `${error.code}: ` : ""
      switch (error.reason) {
        case "rejected":
          return failed(`${code}${error.message}`, "failed")
        case "auth_failed":
          return failed(
            `${provider} refused the organisation's credentials (${code}${error.message}); ` +
              `update them with \`parley providers set --org ${orgId} --kind ${provider.toLowerCase()} …\`.`,
            "failed"
          )
        default: {
          const unknown = mayHaveSent(error)
          // An attempt that may have sent is never given up on unseen: the next one looks first.
          if (attempts >= (unknown ? 2 * MAX_ATTEMPTS : MAX_ATTEMPTS)) {
            return failed(`${provider} did not accept it after ${attempts} attempts (last: ${code}${error.message}).`)
          }
          const wait = backoffMs(attempts, error.retryAfterMs)
          // Never later than a recheck would look (PARLEY_PROVIDER_RECHECK_MS, which tests shorten).
          const unknownWait = Math.min(UNKNOWN_OUTCOME_WAIT_MS, config.providerRecheckMs)
          return { status: row.status, workAt: now + (unknown ? Math.max(wait, unknownWait) : wait) }
        }
      }
    }

    /** After an answer, look again at the action later unless it is final (reports may be lost). */
    const recheck = (kind: "message" | "ai_call", status: RecordStatus, now: number) =>
      ProviderReports.isFinal(kind, status) ? null : now + config.providerRecheckMs

    const textChange = (message: Twilio.TwilioMessage, now: number): Change => {
      const status = twilioMessageStatus(message.status) ?? "Sending"
      return {
        status,
        workAt: recheck("message", status, now),
        // Twilio's schema lets an answer omit the sid: the status callbacks carry it.
        ...(message.sid === null ? {} : { sid: message.sid }),
        providerStatus: message.status,
        // A text's time is when it was sent.
        at: new Date(now).toISOString(),
        ...(status === "Failed" || status === "Undelivered"
          ? { errorMessage: `${message.errorCode ?? ""}${message.errorCode === null ? "" : ": "}${message.errorMessage ?? message.status}` }
          : {})
      }
    }

    const callChange = (call: Vapi.VapiCall, now: number): Change => {
      const status = (call.status === null ? null : vapiCallStatus(call.status)) ?? "Queued"
      return {
        status,
        workAt: recheck("ai_call", status, now),
        sid: call.id,
        ...(call.status === null ? {} : { providerStatus: call.status })
      }
    }

    /** What an attempt came to: an answer to record, or an earlier attempt's message adopted (recorded already). */
    type Submitted = { readonly change: Change; readonly outcome: Outcome } | "adopted"
    const accepted = (change: Change): Submitted => ({ change, outcome: "accepted" })
    const answered = (change: Change, error: Failure, attempt: Attempt): Submitted => ({
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

    const twilioAddress = (row: ClaimedRow, number: string) => row.type === "WhatsApp" ? `whatsapp:${number}` : number

    const twilioAccount = (account: TwilioAccountSettings): Twilio.TwilioAccount => ({
      apiBase: account.apiBase,
      accountSid: account.accountSid,
      authToken: account.authToken,
      apiKeySid: account.apiKeySid,
      apiKeySecret: account.apiKeySecret,
      contentApiBase: account.contentApiBase
    })

    /**
     * A content-template message records what the recipient saw — the template's text with its variables
     * (Twilio's Content API), or a placeholder naming both — not the text the request carried beside it.
     */
    const withSentText = (client: Twilio.TwilioAccount, row: ClaimedRow, change: Change) =>
      Effect.gen(function*() {
        if (row.wa_content_sid === null) return change
        const variables = row.wa_content_variables ?? {}
        const rendered = yield* Twilio.renderContent(client, row.wa_content_sid, variables)
        const body = Option.getOrElse(rendered, () => Twilio.contentPlaceholder(row.wa_content_sid ?? "", variables))
        // Written at once, whatever the status: Twilio's callbacks may already have moved the action on, and
        // the change below then no longer applies.
        yield* storage("providers.sentText")(
          sql`UPDATE actions SET body = ${body} WHERE id = ${Number(row.id)} AND org_id = ${row.org_id}`
        )
        return { ...change, body } satisfies Change
      })

    const sendText = (account: TwilioAccountSettings, row: ClaimedRow, attempt: Attempt, now: number, hooks: SubmitHooks) =>
      Effect.gen(function*() {
        const client = twilioAccount(account)
        const id = String(row.id)
        const to = twilioAddress(row, row.counterpart)
        // Through a Messaging Service, From still names the action's number: without it Twilio would pick any
        // number of the service's pool while the record names the chosen one.
        const sender = account.messagingServiceSid !== undefined && row.type !== "WhatsApp"
          ? { messagingServiceSid: account.messagingServiceSid, from: row.line }
          : { from: twilioAddress(row, row.line) }
        if (attempt.reconcile) {
          // An earlier attempt may have reached Twilio: look before sending again.
          const found = yield* Twilio.findMessages(client, {
            to,
            ...sender,
            since: attempt.firstAt,
            ...(row.wa_content_sid === null ? { body: row.body } : { contentSid: row.wa_content_sid })
          })
          const decision = yield* adoptOrSend(
            row,
            found.flatMap((f) => (f.message.sid === null ? [] : [{ id: f.message.sid, owner: null, found: f.message }])),
            (message) => textChange(message, now),
            hooks
          )
          if (decision === "adopted") return decision
          if (decision === "wait") return waiting(row, now)
        }
        const sent = yield* Twilio.sendMessage(client, {
          to,
          ...sender,
          ...(row.wa_content_sid === null
            ? { body: row.body }
            : {
              contentSid: row.wa_content_sid,
              ...(row.wa_content_variables === null ? {} : { contentVariables: row.wa_content_variables })
            }),
          statusCallback: twilioStatusCallback(config, row.org_id, id)
        })
        return accepted(yield* withSentText(client, row, textChange(sent, now)))
      }).pipe(
        Effect.catchTag("TwilioSendError", (error) =>
          Effect.succeed(answered(afterFailure("Twilio", row.org_id, row, error, attempt.attempts, now), error, attempt)))
      )

    const startCall = (
      account: VapiAccountSettings,
      directory: VapiDirectory,
      row: ClaimedRow,
      attempt: Attempt,
      now: number,
      hooks: SubmitHooks
    ) =>
      Effect.gen(function*() {
        const client: Vapi.VapiAccount = { apiBase: account.apiBase, apiKey: account.apiKey }
        const id = String(row.id)
        const number = directory.numbers.find((n) => n.phoneNumber === row.line)
        const phoneNumberId = number?.providerIds?.find((p) => !p.startsWith("PN"))
        if (phoneNumberId === undefined) {
          return notSent(
            `The number ${row.line} has no Vapi phone number id: add it with ` +
              `\`parley numbers add --org ${row.org_id} --sid ${number?.sid ?? "SID"} … --provider-id <Vapi phone number id>\`.`
          )
        }
        const bot = directory.bots.find((b) => b.id === row.bot_id)
        const assistantId = bot?.providerId ?? null
        if (assistantId === null) {
          return notSent(
            `The bot ${row.bot_id ?? ""} has no Vapi assistant id: add it with ` +
              `\`parley bots add --org ${row.org_id} --id ${row.bot_id ?? "BOT"} … --provider-id <Vapi assistant id>\`.`
          )
        }
        if (attempt.reconcile) {
          const found = yield* Vapi.findCalls(client, { phoneNumberId, customerNumber: row.counterpart, since: attempt.firstAt })
          const decision = yield* adoptOrSend(
            row,
            found.map((f) => ({ id: f.call.id, owner: f.parleyActionId, found: f.call })),
            (call) => callChange(call, now),
            hooks
          )
          if (decision === "adopted") return decision
          if (decision === "wait") return waiting(row, now)
        }
        const call = yield* Vapi.createCall(client, {
          assistantId,
          phoneNumberId,
          customerNumber: row.counterpart,
          variableValues: {
            mode: row.mode ?? "follow_script",
            ...(row.purpose_message === null ? {} : { purposeMessage: row.purpose_message })
          },
          metadata: { parleyActionId: id, parleyOrgId: row.org_id }
        })
        return accepted(callChange(call, now))
      }).pipe(
        Effect.catchTag("VapiCallError", (error) =>
          Effect.succeed(answered(afterFailure("Vapi", row.org_id, row, error, attempt.attempts, now), error, attempt)))
      )

    /** Applies a row's change in its own transaction. */
    const record = (row: ClaimedRow, hooks: SubmitHooks, change: Change) =>
      storage("providers.record")(transaction(hooks.apply(row, change)))

    /** Journalled rows among these: handed to a real provider at least once. */
    const journalled = (rows: ReadonlyArray<ClaimedRow>) =>
      rows.length === 0
        ? Effect.succeed(new Map<string, typeof Journal.Type>())
        : storage("providers.journalRead")(Effect.map(
          Effect.flatMap(
            sql`SELECT action_id, attempts, first_attempt_at, last_outcome FROM provider_submissions
                WHERE action_id IN ${sql.in(rows.map((r) => String(r.id)))}`,
            decodeJournal
          ),
          (found) => new Map(found.map((j) => [j.action_id, j]))
        ))

    /**
     * Sends what goes to real providers, recording each answer as it comes; answers the rows that stay with
     * the simulator. A row whose organisation removed its account after an attempt (the outcome unknown to
     * Parley) fails, saying so, rather than being simulated.
     */
    const submit = (rows: ReadonlyArray<ClaimedRow>, now: number, hooks: SubmitHooks) =>
      Effect.gen(function*() {
        if (rows.length === 0) return rows
        // Each organisation's accounts (and, for Vapi, its numbers and bots) once per batch, not per row.
        const twilio = new Map<string, Option.Option<TwilioAccountSettings>>()
        const vapi = new Map<string, Option.Option<VapiAccountSettings>>()
        const directories = new Map<string, VapiDirectory>()
        for (const row of rows) {
          if (row.kind === "message" && !twilio.has(row.org_id)) twilio.set(row.org_id, yield* accounts.twilio(row.org_id))
          if (row.kind === "ai_call" && !vapi.has(row.org_id)) {
            const account = yield* accounts.vapi(row.org_id)
            vapi.set(row.org_id, account)
            if (Option.isSome(account)) {
              directories.set(row.org_id, {
                numbers: yield* organisations.listNumbers(row.org_id),
                bots: yield* organisations.listBots(row.org_id)
              })
            }
          }
        }
        const simulated: Array<ClaimedRow> = []
        const real: Array<
          { row: ClaimedRow; provider: "twilio" | "vapi"; send: (attempt: Attempt) => Effect.Effect<Submitted, StorageError> }
        > = []
        for (const row of rows) {
          if (row.kind === "message") {
            const account = twilio.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else real.push({ row, provider: "twilio", send: (attempt) => sendText(account.value, row, attempt, now, hooks) })
          } else {
            const account = vapi.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else {
              const directory = directories.get(row.org_id) ?? { numbers: [], bots: [] }
              real.push({
                row,
                provider: "vapi",
                send: (attempt) => startCall(account.value, directory, row, attempt, now, hooks)
              })
            }
          }
        }
        const orphans = yield* journalled(simulated)
        for (const row of simulated.filter((r) => orphans.has(String(r.id)))) {
          yield* record(row, hooks, failed(
            `The organisation's ${row.kind === "message" ? "Twilio" : "Vapi"} account was removed after Parley handed ` +
              "this to it; whether it was sent is unknown to Parley."
          ))
        }
        yield* Effect.forEach(real, ({ provider, row, send }) =>
          Effect.gen(function*() {
            // Renewed while the request lasts; a row another worker (or a callback) took is left to it.
            if (!(yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + LEASE_MS))) return
            yield* keepingLease(row, hooks, Effect.gen(function*() {
              const submitted = yield* send(yield* journal(String(row.id), provider, now))
              if (submitted !== "adopted") yield* settle(row, submitted.outcome, submitted.change, hooks)
            }))
          }).pipe(
            hooks.traced(row, provider),
            forProvider(provider),
            // One row's storage failure leaves its lease to lapse (its attempt stays pending: reconciled next time).
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider submission not recorded; it will be reconciled"), {
                actionId: String(row.id),
                cause: error._tag
              })
            )
          ), { concurrency: CONCURRENCY, discard: true })
        return simulated.filter((r) => !orphans.has(String(r.id)))
      })

    /**
     * Actions a real provider has (their attempts are journalled), due for a recheck: their callbacks were
     * lost or late. Asks the provider for the status and applies it if it moves the action on; otherwise
     * looks again later, until the action is final or MAX_TRACKING_MS old.
     */
    const recheckAll = (rows: ReadonlyArray<ClaimedRow>, now: number, hooks: SubmitHooks) =>
      Effect.gen(function*() {
        if (rows.length === 0) return rows
        const known = yield* journalled(rows)
        yield* Effect.forEach(rows.filter((r) => known.has(String(r.id))), (row) =>
          Effect.gen(function*() {
            if (!(yield* hooks.hold(row, (yield* Clock.currentTimeMillis) + LEASE_MS))) return
            const change = yield* keepingLease(
              row,
              hooks,
              recheckOne(row, known.get(String(row.id))?.first_attempt_at ?? now, now)
            )
            yield* record(row, hooks, change)
          }).pipe(
            forProvider(row.kind === "message" ? "twilio" : "vapi"),
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider recheck not recorded; it will be tried again"), {
                actionId: String(row.id),
                cause: error._tag
              })
            )
          ), { concurrency: CONCURRENCY, discard: true })
        return rows.filter((r) => !known.has(String(r.id)))
      })

    /** When to look again at an action the provider has: after the recheck interval, for two days at most. */
    const laterFor = (firstAt: number, now: number) => now - firstAt > MAX_TRACKING_MS ? null : now + config.providerRecheckMs

    const recheckOne = (row: ClaimedRow, firstAt: number, now: number): Effect.Effect<Change, StorageError> =>
      Effect.gen(function*() {
        const later = laterFor(firstAt, now)
        const unchanged: Change = { status: row.status, workAt: later }
        if (row.sid === null) return unchanged
        if (row.kind === "message") {
          const account = yield* accounts.twilio(row.org_id)
          if (Option.isNone(account)) return { status: row.status, workAt: null }
          const found = yield* Twilio.fetchMessage(twilioAccount(account.value), row.sid)
          if (Option.isNone(found)) return unchanged
          const status = twilioMessageStatus(found.value.status)
          if (status === null || !ProviderReports.movesForward("message", row.status, status)) return unchanged
          return { ...textChange(found.value, now), at: row.at, workAt: ProviderReports.isFinal("message", status) ? null : later }
        }
        const account = yield* accounts.vapi(row.org_id)
        if (Option.isNone(account)) return { status: row.status, workAt: null }
        const found = yield* Vapi.getCall({ apiBase: account.value.apiBase, apiKey: account.value.apiKey }, row.sid)
        if (Option.isNone(found)) return unchanged
        const call = found.value
        const ending = call.status === "ended" || (call.status === null && call.endedReason !== null)
          ? vapiEnding(call.endedReason ?? "")
          : null
        const status = ending?.status ?? (call.status === null ? null : vapiCallStatus(call.status))
        if (status === null || !ProviderReports.movesForward("ai_call", row.status, status)) return unchanged
        const raw = call.endedReason ?? call.status ?? ""
        return status === "Completed"
          ? {
            status,
            workAt: null,
            providerStatus: raw,
            body: call.transcript ?? "",
            ...(call.recordingUrl === null ? {} : { audioFileId: call.recordingUrl })
          }
          : ProviderReports.isFinal("ai_call", status)
          ? { status, workAt: null, providerStatus: raw, errorMessage: ending?.errorMessage ?? raw }
          : { status, workAt: later, providerStatus: raw }
      }).pipe(
        Effect.catchTags({
          TwilioSendError: () => Effect.succeed<Change>({ status: row.status, workAt: laterFor(firstAt, now) }),
          VapiCallError: () => Effect.succeed<Change>({ status: row.status, workAt: laterFor(firstAt, now) })
        })
      )

    return { submit, recheck: recheckAll }
  })
