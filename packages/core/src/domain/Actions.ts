/**
 * Texts and AI calls: creation, reading and cancellation — the rules of the
 * contract in the order a request meets them.
 *
 * Creation runs inside Idempotency.run, so everything below happens once per
 * Idempotency-Key and commits together with the stored response and the
 * `*.queued` event. Test keys go through every check and then stop: they get
 * a `test_` id, and nothing is written to the CRM or sent.
 */
import { Clock, Context, Effect, Either, Layer, Option } from "effect"
import {
  ActionNotCancellable,
  type ActionProcessing,
  AiCallsDisabled,
  AllowanceExhausted,
  CrmPermissionDenied,
  DestinationNotAllowed,
  type IdempotencyKeyReused,
  InvalidRequest,
  NotFound,
  OutsideSendingHours,
  RecipientOptedOut,
  type ResourceDenied
} from "../contract/Errors.js"
import type { CreateAiCallRequest, CreateMessageRequest, RecordLink } from "../contract/Requests.js"
import type { OptOutChannel } from "../contract/OptOuts.js"
import { type ActionRecord, CancellationAck, CreationAck } from "../contract/Resources.js"
import { Crm, type CrmError, type CrmRecord } from "../ports/Crm.js"
import { ActionStore, type ActionKind, type Action, isCancellable, type NewAction, publicId } from "../ports/ActionStore.js"
import { EventOutbox } from "../ports/EventOutbox.js"
import { type AllowanceKind, Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { toActionRecord } from "./ActionRecords.js"
import * as AllowancePeriods from "./AllowancePeriods.js"
import type { CallerInfo } from "./Caller.js"
import { Consent, refusal as optOutRefusal } from "./Consent.js"
import { newId } from "./Crypto.js"
import { refusal, rulesOf } from "./Destinations.js"
import { Directory } from "./Directory.js"
import { emitTo } from "./Events.js"
import { Idempotency } from "./Idempotency.js"
import { spanned } from "./Spans.js"
import { cancellationHorizon, validateScheduledFor } from "./Scheduling.js"
import { allowanceUnits } from "./Segments.js"
import { releaseAt } from "./RecipientHours.js"
import { isOpen, nextOpening, parseSendingHours } from "./SendingHours.js"
import { fieldLabelsFor, renderTemplate } from "./Templates.js"
import { isVisible, visibility } from "./Visibility.js"
import { isSessionOpen } from "./WhatsApp.js"

export type CreateError =
  | InvalidRequest
  | ResourceDenied
  | CrmPermissionDenied
  | AllowanceExhausted
  | DestinationNotAllowed
  | RecipientOptedOut
  | AiCallsDisabled
  | OutsideSendingHours
  | IdempotencyKeyReused
  | ActionProcessing
  | CrmError
  | StorageError

/** AI settings do not apply to texts; sending hours refuse only WhatsApp (other actions wait for the window). */
export type CreateMessageError = Exclude<CreateError, AiCallsDisabled>
export type CreateAiCallError = Exclude<CreateError, OutsideSendingHours>

export interface CreationResult {
  readonly ack: CreationAck
  readonly replayed: boolean
}

export interface ActionsService {
  readonly createMessage: (
    caller: CallerInfo,
    request: CreateMessageRequest,
    idempotencyKey: string
  ) => Effect.Effect<CreationResult, CreateMessageError>
  readonly createAiCall: (
    caller: CallerInfo,
    request: CreateAiCallRequest,
    idempotencyKey: string
  ) => Effect.Effect<CreationResult, CreateAiCallError>
  readonly get: (
    caller: CallerInfo,
    kind: ActionKind,
    id: string
  ) => Effect.Effect<ActionRecord, NotFound | CrmPermissionDenied | CrmError | StorageError>
  readonly cancel: (
    caller: CallerInfo,
    kind: ActionKind,
    id: string
  ) => Effect.Effect<CancellationAck, NotFound | ActionNotCancellable | CrmPermissionDenied | CrmError | StorageError>
}

export class Actions extends Context.Tag("@parley/core/Actions")<Actions, ActionsService>() {}

const KIND_NAME: Record<ActionKind, string> = { message: "message", ai_call: "AI call" }

export const layer: Layer.Layer<
  Actions,
  never,
  ActionStore | Crm | Directory | Idempotency | EventOutbox | UnitOfWork | Organisations | Consent
> = Layer.effect(
  Actions,
  Effect.gen(function*() {
    const crm = yield* Crm
    const store = yield* ActionStore
    const directory = yield* Directory
    const idempotency = yield* Idempotency
    const outbox = yield* EventOutbox
    const unitOfWork = yield* UnitOfWork
    const organisations = yield* Organisations
    const consent = yield* Consent

    /**
     * What a live caller's organisation has left of an allowance this period (null: unlimited, or a test key,
     * which spends nothing). Read at acceptance so a used-up allowance is refused at once; the dispatcher
     * takes the units when it commits the send, so a text cancelled before then never counts.
     */
    const allowanceLeft = (caller: CallerInfo, kind: AllowanceKind): Effect.Effect<number | null, StorageError> =>
      caller.mode !== "live" || AllowancePeriods.limitOf(caller.organisation, kind) === null
        ? Effect.succeed(null)
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.map(
            organisations.usage(caller.orgId, AllowancePeriods.periodOf(now, caller.organisation.timezone)),
            (usage) => AllowancePeriods.left(caller.organisation, usage, kind)
          ))

    const requireWrite = (caller: CallerInfo) =>
      caller.account.permissions.actionsWrite
        ? Effect.void
        : Effect.fail(
          new CrmPermissionDenied({
            message: `The connected CRM account (${caller.account.name}) may not create or change actions.`
          })
        )

    /** The linked record's module, checked against the account's module permissions (before any CRM call). */
    const requireModule = (caller: CallerInfo, link: RecordLink | undefined) =>
      link === undefined || caller.account.permissions.modules.includes(link.module)
        ? Effect.void
        : Effect.fail(
          new CrmPermissionDenied({ message: `record.module: the connected CRM account may not read ${link.module}.` })
        )

    /** The linked record, with the fields a template needs (all of them without one). */
    const linkedRecord = (
      caller: CallerInfo,
      link: RecordLink | undefined,
      fieldLabels?: ReadonlyArray<string>
    ): Effect.Effect<CrmRecord | null, CrmPermissionDenied | InvalidRequest | CrmError | StorageError> =>
      link === undefined ? Effect.succeed(null) : Effect.gen(function*() {
        yield* requireModule(caller, link)
        const found = yield* crm.findRecord(caller.orgId, link.module, link.id, fieldLabels).pipe(
          // The CRM's own record-level refusal (a hosted CRM's sharing rules) is the contract's 403.
          Effect.catchIf(
            (error) => error._tag === "CrmError" && error.reason === "permission_denied",
            () =>
              Effect.fail(
                new CrmPermissionDenied({ message: `record.id: the connected CRM account may not read ${link.module} record ${link.id}.` })
              )
          )
        )
        if (Option.isNone(found)) {
          return yield* new InvalidRequest({ message: `record.id: no ${link.module} record ${link.id}.` })
        }
        return found.value
      })

    /**
     * A linked record its CRM marks opted out of the channel (an administrator ticked its box there) is refused
     * like a listed number; a live key also puts the number on the list (Consent.fromCrm), so the next send to
     * it is refused even unlinked. A test key hears the same refusal and changes nothing.
     */
    const refuseMarkedRecord = (caller: CallerInfo, record: CrmRecord | null, to: string, channel: OptOutChannel) => {
      const channels = record?.optedOut
      if (record === null || channels === undefined || !channels.includes(channel)) return Effect.void
      return Effect.gen(function*() {
        const marked = {
          channels,
          record: `${record.module} record ${record.id}`,
          at: new Date(yield* Clock.currentTimeMillis).toISOString()
        }
        const entry = caller.mode === "live"
          ? yield* consent.fromCrm(caller.orgId, to, marked)
          : { orgId: caller.orgId, phone: to, channels: marked.channels, source: "crm" as const, reason: null, cause: marked.record, createdAt: marked.at }
        return yield* new RecipientOptedOut({ message: `record: ${optOutRefusal(entry, channel) ?? ""}` })
      })
    }

    const baseAction = (caller: CallerInfo, record: CrmRecord | null, now: string) => ({
      orgId: caller.orgId,
      direction: "Outbound" as const,
      status: "Queued" as const,
      read: now,
      at: now,
      owner: { id: caller.account.id, name: caller.account.name },
      record: record === null ? null : { module: record.module, id: record.id, name: record.name },
      linkedRecords: record === null ? [] : [{ module: record.module, id: record.id, name: record.name }],
      // Parley sends no media (yet): the field is there, empty, as on every record.
      mediaUrls: [],
      sid: null,
      audioFileId: null,
      errorMessage: null,
      sentBy: `API key ${caller.keyId}`,
      modified: now,
      apiKeyId: caller.keyId
    })

    /**
     * Ends creation. Test keys get a simulated ack and nothing is written. For live keys the CRM's own record
     * of the action comes first, outside the transaction (a hosted CRM is a network call; its key makes a
     * retry find the same record), then — the effect returned, run inside the unit of work — the action, with
     * the CRM record's id, and its event.
     */
    const commit = (caller: CallerInfo, action: NewAction, idempotencyKey: string) =>
      Effect.gen(function*() {
        const status = action.scheduledFor === null ? "accepted" as const : "scheduled" as const
        if (caller.mode === "test") {
          return Effect.succeed(CreationAck.make({ id: newId("test"), status, test: true }))
        }
        const crmId = yield* crm.recordAction({
          orgId: caller.orgId,
          key: `${caller.orgId}\u0000${caller.keyId}\u0000${idempotencyKey}`,
          kind: action.kind,
          direction: action.direction,
          type: action.type,
          status: action.status,
          line: action.line,
          counterpart: action.counterpart,
          body: action.body,
          at: action.at,
          scheduledFor: action.scheduledFor,
          botId: action.botId,
          sentBy: action.sentBy,
          record: action.record === null ? null : { module: action.record.module, id: action.record.id }
        })
        // Validated once, where the answer is encoded (stored for replays, and written), not here as well.
        return Effect.flatMap(store.insertAction({ ...action, crmId: Option.getOrNull(crmId) }), (stored) =>
          Effect.as(
            emitTo(outbox, action.kind === "message" ? "message.queued" : "ai_call.queued", stored),
            CreationAck.make({ id: publicId(stored), status, test: false }, true)
          ))
      })

    const idempotent = <E, E2>(
      caller: CallerInfo,
      path: string,
      payload: CreateMessageRequest | CreateAiCallRequest,
      idempotencyKey: string,
      prepare: Effect.Effect<Effect.Effect<CreationAck, E>, E2>
    ) =>
      Effect.map(
        idempotency.runPrepared(
          {
            keyId: caller.keyId,
            idempotencyKey,
            method: "POST",
            path,
            payload,
            // Keep the record until a scheduled action has run, plus the usual retention.
            retainUntil: payload.scheduledFor === undefined ? undefined : Date.parse(payload.scheduledFor)
          },
          { schema: CreationAck, status: 202 },
          prepare
        ),
        ({ replayed, value }) => ({ ack: value, replayed })
      )

    /** The organisation's destination rules (Destinations), for test and live keys alike. */
    const allowedDestination = (caller: CallerInfo, line: string, to: string) => {
      const refused = refusal(rulesOf(caller.organisation), line, to)
      return Either.isLeft(refused)
        ? Effect.fail(new DestinationNotAllowed({ message: `to: ${refused.left}.` }))
        : Effect.void
    }

    /** Finds an action the caller may see; anything else reads as missing. */
    const visibleAction = (caller: CallerInfo, kind: ActionKind, id: string) =>
      Effect.flatMap(visibility(caller, directory), (seen) =>
        Effect.flatMap(store.findByPublicId(caller.orgId, id), (found) =>
          Option.isNone(found) || found.value.kind !== kind || !isVisible(found.value, seen)
            ? Effect.fail(new NotFound({ message: `No ${KIND_NAME[kind]} ${id}.` }))
            : Effect.succeed(found.value)))

    return Actions.of({
      // The creation spans capture no call-site stack (an Error per request, for a trace nobody reads by line).
      createMessage: (caller, request, idempotencyKey) =>
        idempotent(caller, "/api/v1/messages", request, idempotencyKey, Effect.gen(function*() {
            yield* requireWrite(caller)
            const schedule = yield* validateScheduledFor(request.scheduledFor)
            const number = yield* directory.resolveNumber(
              caller,
              request.fromNumberSid,
              request.channel === "WhatsApp" ? "whatsApp" : "sms"
            )
            yield* allowedDestination(caller, number.phoneNumber, request.to)
            // Before the CRM is asked anything: an opted-out recipient costs no record, no template merge.
            yield* consent.check(caller.orgId, request.to, request.channel === "WhatsApp" ? "WhatsApp" : "SMS")
            yield* requireModule(caller, request.record)
            let body = request.body ?? ""
            let templateId: string | null = null
            let record: CrmRecord | null
            if (request.templateUuid !== undefined) {
              if (!caller.account.permissions.templates) {
                return yield* new CrmPermissionDenied({
                  message: "templateUuid: the connected CRM account may not read message templates."
                })
              }
              const template = yield* crm.findTemplate(caller.orgId, request.templateUuid)
              if (Option.isNone(template)) {
                return yield* new InvalidRequest({ message: `templateUuid: no template ${request.templateUuid}.` })
              }
              templateId = template.value.id
              // Only the fields the template's placeholders name are asked of the CRM.
              const labels = fieldLabelsFor(template.value.body, request.record?.module)
              record = yield* linkedRecord(caller, request.record, labels)
              body = yield* renderTemplate(template.value.body, record)
            } else {
              record = yield* linkedRecord(caller, request.record)
            }
            yield* refuseMarkedRecord(caller, record, request.to, request.channel === "WhatsApp" ? "WhatsApp" : "SMS")
            if (request.channel === "WhatsApp" && request.whatsAppContentSid === undefined) {
              const last = yield* store.lastInboundWhatsApp(caller.orgId, number.phoneNumber, request.to)
              if (!isSessionOpen(Option.getOrNull(last), yield* Clock.currentTimeMillis)) {
                return yield* new InvalidRequest({
                  message: "whatsAppContentSid: required because the 24-hour WhatsApp session with " +
                    `${request.to} is closed (no inbound WhatsApp message from them in the last 24 hours).`
                })
              }
            }
            if (request.channel === "WhatsApp" && caller.mode === "live") {
              // WhatsApp is sent at once (its 24-hour session could lapse while it waited), so outside the
              // organisation's window it is refused now rather than held where it could not be cancelled.
              const hours = parseSendingHours(caller.organisation.sendingHours, caller.organisation.timezone)
              const nowMs = yield* Clock.currentTimeMillis
              if (Either.isRight(hours) && !isOpen(hours.right, new Date(nowMs))) {
                const opens = nextOpening(hours.right, new Date(nowMs)).toISOString()
                return yield* new OutsideSendingHours({
                  message: "WhatsApp messages are sent immediately and it is outside the organisation's sending hours " +
                    `(${caller.organisation.sendingHours}, ${caller.organisation.timezone}); send it after ${opens}.`
                })
              }
              // The same for the recipient-local hours, on the recipient's clock.
              const recipientOpens = releaseAt(caller.organisation, request.to, nowMs)
              if (recipientOpens > nowMs) {
                return yield* new OutsideSendingHours({
                  message: "WhatsApp messages are sent immediately and it is outside the organisation's recipient-local " +
                    `hours (${caller.organisation.recipientHours ?? ""}) on ${request.to}'s clock; send it after ${
                      new Date(recipientOpens).toISOString()
                    }.`
                })
              }
            }
            const units = allowanceUnits(request.channel, body)
            const textsLeft = yield* allowanceLeft(caller, "sms")
            if (textsLeft !== null && textsLeft < units) {
              return yield* new AllowanceExhausted({
                message: units === 1 || textsLeft === 0
                  ? "The organisation's text allowance for this month is used up."
                  : `The organisation's text allowance has ${textsLeft} SMS segments left this month; ` +
                    `this text needs ${units}.`
              })
            }
            const now = new Date(yield* Clock.currentTimeMillis).toISOString()
            return yield* commit(caller, {
              ...baseAction(caller, record, now),
              kind: "message",
              type: request.channel,
              line: number.phoneNumber,
              counterpart: request.to,
              fromNumberSid: number.sid,
              body,
              botId: null,
              mode: null,
              purposeMessage: null,
              templateId,
              whatsAppContentSid: request.whatsAppContentSid ?? null,
              whatsAppContentVariables: request.whatsAppContentVariables ?? null,
              scheduledFor: schedule.scheduledFor,
              dueAt: schedule.dueAt
            }, idempotencyKey)
        })).pipe(spanned("Actions.createMessage", { captureStackTrace: false })),

      createAiCall: (caller, request, idempotencyKey) =>
        idempotent(caller, "/api/v1/ai-calls", request, idempotencyKey, Effect.gen(function*() {
            yield* requireWrite(caller)
            if (caller.mode === "live" && !caller.organisation.aiCallsEnabled) {
              return yield* new AiCallsDisabled({ message: "AI calls are turned off in the organisation's AI settings." })
            }
            const schedule = yield* validateScheduledFor(request.scheduledFor)
            const number = yield* directory.resolveNumber(caller, request.fromNumberSid, "voice")
            yield* allowedDestination(caller, number.phoneNumber, request.to)
            yield* consent.check(caller.orgId, request.to, "Call")
            const bot = yield* directory.resolveBot(caller, request.botId)
            const record = yield* linkedRecord(caller, request.record)
            yield* refuseMarkedRecord(caller, record, request.to, "Call")
            const callsLeft = yield* allowanceLeft(caller, "call")
            if (callsLeft !== null && callsLeft <= 0) {
              return yield* new AllowanceExhausted({
                message: "The organisation's AI call allowance for this month is used up."
              })
            }
            const now = new Date(yield* Clock.currentTimeMillis).toISOString()
            return yield* commit(caller, {
              ...baseAction(caller, record, now),
              kind: "ai_call",
              type: "Call",
              line: number.phoneNumber,
              counterpart: request.to,
              fromNumberSid: number.sid,
              body: "",
              botId: bot.id,
              mode: request.mode,
              purposeMessage: request.purposeMessage ?? null,
              templateId: null,
              whatsAppContentSid: null,
              whatsAppContentVariables: null,
              scheduledFor: schedule.scheduledFor,
              dueAt: schedule.dueAt
            }, idempotencyKey)
        })).pipe(spanned("Actions.createAiCall", { captureStackTrace: false })),

      get: (caller, kind, id) =>
        Effect.map(visibleAction(caller, kind, id), (action) => toActionRecord(action, caller.account.permissions.modules)),

      cancel: (caller, kind, id) =>
        Effect.gen(function*() {
          yield* requireWrite(caller)
          const action = yield* visibleAction(caller, kind, id)
          const now = yield* Clock.currentTimeMillis
          const horizon = cancellationHorizon(now)
          const refuse = (current: Action) =>
            new ActionNotCancellable({
              message: `${KIND_NAME[kind]} ${id} is ${current.status}` +
                (current.status !== "Queued" ? "" : current.scheduledFor === null ? " and was not scheduled" : " and due within 30 seconds") +
                "; only Queued actions scheduled more than 30 seconds ahead can be cancelled."
            })
          if (caller.mode === "test") {
            // Simulated: the same rules, no change.
            if (!isCancellable(action, horizon)) return yield* refuse(action)
            return CancellationAck.make({ id, status: "cancelled", test: true })
          }
          return yield* unitOfWork.atomically(Effect.gen(function*() {
            const outcome = yield* store.cancelAction(caller.orgId, kind, action.id, horizon, new Date(now).toISOString())
            switch (outcome._tag) {
              case "NotFound":
                return yield* new NotFound({ message: `No ${KIND_NAME[kind]} ${id}.` })
              case "NotCancellable":
                return yield* refuse(outcome.action)
              case "Cancelled": {
                yield* emitTo(outbox, kind === "message" ? "message.cancelled" : "ai_call.cancelled", outcome.action)
                return CancellationAck.make({ id, status: "cancelled" })
              }
            }
          }))
        }).pipe(spanned("Actions.cancel"))
    })
  })
)
