/**
 * The resources of /api/v1, field for field as the contract lists them.
 * Fields the contract marks "not required" are optional here so a client
 * tolerates their absence; Parley's server always writes them (null when empty).
 */
import { Schema } from "effect"
import { E164, PhoneOrShortCode, Timestamp } from "./Primitives.js"
import { Direction, RecordStatus, RecordType } from "./Statuses.js"

const NullableString = Schema.NullOr(Schema.String)

export class SenderNumber extends Schema.Class<SenderNumber>("SenderNumber")({
  sid: Schema.String.annotations({ description: "Use as `fromNumberSid` when creating actions." }),
  phoneNumber: E164,
  friendlyName: Schema.String,
  capabilities: Schema.Struct({
    sms: Schema.optional(Schema.Boolean),
    voice: Schema.optional(Schema.Boolean),
    whatsapp: Schema.optional(Schema.Boolean).annotations({
      description: "Whether the number is WhatsApp-connected (Parley's addition: the contract lists sms and voice)."
    })
  }),
  voiceOutboundBotId: NullableString
}) {}

export class Bot extends Schema.Class<Bot>("Bot")({
  id: Schema.String,
  name: Schema.String,
  description: Schema.optional(NullableString)
}) {}

export class Template extends Schema.Class<Template>("Template")({
  id: Schema.String,
  crmId: Schema.String,
  recordType: Schema.optional(NullableString),
  name: Schema.String,
  body: Schema.String.annotations({
    description: "May contain merge placeholders of the form `${Module.Field}`, e.g. `${Leads.First Name}`."
  })
}) {}

export const LinkedRecord = Schema.Struct({
  module: Schema.String,
  id: Schema.String,
  name: NullableString
}).annotations({ identifier: "LinkedRecord" })
export type LinkedRecord = typeof LinkedRecord.Type

export const Owner = Schema.Struct({ id: Schema.String, name: Schema.String }).annotations({ identifier: "Owner" })
export type Owner = typeof Owner.Type

export const RecordRef = Schema.Struct({ id: Schema.String, name: Schema.String }).annotations({
  identifier: "RecordRef"
})

export const LinkedSenders = Schema.Struct({
  Contact: Schema.optional(NullableString),
  Account: Schema.optional(NullableString),
  Vendor: Schema.optional(NullableString),
  Lead: Schema.optional(NullableString)
}).annotations({ identifier: "LinkedSenders" })

/** GET /messages/{id}, GET /ai-calls/{id} and the items of GET /conversations/{id}. */
export class ActionRecord extends Schema.Class<ActionRecord>("ActionRecord")({
  id: Schema.String.annotations({ description: "CRM action id (numeric string)." }),
  name: Schema.optional(NullableString),
  senderName: Schema.optional(NullableString),
  linkedSenders: Schema.optional(LinkedSenders),
  from: Schema.optional(NullableString),
  to: Schema.optional(NullableString),
  direction: Schema.optional(Schema.NullOr(Direction)),
  body: Schema.String.annotations({
    description: "Message text; for an AI call, the call transcript. Empty for a media-only message (see mediaUrls)."
  }),
  // Parley's addition, so optional as the contract's optional fields are: a client decoding a record without it
  // (another implementation of the contract, an older Parley) gets no field rather than a decoding error. A
  // plain optional, not one with a decoding default: the response encoder's fast walk takes only those (a
  // transformation would send the most read routes to the schema's slower encoder: response-encoder.test.ts).
  mediaUrls: Schema.optional(Schema.Array(Schema.String)).annotations({
    description: "Parley's addition: the media of an inbound MMS or WhatsApp message, as the absolute URLs the carrier " +
      "stores each item at (the inbound webhook's MediaUrl0, MediaUrl1…, in that order; at most 10). Parley always writes it: an " +
      "empty array when there is no media, as for every outbound message and AI call. The text stays in body."
  }),
  status: Schema.optional(Schema.NullOr(RecordStatus)).annotations({
    description: "One of MessageStatus for texts, CallStatus for AI calls."
  }),
  type: Schema.optional(Schema.NullOr(RecordType)),
  botId: NullableString.annotations({ description: "Null for texts, the bot id for AI calls." }),
  read: Schema.optional(NullableString).annotations({
    description: "When the record was read (timestamp); null while unread. Outbound records are always read."
  }),
  at: Schema.optional(Schema.NullOr(Timestamp)),
  scheduledFor: Schema.optional(Schema.NullOr(Timestamp)),
  owner: Schema.optional(Schema.NullOr(Owner)),
  record: Schema.optional(Schema.NullOr(RecordRef)),
  linkedRecords: Schema.Array(LinkedRecord),
  sid: Schema.optional(NullableString).annotations({ description: "Carrier or AI-call provider id." }),
  audioFileId: Schema.optional(NullableString),
  errorMessage: Schema.optional(NullableString),
  sentBy: Schema.optional(Schema.String),
  modified: Schema.optional(Schema.NullOr(Timestamp))
}) {}

export class ConversationSummary extends Schema.Class<ConversationSummary>("ConversationSummary")({
  id: Schema.String.annotations({ description: "Opaque conversation id." }),
  phone: PhoneOrShortCode.annotations({ description: "The counterpart's number (E.164), or the short code it wrote from." }),
  name: Schema.String,
  preview: Schema.optional(Schema.String),
  at: Schema.optional(Schema.NullOr(Timestamp)),
  unread: Schema.Boolean,
  owner: Schema.optional(Schema.NullOr(Owner)),
  direction: Schema.optional(Schema.NullOr(Direction)),
  status: Schema.optional(Schema.NullOr(RecordStatus)),
  type: Schema.optional(Schema.NullOr(RecordType)),
  sentBy: Schema.optional(Schema.String),
  linkedRecords: Schema.Array(LinkedRecord),
  unreadCount: Schema.Int.annotations({ description: "Unread inbound messages on the current page only." }),
  line: Schema.optional(E164).annotations({ description: "The sender line." })
}) {}

export class CreationAck extends Schema.Class<CreationAck>("CreationAck")({
  id: Schema.String.annotations({ description: "CRM action id; simulated ids begin with `test_`." }),
  status: Schema.Literal("accepted", "scheduled"),
  test: Schema.Boolean
}) {}

export class CancellationAck extends Schema.Class<CancellationAck>("CancellationAck")({
  id: Schema.String,
  status: Schema.Literal("cancelled"),
  test: Schema.optional(Schema.Boolean).annotations({ description: "Present only for simulated cancellation." })
}) {}

export const NumberList = Schema.Struct({ items: Schema.Array(SenderNumber) }).annotations({
  identifier: "NumberList"
})
export const BotList = Schema.Struct({
  items: Schema.Array(Bot),
  managementUrl: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "BotList" })
export const TemplateList = Schema.Struct({
  items: Schema.Array(Template),
  managementUrl: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "TemplateList" })
export const ConversationPage = Schema.Struct({
  items: Schema.Array(ConversationSummary),
  nextCursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ConversationPage" })
export const MessagePage = Schema.Struct({
  items: Schema.Array(ActionRecord),
  nextCursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "MessagePage" })
