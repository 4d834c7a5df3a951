/**
 * GET /messages and GET /ai-calls: the query filters and the pages. Pages are
 * newest first, 50 records each, with the signed `nextCursor` of every other
 * list; a cursor is bound to the filters it was issued for.
 */
import { Schema } from "effect"
import { maxCharacters, OffsetTimestamp } from "./Primitives.js"
import { ActionRecord } from "./Resources.js"
import { CallStatus, MessageStatus } from "./Statuses.js"

const cursor = Schema.optional(
  Schema.String.pipe(maxCharacters(512, { message: "not a cursor this API issued (too long)" })).annotations({
    description: "The opaque `nextCursor` of the previous page, with the same filters; omit for the first page."
  })
)

/** `Sent,Delivered` → ["Sent", "Delivered"]: one query parameter carries several statuses. */
const statusList = <A extends string>(status: Schema.Schema<A>, names: ReadonlyArray<A>) =>
  Schema.optional(
    Schema.compose(
      Schema.split(","),
      Schema.Array(status).pipe(Schema.minItems(1), Schema.maxItems(names.length)),
      { strict: false }
    ).annotations({ description: `Only records in these statuses, comma-separated: ${names.join(", ")}.` })
  )

// On the property, not the refinement: a query parameter is documented by its encoded side, a plain string.
const since = Schema.optional(OffsetTimestamp).annotations({
  description: "Only records created or changed at or after this time (their `modified`), an ISO 8601 timestamp " +
    "with an offset: pass the time of the previous poll to see every record that changed since."
})

const number = Schema.optional(
  Schema.String.pipe(Schema.minLength(1), maxCharacters(64)).annotations({
    description: "Only records on this line of the organisation (the sender of outbound records, the recipient of " +
      "inbound ones): a `sid` from GET /numbers or its E.164 `phoneNumber`."
  })
)

export const ListMessagesParams = Schema.Struct({
  cursor,
  status: statusList(MessageStatus, MessageStatus.literals),
  since,
  number
})
export type ListMessagesParams = typeof ListMessagesParams.Type

export const ListAiCallsParams = Schema.Struct({
  cursor,
  status: statusList(CallStatus, CallStatus.literals),
  since,
  number
})
export type ListAiCallsParams = typeof ListAiCallsParams.Type

export const AiCallPage = Schema.Struct({
  items: Schema.Array(ActionRecord),
  nextCursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AiCallPage" })
