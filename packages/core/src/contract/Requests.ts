/**
 * The two request bodies of /api/v1 with every constraint of the contract.
 * Cross-field rules that need no state (exactly one of body/templateUuid,
 * WhatsApp never scheduled) live here too, so they are a 400 before any work.
 */
import { Schema } from "effect"
import { BoundedString, CallMode, Channel, CrmModule, E164, maxCharacters, OffsetTimestamp } from "./Primitives.js"

export const RecordLink = Schema.Struct({
  module: CrmModule,
  id: BoundedString(64).pipe(Schema.minLength(1))
}).annotations({ identifier: "RecordLink", description: "Links the action to a CRM record." })
export type RecordLink = typeof RecordLink.Type

/** `{{1}}`, `{{2}}`… or a content template's named variable, `{{first_name}}` (Twilio allows both). */
const VARIABLE_KEY = /^\{\{([1-9]\d{0,2}|[A-Za-z_][A-Za-z0-9_]{0,63})\}\}$/

/**
 * Unknown fields are refused, not dropped: a misspelt `scheduled_for` would
 * otherwise send the text now. The option reaches nested objects too
 * (`record.nmae`), and OpenAPI already says `additionalProperties: false`.
 */
const refuseUnknownFields = { parseOptions: { onExcessProperty: "error" } } as const

// The key rule is a filter over the record, not a refined key schema: a Record
// with a refined key silently drops the keys that do not match instead of
// refusing them, so `{"name": "Ada"}` would decode as `{}`.
const ContentVariables = Schema.Record({
  key: Schema.String,
  value: BoundedString(1024)
}).pipe(
  Schema.filter((variables) => {
    const bad = Object.keys(variables).find((key) => !VARIABLE_KEY.test(key))
    return bad === undefined
      ? true
      : { path: [bad], message: "variable keys must look like {{1}}, {{2}}, … or {{first_name}}" }
  }, { jsonSchema: { propertyNames: { type: "string", pattern: VARIABLE_KEY.source } } })
).annotations({
  identifier: "WhatsAppContentVariables",
  description: "Template variables keyed as the template's placeholders: `{{1}}`, `{{2}}`, and so on, or named " +
    "ones such as `{{first_name}}`. With `whatsAppContentSid`, `body` (or `templateUuid`) is still required by " +
    "the contract; the record then holds the content template's text as sent, not that body."
})

const MessageFields = Schema.Struct({
  to: E164,
  fromNumberSid: BoundedString(64).pipe(Schema.minLength(1)).annotations({
    description: "A `sid` from GET /numbers."
  }),
  record: Schema.optional(RecordLink),
  scheduledFor: Schema.optional(OffsetTimestamp).annotations({
    description: "At least 30 seconds in the future. Never with channel WhatsApp."
  }),
  // A text must say something: an empty body is refused (the contract sets no minimum; README, decisions).
  body: Schema.optional(BoundedString(5000).pipe(
    Schema.minLength(1, { message: () => "must not be empty: a text must say something (or send templateUuid)" })
  )),
  templateUuid: Schema.optional(BoundedString(128).pipe(Schema.minLength(1))).annotations({
    description: "A template `id` from GET /templates."
  }),
  channel: Schema.optionalWith(Channel, { default: () => "SMS" as const }),
  whatsAppContentSid: Schema.optional(BoundedString(64).pipe(Schema.minLength(1))).annotations({
    description: "Approved content template SID; required when the WhatsApp session is closed."
  }),
  whatsAppContentVariables: Schema.optional(ContentVariables)
}).annotations(refuseUnknownFields)

export const CreateMessageRequest = MessageFields.pipe(
  Schema.filter((m) => {
    if ((m.body === undefined) === (m.templateUuid === undefined)) {
      return { path: ["body"], message: "exactly one of body and templateUuid must be provided" }
    }
    if (m.channel === "WhatsApp" && m.scheduledFor !== undefined) {
      return { path: ["scheduledFor"], message: "WhatsApp messages are sent immediately and cannot be scheduled" }
    }
    if (m.channel === "SMS" && (m.whatsAppContentSid !== undefined || m.whatsAppContentVariables !== undefined)) {
      return { path: ["whatsAppContentSid"], message: "whatsAppContent fields apply to channel WhatsApp only" }
    }
    return true
  })
).annotations({ identifier: "CreateMessageRequest" })
export type CreateMessageRequest = typeof CreateMessageRequest.Type

export const CreateAiCallRequest = Schema.Struct({
  to: E164,
  fromNumberSid: BoundedString(64).pipe(Schema.minLength(1)),
  record: Schema.optional(RecordLink),
  scheduledFor: Schema.optional(OffsetTimestamp).annotations({
    description: "At least 30 seconds in the future."
  }),
  botId: BoundedString(128).pipe(Schema.minLength(1)).annotations({
    description: "An active outbound bot `id` from GET /bots."
  }),
  mode: CallMode,
  purposeMessage: Schema.optional(BoundedString(4000))
}).annotations(refuseUnknownFields).pipe(
  Schema.filter((c) =>
    c.mode === "deliver_specific_message" && (c.purposeMessage === undefined || c.purposeMessage.trim() === "")
      ? { path: ["purposeMessage"], message: "purposeMessage is required with mode deliver_specific_message" }
      : true
  )
).annotations({ identifier: "CreateAiCallRequest" })
export type CreateAiCallRequest = typeof CreateAiCallRequest.Type

/**
 * The header is optional at decoding so that its absence is the contract's
 * own error (400 IDEMPOTENCY_KEY_REQUIRED, raised by the handler) rather than
 * a generic schema failure; the OpenAPI document marks it required.
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(
    Schema.minLength(1, { message: () => "Idempotency-Key must not be empty" }),
    maxCharacters(128, { message: "Idempotency-Key must be at most 128 characters" })
  )).annotations({
    description:
      "Required. At most 128 characters, counted as Unicode code points (not bytes; send the value as UTF-8). " +
      "Retrying with the same key and payload replays the first result " +
      "(with `Idempotent-Replayed: true`); a different payload with the same key is a 400."
  })
})

export const IDEMPOTENCY_HEADER = "idempotency-key"
