/**
 * The opt-out list: who asked not to be texted or called, on which channels, and why. Per organisation,
 * keyed by the recipient's number. Read and changed through /api/v1/opt-outs, the admin CLI and the
 * console; honoured by every creation and every dispatch (see the core's Consent).
 */
import { Schema } from "effect"
import { maxCharacters, PhoneOrShortCode } from "./Primitives.js"

export const OptOutChannel = Schema.Literal("SMS", "WhatsApp", "Call").annotations({
  identifier: "OptOutChannel",
  description: "A way Parley reaches a recipient: SMS texts, WhatsApp messages, or AI calls."
})
export type OptOutChannel = typeof OptOutChannel.Type
export const ALL_OPT_OUT_CHANNELS: ReadonlyArray<OptOutChannel> = OptOutChannel.literals

export const OptOutSource = Schema.Literal("keyword", "carrier", "api", "console", "crm", "cli").annotations({
  identifier: "OptOutSource",
  description:
    "What recorded it: the recipient's own keyword (STOP…), the carrier's refusal (the recipient unsubscribed there), an API key, " +
    "an administrator in the console or the CLI, or the CRM record's opt-out field."
})
export type OptOutSource = typeof OptOutSource.Type

export const OptOutReason = Schema.String.pipe(maxCharacters(500)).annotations({
  description: "Free text: why, in the words of whoever recorded it (at most 500 characters)."
})

export const OptOut = Schema.Struct({
  phone: PhoneOrShortCode,
  channels: Schema.Array(OptOutChannel).annotations({ description: "The channels the recipient may not be reached on." }),
  source: OptOutSource,
  reason: Schema.NullOr(Schema.String),
  cause: Schema.NullOr(Schema.String).annotations({
    description: "What caused it: the inbound message's id for a keyword, the action's id for a carrier refusal, " +
      "the API key's id, the administrator's email."
  }),
  createdAt: Schema.String.annotations({ description: "When it was recorded (ISO 8601, UTC)." })
}).annotations({ identifier: "OptOut" })
export type OptOut = typeof OptOut.Type

export const OptOutPage = Schema.Struct({
  items: Schema.Array(OptOut),
  nextCursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next page; null on the last." })
}).annotations({ identifier: "OptOutPage" })
export type OptOutPage = typeof OptOutPage.Type

export const ListOptOutsParams = Schema.Struct({
  cursor: Schema.optional(
    Schema.String.pipe(maxCharacters(512, { message: "not a cursor this API issued (too long)" })).annotations({
      description: "The opaque `nextCursor` of the previous page, with the same filter; omit for the first page."
    })
  ),
  phone: Schema.optional(PhoneOrShortCode).annotations({ description: "Only this number's entry." })
})

export const OptOutPhonePath = Schema.Struct({ phone: PhoneOrShortCode })

export const PutOptOutRequest = Schema.Struct({
  channels: Schema.optional(
    Schema.Array(OptOutChannel).pipe(Schema.minItems(1), Schema.maxItems(ALL_OPT_OUT_CHANNELS.length)).annotations({
      description: "The channels to stop; every channel when omitted."
    })
  ),
  reason: Schema.optional(OptOutReason)
}).annotations({ identifier: "PutOptOutRequest", parseOptions: { onExcessProperty: "error" } })
export type PutOptOutRequest = typeof PutOptOutRequest.Type
