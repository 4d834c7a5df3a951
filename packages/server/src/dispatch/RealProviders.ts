/**
 * Submission to real providers: Twilio for an organisation's texts and
 * WhatsApp, Vapi for its AI calls, when it has connected them (`parley
 * providers set`); everything else stays with the simulator.
 *
 * A submission is journalled (provider_submissions) before each attempt. An
 * attempt whose outcome is unknown — the process died, the connection dropped
 * after the request left — is reconciled with the provider (did it create the
 * message or call?) before anything is sent again, so a retry never sends
 * twice. After the provider accepts, its callbacks drive the action
 * (ProviderReports); the dispatcher no longer times it.
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
import * as Vapi from "../providers/vapi/VapiClient.js"
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
/** How far before the first attempt a reconciliation looks (clock skew between Parley and the provider). */
const RECONCILE_SLACK_MS = 5 * 60_000
/** How long Parley keeps asking a provider about an action whose reports stopped: two days. */
const MAX_TRACKING_MS = 48 * 3_600_000
/** Requests to one provider at once from one process. */
const CONCURRENCY = 8

export const backoffMs = (attempts: number, retryAfterMs: number | null): number =>
  Math.max(retryAfterMs ?? 0, Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1)))

const Journal = Schema.Struct({ action_id: Schema.String, attempts: DbInt, first_attempt_at: DbInt })
const decodeJournal = Schema.decodeUnknown(Schema.Array(Journal))

type Failure = Twilio.TwilioSendError | Vapi.VapiCallError

interface Routed {
  /** Rows whose organisation has no real provider for their kind. */
  readonly simulated: ReadonlyArray<ClaimedRow>
  /** The change each real submission makes, by action id. */
  readonly changes: ReadonlyMap<string, Change>
}

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

    /** Counts an attempt before it is made; answers how many there have been and when the first was. */
    const journal = (rows: ReadonlyArray<{ readonly id: string; readonly provider: string }>, now: number) =>
      rows.length === 0
        ? Effect.succeed(new Map<string, { attempts: number; firstAt: number }>())
        : Effect.map(
          Effect.flatMap(
            sql`INSERT INTO provider_submissions ${
              sql.insert(rows.map((r) => ({
                action_id: r.id,
                provider: r.provider,
                attempts: 1,
                first_attempt_at: now,
                last_attempt_at: now
              })))
            } ON CONFLICT (action_id) DO UPDATE SET attempts = provider_submissions.attempts + 1,
                last_attempt_at = excluded.last_attempt_at
              RETURNING action_id, attempts, first_attempt_at`,
            decodeJournal
          ),
          (journalled) => new Map(journalled.map((j) => [j.action_id, { attempts: j.attempts, firstAt: j.first_attempt_at }]))
        )

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
          if (attempts >= MAX_ATTEMPTS) {
            return failed(`${provider} did not accept it after ${attempts} attempts (last: ${code}${error.message}).`)
          }
          return { status: row.status, workAt: now + backoffMs(attempts, error.retryAfterMs) }
        }
      }
    }

    /** After an answer, look again at the action later unless it is final (reports may be lost). */
    const recheck = (kind: "message" | "ai_call", status: RecordStatus, now: number) =>
      ProviderReports.isFinal(kind, status) ? null : now + config.providerRecheckMs

    const textChange = (message: Twilio.TwilioMessage, now: number): Change => {
      const status = ProviderReports.twilioMessageStatus(message.status) ?? "Sending"
      return {
        status,
        workAt: recheck("message", status, now),
        sid: message.sid,
        providerStatus: message.status,
        // A text's time is when it was sent.
        at: new Date(now).toISOString(),
        ...(status === "Failed" || status === "Undelivered"
          ? { errorMessage: `${message.errorCode ?? ""}${message.errorCode === null ? "" : ": "}${message.errorMessage ?? message.status}` }
          : {})
      }
    }

    const callChange = (call: Vapi.VapiCall, now: number): Change => {
      const status = ProviderReports.vapiCallStatus(call.status) ?? "Queued"
      return { status, workAt: recheck("ai_call", status, now), sid: call.id, providerStatus: call.status }
    }

    const twilioAddress = (row: ClaimedRow, number: string) => row.type === "WhatsApp" ? `whatsapp:${number}` : number

    const twilioAccount = (account: TwilioAccountSettings): Twilio.TwilioAccount => ({
      apiBase: account.apiBase,
      accountSid: account.accountSid,
      authToken: account.authToken,
      apiKeySid: account.apiKeySid,
      apiKeySecret: account.apiKeySecret
    })

    const sendText = (account: TwilioAccountSettings, row: ClaimedRow, attempt: { attempts: number; firstAt: number }, now: number) =>
      Effect.gen(function*() {
        const client = twilioAccount(account)
        const id = String(row.id)
        const to = twilioAddress(row, row.counterpart)
        const sender = account.messagingServiceSid !== undefined && row.type !== "WhatsApp"
          ? { messagingServiceSid: account.messagingServiceSid }
          : { from: twilioAddress(row, row.line) }
        if (attempt.attempts > 1) {
          // An earlier attempt may have reached Twilio: look before sending again.
          const earlier = yield* Twilio.findMessage(client, {
            to,
            ...sender,
            since: attempt.firstAt - RECONCILE_SLACK_MS,
            ...(row.wa_content_sid === null ? { body: row.body } : { contentSid: row.wa_content_sid })
          })
          if (Option.isSome(earlier)) return textChange(earlier.value, now)
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
        return textChange(sent, now)
      }).pipe(
        Effect.catchTag("TwilioSendError", (error) =>
          Effect.succeed(afterFailure("Twilio", row.org_id, row, error, attempt.attempts, now)))
      )

    const startCall = (account: VapiAccountSettings, row: ClaimedRow, attempt: { attempts: number; firstAt: number }, now: number) =>
      Effect.gen(function*() {
        const client: Vapi.VapiAccount = { apiBase: account.apiBase, apiKey: account.apiKey }
        const id = String(row.id)
        const number = (yield* organisations.listNumbers(row.org_id)).find((n) => n.phoneNumber === row.line)
        const phoneNumberId = number?.providerIds?.find((p) => !p.startsWith("PN"))
        if (phoneNumberId === undefined) {
          return failed(
            `The number ${row.line} has no Vapi phone number id: add it with ` +
              `\`parley numbers add --org ${row.org_id} --sid ${number?.sid ?? "SID"} … --provider-id <Vapi phone number id>\`.`
          )
        }
        const bot = (yield* organisations.listBots(row.org_id)).find((b) => b.id === row.bot_id)
        const assistantId = bot?.providerId ?? null
        if (assistantId === null) {
          return failed(
            `The bot ${row.bot_id ?? ""} has no Vapi assistant id: add it with ` +
              `\`parley bots add --org ${row.org_id} --id ${row.bot_id ?? "BOT"} … --provider-id <Vapi assistant id>\`.`
          )
        }
        if (attempt.attempts > 1) {
          const earlier = yield* Vapi.findCall(client, {
            phoneNumberId,
            since: attempt.firstAt - RECONCILE_SLACK_MS,
            parleyActionId: id
          })
          if (Option.isSome(earlier)) return callChange(earlier.value, now)
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
        return callChange(call, now)
      }).pipe(
        Effect.catchTag("VapiCallError", (error) =>
          Effect.succeed(afterFailure("Vapi", row.org_id, row, error, attempt.attempts, now)))
      )

    /** Sends what goes to real providers; answers what stays with the simulator and each real submission's change. */
    const submit = (rows: ReadonlyArray<ClaimedRow>, now: number): Effect.Effect<Routed, StorageError> =>
      Effect.gen(function*() {
        if (rows.length === 0) return { simulated: [], changes: new Map() }
        const twilio = new Map<string, Option.Option<TwilioAccountSettings>>()
        const vapi = new Map<string, Option.Option<VapiAccountSettings>>()
        for (const orgId of new Set(rows.map((r) => r.org_id))) {
          if (rows.some((r) => r.org_id === orgId && r.kind === "message")) twilio.set(orgId, yield* accounts.twilio(orgId))
          if (rows.some((r) => r.org_id === orgId && r.kind === "ai_call")) vapi.set(orgId, yield* accounts.vapi(orgId))
        }
        const simulated: Array<ClaimedRow> = []
        const real: Array<{ row: ClaimedRow; send: (attempt: { attempts: number; firstAt: number }) => Effect.Effect<Change, StorageError>; provider: string }> = []
        for (const row of rows) {
          if (row.kind === "message") {
            const account = twilio.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else real.push({ row, provider: "twilio", send: (attempt) => sendText(account.value, row, attempt, now) })
          } else {
            const account = vapi.get(row.org_id) ?? Option.none()
            if (Option.isNone(account)) simulated.push(row)
            else real.push({ row, provider: "vapi", send: (attempt) => startCall(account.value, row, attempt, now) })
          }
        }
        const attempts = yield* storage("providers.journal")(
          journal(real.map(({ provider, row }) => ({ id: String(row.id), provider })), now)
        )
        const changes = new Map<string, Change>()
        yield* Effect.forEach(real, ({ row, send }) =>
          Effect.map(send(attempts.get(String(row.id)) ?? { attempts: 1, firstAt: now }), (change) => {
            changes.set(String(row.id), change)
          }), { concurrency: CONCURRENCY, discard: true })
        return { simulated, changes }
      })

    /**
     * Actions a real provider has (their attempts are journalled), due for a recheck: their callbacks were
     * lost or late. Asks the provider for the status and applies it if it moves the action on; otherwise
     * looks again later, until the action is final or MAX_TRACKING_MS old.
     */
    const recheckAll = (rows: ReadonlyArray<ClaimedRow>, now: number) =>
      Effect.gen(function*() {
        const changes = new Map<string, Change>()
        if (rows.length === 0) return { simulated: rows, changes }
        const journalled = new Map(
          (yield* storage("providers.journalRead")(Effect.flatMap(
            sql`SELECT action_id, attempts, first_attempt_at FROM provider_submissions
                WHERE action_id IN ${sql.in(rows.map((r) => String(r.id)))}`,
            decodeJournal
          ))).map((j) => [j.action_id, j.first_attempt_at])
        )
        const simulated = rows.filter((r) => !journalled.has(String(r.id)))
        const real = rows.filter((r) => journalled.has(String(r.id)))
        yield* Effect.forEach(real, (row) =>
          Effect.map(recheckOne(row, journalled.get(String(row.id)) ?? now, now), (change) => {
            changes.set(String(row.id), change)
          }), { concurrency: CONCURRENCY, discard: true })
        return { simulated, changes }
      })

    const recheckOne = (row: ClaimedRow, firstAt: number, now: number): Effect.Effect<Change, StorageError> =>
      Effect.gen(function*() {
        const later = now - firstAt > MAX_TRACKING_MS ? null : now + config.providerRecheckMs
        const unchanged: Change = { status: row.status, workAt: later }
        if (row.sid === null) return unchanged
        if (row.kind === "message") {
          const account = yield* accounts.twilio(row.org_id)
          if (Option.isNone(account)) return { status: row.status, workAt: null }
          const found = yield* Twilio.fetchMessage(twilioAccount(account.value), row.sid)
          if (Option.isNone(found)) return unchanged
          const status = ProviderReports.twilioMessageStatus(found.value.status)
          if (status === null || !ProviderReports.movesForward("message", row.status, status)) return unchanged
          return { ...textChange(found.value, now), at: row.at, workAt: ProviderReports.isFinal("message", status) ? null : later }
        }
        const account = yield* accounts.vapi(row.org_id)
        if (Option.isNone(account)) return { status: row.status, workAt: null }
        const found = yield* Vapi.getCall({ apiBase: account.value.apiBase, apiKey: account.value.apiKey }, row.sid)
        if (Option.isNone(found)) return unchanged
        const call = found.value
        const status = call.status === "ended"
          ? ProviderReports.vapiEndedStatus(call.endedReason ?? "")
          : ProviderReports.vapiCallStatus(call.status)
        if (status === null || !ProviderReports.movesForward("ai_call", row.status, status)) return unchanged
        return status === "Completed"
          ? {
            status,
            workAt: null,
            providerStatus: call.endedReason ?? call.status,
            body: call.transcript ?? "",
            ...(call.recordingUrl === null ? {} : { audioFileId: call.recordingUrl })
          }
          : ProviderReports.isFinal("ai_call", status)
          ? { status, workAt: null, providerStatus: call.endedReason ?? call.status, errorMessage: call.endedReason }
          : { status, workAt: later, providerStatus: call.status }
      }).pipe(
        Effect.catchTags({
          TwilioSendError: () => Effect.succeed<Change>({ status: row.status, workAt: now + config.providerRecheckMs }),
          VapiCallError: () => Effect.succeed<Change>({ status: row.status, workAt: now + config.providerRecheckMs })
        })
      )

    return { submit, recheck: recheckAll }
  })
