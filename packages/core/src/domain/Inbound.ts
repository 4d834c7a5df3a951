/**
 * Inbound messages: a text that arrives on one of an organisation's lines
 * becomes a Received CRM action (unread until someone reads it), linked to
 * the CRM record with the sender's phone, and a `message.received` event —
 * atomically. An inbound WhatsApp message opens the 24-hour session with its
 * sender. The carrier's inbound webhook and `parley inbound` both come here.
 *
 * A message may carry media (an MMS, a WhatsApp image): its URLs are kept
 * apart from the text, which may then be empty.
 *
 * The text is stored whatever the CRM does (down, throttled, lapsed, slow):
 * see `receive`. A hosted CRM's record of it may then come later, from the
 * CRM connector's own durable outbox.
 *
 * Carriers retry a webhook they think failed (Twilio: on a timeout or a 5xx),
 * so a message the carrier identified is stored once per carrier id: a retry
 * answers the action stored the first time and emits nothing.
 *
 * A keyword (STOP, START, HELP…: Consent) changes the sender's consent in the
 * same unit of work, and when the organisation has Parley answer keywords, its
 * answer is queued there too, as an outbound text the dispatcher sends like any
 * other: a crash after the commit loses neither the opt-out nor the answer, and
 * a carrier's retry (rolled back above) queues no second one.
 */
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { type Channel, PhoneOrShortCode } from "../contract/Primitives.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { ActionStore, type Action, NO_SENDING_DETAILS, publicId } from "../ports/ActionStore.js"
import { Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { Consent, keywordReply } from "./Consent.js"
import { emit } from "./Events.js"
import type { EventOutbox } from "../ports/EventOutbox.js"

/** The message cannot be accepted as addressed; the message says why in plain words. */
export class InboundRejected extends Data.TaggedError("InboundRejected")<{ readonly message: string }> {}

/** Carriers number at most this many media items a message (Twilio: `MediaUrl0`…`MediaUrl9`). */
export const MAX_MEDIA = 10

/** Whether `text` can be kept as a media URL: absolute http(s), which a client reading `mediaUrls` may fetch. */
export const isMediaUrl = (text: string): boolean => {
  if (!URL.canParse(text)) return false
  const { protocol } = new URL(text)
  return protocol === "https:" || protocol === "http:"
}

/** How long receiving a text waits on a hosted CRM before storing it without the CRM's part (see receive). */
export const CRM_BUDGET = "3 seconds"

/**
 * The key of an inbound text's record in a hosted CRM: the carrier's message id when it gave one, else
 * Parley's own id of the stored text (`local:` + id). The receive path and the CRM's outbox use the same key,
 * so an upsert the first made is found, not duplicated, by the second.
 */
export const inboundCrmKey = (orgId: string, sidOrLocal: string): string => `inbound\u0000${orgId}\u0000${sidOrLocal}`

/** Whom a message can come from: what a conversation's `phone` may be. */
const isSender = Schema.is(PhoneOrShortCode)
/** An alphanumeric sender ID (`MyBank`) is no one's phone: no CRM record is looked up for it. */
const isSenderId = (from: string): boolean => /[A-Za-z]/.test(from)

/** Rolls back the transaction of a carrier's retry; the first delivery's action is answered instead. */
class AlreadyReceived extends Data.TaggedError("AlreadyReceived")<{ readonly actionId: string }> {}

export interface InboundMessage {
  readonly orgId: string
  readonly from: string
  readonly to: string
  /** The text; may be empty when the message carries media. */
  readonly body: string
  /** The carrier's URLs of the message's media, in its order; absent or empty for a text alone. */
  readonly mediaUrls?: ReadonlyArray<string> | undefined
  readonly channel: Channel
  /** The carrier's id for it, when a carrier reported it. */
  readonly sid?: string | undefined
}

export interface InboundService {
  readonly receive: (message: InboundMessage) => Effect.Effect<Action, InboundRejected | CrmError | StorageError>
}

export class Inbound extends Context.Tag("@parley/core/Inbound")<Inbound, InboundService>() {}

export const layer: Layer.Layer<Inbound, never, Organisations | ActionStore | Crm | UnitOfWork | EventOutbox | Consent> = Layer.effect(
  Inbound,
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    const store = yield* ActionStore
    const unitOfWork = yield* UnitOfWork
    const outbox = yield* Effect.context<EventOutbox>()
    const consent = yield* Consent
    return Inbound.of({
      receive: Effect.fn("Inbound.receive")(function*(message) {
        const numbers = yield* organisations.listNumbers(message.orgId)
        const line = numbers.find((n) => n.phoneNumber === message.to)
        if (line === undefined) {
          return yield* new InboundRejected({
            message: `${message.to} is not a number of ${message.orgId}` +
              (numbers.length === 0 ? " (it has none yet)" : `; its numbers are ${numbers.map((n) => n.phoneNumber).join(", ")}`)
          })
        }
        if (message.channel === "WhatsApp" && !line.whatsApp) {
          return yield* new InboundRejected({ message: `${message.to} is not connected to WhatsApp` })
        }
        if (!isSender(message.from)) {
          return yield* new InboundRejected({
            message: `${JSON.stringify(message.from)} is not an E.164 number, a short code or an alphanumeric sender ID`
          })
        }
        const mediaUrls = message.mediaUrls ?? []
        if (message.body.trim() === "" && mediaUrls.length === 0) {
          return yield* new InboundRejected({ message: "the message has neither text nor media" })
        }
        if (mediaUrls.length > MAX_MEDIA) {
          return yield* new InboundRejected({ message: `a message carries at most ${MAX_MEDIA} media items` })
        }
        const notUrl = mediaUrls.find((url) => !isMediaUrl(url))
        if (notUrl !== undefined) {
          return yield* new InboundRejected({ message: `media URL ${JSON.stringify(notUrl)} is not an absolute http(s) URL` })
        }
        // The text is Parley's to keep whatever the CRM does: the carrier (Twilio) does not retry a webhook by
        // default, so a reply refused here is lost. The hosted CRM's part (the link by phone, its own record) is
        // tried within CRM_BUDGET; a CRM that fails, throttles, has lapsed or is slow leaves the text stored
        // without it, and the CRM's connector makes the record later from its durable outbox (the server's
        // crm/InboundRecords), keyed by the carrier's id so that it finds a record this attempt made.
        const crmPart = <A>(effect: Effect.Effect<A, CrmError | StorageError>, otherwise: A) =>
          effect.pipe(
            Effect.timeout(CRM_BUDGET),
            Effect.catchTags({ CrmError: () => Effect.succeed(otherwise), TimeoutException: () => Effect.succeed(otherwise) })
          )
        // An alphanumeric sender ID is no one's phone: no CRM record is looked up for it.
        const record = isSenderId(message.from)
          ? undefined
          : Option.getOrUndefined(yield* crmPart(crm.findByPhone(message.orgId, message.from), Option.none()))
        const nowMs = yield* Clock.currentTimeMillis
        const now = new Date(nowMs).toISOString()
        const link = record === undefined ? null : { module: record.module, id: record.id, name: record.name }
        // A hosted CRM's record of the text, made before Parley's own (outside the transaction: it is a call
        // over the network). A text without the carrier's id has no key a later attempt could find again, so
        // its record is left to the outbox, keyed by Parley's own id.
        const crmId = message.sid === undefined ? Option.none<string>() : yield* crmPart(crm.recordAction({
          orgId: message.orgId,
          key: inboundCrmKey(message.orgId, message.sid),
          kind: "message",
          direction: "Inbound",
          type: message.channel,
          status: "Received",
          line: message.to,
          counterpart: message.from,
          body: message.body,
          mediaUrls,
          at: now,
          scheduledFor: null,
          botId: null,
          sentBy: null,
          record: link === null ? null : { module: link.module, id: link.id }
        }), Option.none<string>())
        return yield* unitOfWork.atomically(Effect.gen(function*() {
          // The CRM's record is keyed by the carrier's id: a record another text already has is this message
          // received before (the carrier's retry), not a new one.
          if (Option.isSome(crmId)) {
            const earlier = yield* store.findByPublicId(message.orgId, crmId.value)
            if (Option.isSome(earlier)) return yield* new AlreadyReceived({ actionId: earlier.value.id })
          }
          const created = yield* store.insertAction({
            orgId: message.orgId,
            kind: "message",
            type: message.channel,
            direction: "Inbound",
            status: "Received",
            line: message.to,
            counterpart: message.from,
            fromNumberSid: line.sid,
            body: message.body,
            mediaUrls,
            ...NO_SENDING_DETAILS,
            read: null,
            at: now,
            scheduledFor: null,
            dueAt: nowMs,
            owner: null,
            record: link,
            linkedRecords: link === null ? [] : [link],
            sid: message.sid ?? null,
            audioFileId: null,
            errorMessage: null,
            sentBy: null,
            modified: now,
            apiKeyId: null,
            crmId: Option.getOrNull(crmId)
          })
          if (message.sid !== undefined) {
            const first = yield* store.claimInboundSid(message.orgId, message.sid, created.id)
            if (Option.isSome(first)) return yield* new AlreadyReceived({ actionId: first.value })
          }
          yield* Effect.provide(emit("message.received", created), outbox)
          // A STOP and its opt-out commit with the message: the next creation to this number sees it.
          const organisation = yield* organisations.get(message.orgId)
          if (Option.isSome(organisation)) {
            const keyword = yield* consent.fromInbound(organisation.value, {
              from: message.from,
              body: message.body,
              messageId: publicId(created),
              at: now
            })
            const reply = keywordReply(organisation.value, keyword)
            if (reply !== null && !isSenderId(message.from)) {
              const answer = yield* store.insertAction({
                ...created,
                direction: "Outbound",
                status: "Queued",
                body: reply,
                mediaUrls: [],
                read: null,
                sid: null,
                crmId: null,
                keywordReplyTo: message.sid ?? `local:${created.id}`
              })
              yield* Effect.provide(emit("message.queued", answer), outbox)
            }
          }
          return created
        })).pipe(
          Effect.catchTag("AlreadyReceived", ({ actionId }) =>
            Effect.flatMap(store.findAction(message.orgId, actionId), (found) =>
              Option.match(found, {
                onSome: Effect.succeed,
                // The first delivery's action is gone (retention): nothing to store again.
                onNone: () => Effect.fail(new InboundRejected({ message: `message ${message.sid} was already received` }))
              })))
        )
      })
    })
  })
)
