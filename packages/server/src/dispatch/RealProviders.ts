/**
 * Submission to real providers: Twilio for an organisation's texts and
 * WhatsApp, Vapi for its AI calls, when it has connected them (`parley
 * providers set`); everything else stays with the simulator.
 *
 * A submission is journalled (provider_submissions) before each attempt, with
 * its outcome after it. An attempt whose outcome is unknown — the process
 * died, the connection dropped after the request left, a 5xx — is reconciled
 * with the provider (did it create the message or call?) before anything is
 * sent again, so a retry never sends twice; an attempt known not to have sent
 * (a 429, a refused connection) is simply made again. A provider's id already
 * recorded on another action is never adopted. Each row's lease is extended
 * before its request and each answer is recorded at once, in its own
 * transaction, so a slow provider can neither let another replica take the
 * row mid-request nor lose an answer with the rest of the batch. After the
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
import { Effect, Option, Schema } from "effect"
import type { ServerSettings } from "../config/ServerConfig.js"
import { twilioStatusCallback } from "../providers/CallbackUrls.js"
import * as Twilio from "../providers/twilio/TwilioClient.js"
import { twilioMessageStatus } from "../providers/twilio/TwilioStatuses.js"
import * as Vapi from "../providers/vapi/VapiClient.js"
import { vapiCallStatus, vapiEnding } from "../providers/vapi/VapiStatuses.js"
import { DbInt, storage } from "../store/rows.js"
import {
  ProviderAccounts,
  type TwilioAccountSettings,
  type VapiAccountSettings
} from "../store/SqlProviderAccounts.js"
import type { Change, ClaimedRow } from "./ClaimedAction.js"

/** Attempts before giving up: with the backoff below, about two hours of retrying. */
export const MAX_ATTEMPTS = 16
const BASE_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 15 * 60_000
/** After an unknown outcome, the provider may still be creating the message or call: wait before looking. */
const UNKNOWN_OUTCOME_WAIT_MS = 30_000
/** How long a row handed to a real provider stays leased to this worker (a request and a reconciliation). */
export const PROVIDER_LEASE_MS = 5 * 60_000
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

/** What became of the last attempt: in flight (or its process died), accepted, known not sent, or unknown. */
type Outcome = "pending" | "accepted" | "not_sent" | "unknown"

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

/** What the dispatcher lends the submissions: its lease on a row, and recording a row's change at once. */
export interface SubmitHooks {
  /** Extends this worker's lease on the row; false when it was lost (another worker has the row). */
  readonly hold: (row: ClaimedRow, until: number) => Effect.Effect<boolean, StorageError>
  /** Applies the row's change in its own transaction. */
  readonly record: (row: ClaimedRow, change: Change) => Effect.Effect<void, StorageError>
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

    /** Counts an attempt before it is made (outcome pending); answers the attempt with what the last one left. */
    const journal = (id: string, provider: string, now: number) =>
      storage("providers.journal")(Effect.gen(function*() {
        const [previous] = yield* Effect.flatMap(
          sql`SELECT action_id, attempts, first_attempt_at, last_outcome FROM provider_submissions WHERE action_id = ${id}`,
          decodeJournal
        )
        const [current] = yield* Effect.flatMap(
          sql`INSERT INTO provider_submissions ${
            sql.insert({ action_id: id, provider, attempts: 1, first_attempt_at: now, last_attempt_at: now, last_outcome: "pending" })
          } ON CONFLICT (action_id) DO UPDATE SET attempts = provider_submissions.attempts + 1,
              last_attempt_at = excluded.last_attempt_at, last_outcome = 'pending'
            RETURNING action_id, attempts, first_attempt_at, last_outcome`,
          decodeJournal
        )
        return {
          attempts: current?.attempts ?? 1,
          firstAt: current?.first_attempt_at ?? now,
          reconcile: previous !== undefined && (previous.last_outcome === "pending" || previous.last_outcome === "unknown")
        } satisfies Attempt
      }))

    const settleOutcome = (id: string, outcome: Outcome) =>
      storage("providers.outcome")(sql`UPDATE provider_submissions SET last_outcome = ${outcome} WHERE action_id = ${id}`)

    /** A provider id already recorded on another action is not this action's: never adopt it. */
    const takenByAnother = (row: ClaimedRow, sid: string) =>
      storage("providers.sidTaken")(Effect.map(
        sql`SELECT id FROM actions WHERE org_id = ${row.org_id} AND sid = ${sid} AND id <> ${Number(row.id)}`,
        (rows) => rows.length > 0
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

    interface Submitted {
      readonly change: Change
      readonly outcome: Outcome
    }
    const accepted = (change: Change): Submitted => ({ change, outcome: "accepted" })
    const answered = (change: Change, error: Failure): Submitted => ({
      change,
      outcome: mayHaveSent(error) ? "unknown" : "not_sent"
    })
    /** Refused before any request: Failed, nothing sent. */
    const notSent = (errorMessage: string): Submitted => ({ change: failed(errorMessage), outcome: "not_sent" })

    const twilioAddress = (row: ClaimedRow, number: string) => row.type === "WhatsApp" ? `whatsapp:${number}` : number

    const twilioAccount = (account: TwilioAccountSettings): Twilio.TwilioAccount => ({
      apiBase: account.apiBase,
      contentApiBase: account.contentApiBase,
      accountSid: account.accountSid,
      authToken: account.authToken,
      apiKeySid: account.apiKeySid,
      apiKeySecret: account.apiKeySecret
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

    const sendText = (account: TwilioAccountSettings, row: ClaimedRow, attempt: Attempt, now: number) =>
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
          const earlier = yield* Twilio.findMessage(client, {
            to,
            ...sender,
            since: attempt.firstAt,
            ...(row.wa_content_sid === null ? { body: row.body } : { contentSid: row.wa_content_sid })
          })
          if (Option.isSome(earlier) && earlier.value.sid !== null && !(yield* takenByAnother(row, earlier.value.sid))) {
            return accepted(yield* withSentText(client, row, textChange(earlier.value, now)))
          }
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
          Effect.succeed(answered(afterFailure("Twilio", row.org_id, row, error, attempt.attempts, now), error)))
      )

    const startCall = (account: VapiAccountSettings, directory: VapiDirectory, row: ClaimedRow, attempt: Attempt, now: number) =>
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
          const earlier = yield* Vapi.findCall(client, { phoneNumberId, since: attempt.firstAt, parleyActionId: id })
          if (Option.isSome(earlier) && !(yield* takenByAnother(row, earlier.value.id))) {
            return accepted(callChange(earlier.value, now))
          }
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
          Effect.succeed(answered(afterFailure("Vapi", row.org_id, row, error, attempt.attempts, now), error)))
      )

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
        const real: Array<{ row: ClaimedRow; provider: string; send: (attempt: Attempt) => Effect.Effect<Submitted, StorageError> }> = []
        for (const row of rows) {
          if (row.kind === "message") {
            const account = twilio.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else real.push({ row, provider: "twilio", send: (attempt) => sendText(account.value, row, attempt, now) })
          } else {
            const account = vapi.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else {
              const directory = directories.get(row.org_id) ?? { numbers: [], bots: [] }
              real.push({ row, provider: "vapi", send: (attempt) => startCall(account.value, directory, row, attempt, now) })
            }
          }
        }
        const orphans = yield* journalled(simulated)
        for (const row of simulated.filter((r) => orphans.has(String(r.id)))) {
          yield* hooks.record(row, failed(
            `The organisation's ${row.kind === "message" ? "Twilio" : "Vapi"} account was removed after Parley handed ` +
              "this to it; whether it was sent is unknown to Parley."
          ))
        }
        yield* Effect.forEach(real, ({ provider, row, send }) =>
          Effect.gen(function*() {
            // The lease covers this request and a reconciliation; a row another worker took is left to it.
            if (!(yield* hooks.hold(row, now + PROVIDER_LEASE_MS))) return
            const id = String(row.id)
            const attempt = yield* journal(id, provider, now)
            const { change, outcome } = yield* send(attempt)
            yield* settleOutcome(id, outcome)
            yield* hooks.record(row, change)
          }).pipe(
            // One row's storage failure leaves its lease to lapse (its attempt stays pending: reconciled next time).
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider submission not recorded; it will be reconciled"), {
                action: String(row.id),
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
            if (!(yield* hooks.hold(row, now + PROVIDER_LEASE_MS))) return
            yield* hooks.record(row, yield* recheckOne(row, known.get(String(row.id))?.first_attempt_at ?? now, now))
          }).pipe(
            Effect.catchAll((error) =>
              Effect.annotateLogs(Effect.logWarning("provider recheck not recorded; it will be tried again"), {
                action: String(row.id),
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
