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
 * Carriers retry a webhook they think failed (Twilio: on a timeout or a 5xx),
 * so a message the carrier identified is stored once per carrier id: a retry
 * answers the action stored the first time and emits nothing.
 */
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { type Channel, PhoneOrShortCode } from "../contract/Primitives.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { ActionStore, type Action } from "../ports/ActionStore.js"
import { Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { newId } from "./Crypto.js"
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

export const layer: Layer.Layer<Inbound, never, Organisations | ActionStore | Crm | UnitOfWork | EventOutbox> = Layer.effect(
  Inbound,
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    const store = yield* ActionStore
    const unitOfWork = yield* UnitOfWork
    const outbox = yield* Effect.context<EventOutbox>()
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
        const record = isSenderId(message.from)
          ? undefined
          : Option.getOrUndefined(yield* crm.findByPhone(message.orgId, message.from))
        const nowMs = yield* Clock.currentTimeMillis
        const now = new Date(nowMs).toISOString()
        const link = record === undefined ? null : { module: record.module, id: record.id, name: record.name }
        // A hosted CRM's record of the text, made before Parley's own (outside the transaction: it is a call
        // over the network); the carrier's retry of the same message finds the same record by its key.
        const crmId = yield* crm.recordAction({
          orgId: message.orgId,
          key: `inbound\u0000${message.orgId}\u0000${message.sid ?? newId("in")}`,
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
        })
        return yield* unitOfWork.atomically(Effect.gen(function*() {
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
            botId: null,
            mode: null,
            purposeMessage: null,
            templateId: null,
            whatsAppContentSid: null,
            whatsAppContentVariables: null,
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
