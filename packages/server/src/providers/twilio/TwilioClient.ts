/**
 * Twilio Programmable Messaging (REST API 2010-04-01, the `Messages` resource)
 * for texts and WhatsApp: send one message, and find a message again when a
 * send's outcome is unknown. Plain Effect over `fetch`, with no retries of its
 * own: Twilio's Messages API takes no idempotency key, so whether to try again
 * is the dispatcher's decision, made after `findMessages` has looked.
 *
 * Every failure is a `TwilioSendError` whose `reason` says what the caller may
 * do: `rejected` (this message will never go: fail it), `auth_failed` (the
 * organisation's credentials are wrong: fail clearly, do not retry),
 * `rate_limited` (retry later, no sooner than `retryAfterMs`), `unavailable`
 * (nothing was sent: retry), `unknown_outcome` (the request may have been
 * acted on: reconcile with `findMessages` before retrying).
 *
 * Errors carry Twilio's own message and code, never a credential.
 */
import { Data, Effect, Option, Schema } from "effect"
import {
  type Answered,
  apiUrl,
  type ClientFailures,
  createdAnswer,
  foundAnswer,
  type ProviderFailureFields,
  type ProviderFailureReason,
  readAnswer,
  retryAdvice
} from "../ProviderAnswers.js"
import { exchange, parseJson } from "../ProviderExchange.js"

export { twilioSignature, verifyTwilioSignature } from "./TwilioSignature.js"

export const TWILIO_API_BASE = "https://api.twilio.com"
export const TWILIO_CONTENT_API_BASE = "https://content.twilio.com"
export const TWILIO_TIMEOUT_MS = 15_000
/**
 * How far before `since` findMessages still looks, because `since` is read on
 * Parley's clock and `date_created` on Twilio's. A wider window could only
 * mistake an identical earlier message (same sender, recipient and text) for
 * the one being looked for.
 */
export const TWILIO_CLOCK_SKEW_MS = 60_000
/**
 * findMessages reads pages of the largest size Twilio serves, and gives up (an error: nothing is concluded)
 * past this many: 20,000 messages between one sender and one recipient.
 */
const FIND_PAGE_SIZE = 1000
const FIND_MAX_PAGES = 20

export interface TwilioAccount {
  /** Default TWILIO_API_BASE; a regional edge or a local fake otherwise. */
  readonly apiBase: string
  /** Twilio's Content API (content templates), default TWILIO_CONTENT_API_BASE; a local fake otherwise. */
  readonly contentApiBase?: string | undefined
  /** AC… */
  readonly accountSid: string
  /** Basic auth (unless an API key pair is given) and webhook signatures. */
  readonly authToken: string
  /** SK…: when set (with its secret), Basic auth is apiKeySid:apiKeySecret. */
  readonly apiKeySid?: string | undefined
  readonly apiKeySecret?: string | undefined
}

export interface TwilioSendRequest {
  /** E.164, or "whatsapp:+…" for WhatsApp. */
  readonly to: string
  /** E.164 or "whatsapp:+…"; with a Messaging Service too, it pins the sender among the service's numbers. */
  readonly from?: string | undefined
  /** MG…: the Messaging Service the message goes through. */
  readonly messagingServiceSid?: string | undefined
  readonly body?: string | undefined
  /** HX…: a WhatsApp content template. */
  readonly contentSid?: string | undefined
  /** The template's variables as the contract keys them ("{{1}}", "{{first_name}}"); see twilioContentVariables. */
  readonly contentVariables?: Readonly<Record<string, string>> | undefined
  /** Absolute URL Twilio posts each status change to. */
  readonly statusCallback: string
}

/** A Message resource. `sid` and `to` are nullable in Twilio's own schema (twilio-oai), so they are here. */
export interface TwilioMessage {
  readonly sid: string | null
  readonly status: string
  readonly errorCode: number | null
  readonly errorMessage: string | null
  readonly to: string | null
  readonly from: string | null
  readonly dateCreated: string | null
}

export type TwilioFailureReason = ProviderFailureReason | "unsubscribed"

/** Its message is Twilio's own (or ours when Twilio gave none); never a secret. */
export class TwilioSendError extends Data.TaggedError("TwilioSendError")<
  ProviderFailureFields<TwilioFailureReason> & {
    /** Twilio's error code (21211, 21610, 21408, 63016, 20429, 20003 …) when it gave one. */
    readonly code: number | null
  }
> {}

export interface TwilioCallOptions {
  /** Default TWILIO_TIMEOUT_MS. */
  readonly timeoutMs?: number | undefined
}

/** Twilio's code for a recipient who unsubscribed (replied STOP) from the sender. */
const UNSUBSCRIBED = 21610

/** Twilio's codes that mean "too much at once, try later" though they come as 400. */
const THROUGHPUT_CODES = new Set([
  20429, // Too Many Requests
  21611 // This 'From' number has exceeded the maximum number of queued messages
])

/**
 * What a Twilio error answer means for the caller. 63016 (WhatsApp free-form
 * text outside the 24-hour session) normally arrives as a failed status
 * callback, not here; when Twilio does answer it synchronously it is a rejection.
 */
export const classifyTwilioError = (status: number, code: number | null): TwilioFailureReason => {
  if (status === 401 || code === 20003) return "auth_failed"
  if (status === 429 || (code !== null && THROUGHPUT_CODES.has(code))) return "rate_limited"
  if (status >= 500) return "unavailable"
  // "Attempt to send to unsubscribed recipient": the recipient replied STOP to this sender at Twilio.
  if (code === UNSUBSCRIBED) return "unsubscribed"
  return "rejected"
}

const NullableString = Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })

// Only what Parley reads, and as loosely as Twilio's OpenAPI document types it: an answer Twilio may
// legitimately give must never read as "not a Message" (that would make a sent text's outcome unknown).
const MessageJson = Schema.Struct({
  sid: NullableString,
  status: Schema.String,
  error_code: Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => null }),
  error_message: NullableString,
  to: NullableString,
  from: NullableString,
  body: NullableString,
  messaging_service_sid: NullableString,
  date_created: NullableString
})
type MessageJson = typeof MessageJson.Type

const MessagePageJson = Schema.Struct({
  messages: Schema.Array(MessageJson),
  next_page_uri: NullableString
})

const ErrorJson = Schema.Struct({
  code: Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => null }),
  message: NullableString
})

const decodeMessage = Schema.decodeUnknownOption(MessageJson)
const decodePage = Schema.decodeUnknownOption(MessagePageJson)
const decodeError = Schema.decodeUnknownOption(ErrorJson)

const toMessage = (json: MessageJson): TwilioMessage => ({
  sid: json.sid,
  status: json.status,
  errorCode: json.error_code,
  errorMessage: json.error_message,
  to: json.to,
  from: json.from,
  dateCreated: json.date_created
})

const authorization = (account: TwilioAccount) => {
  const user = account.apiKeySid !== undefined && account.apiKeySecret !== undefined
    ? `${account.apiKeySid}:${account.apiKeySecret}`
    : `${account.accountSid}:${account.authToken}`
  return `Basic ${Buffer.from(user).toString("base64")}`
}

const messagesUrl = (account: TwilioAccount) =>
  apiUrl(account.apiBase, `/2010-04-01/Accounts/${encodeURIComponent(account.accountSid)}/Messages.json`)

/**
 * The contract keys a template's variables as its placeholders appear (`{{1}}`, `{{first_name}}`);
 * Twilio's `ContentVariables` keys them by the name inside the braces (`"1"`, `"first_name"`): sent
 * with the braces, every variable would render blank.
 */
export const twilioContentVariables = (variables: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(variables).map(([key, value]) => [key.replace(/^\{\{\s*(.*?)\s*\}\}$/, "$1"), value]))

const sendForm = (request: TwilioSendRequest): string => {
  const form = new URLSearchParams()
  form.set("To", request.to)
  if (request.from !== undefined) form.set("From", request.from)
  if (request.messagingServiceSid !== undefined) form.set("MessagingServiceSid", request.messagingServiceSid)
  if (request.body !== undefined) form.set("Body", request.body)
  if (request.contentSid !== undefined) form.set("ContentSid", request.contentSid)
  if (request.contentVariables !== undefined) {
    form.set("ContentVariables", JSON.stringify(twilioContentVariables(request.contentVariables)))
  }
  form.set("StatusCallback", request.statusCallback)
  return form.toString()
}

/** The error for an answer that is not a success. */
const answeredError = (answer: Answered, now: number): TwilioSendError => {
  const parsed = decodeError(parseJson(answer.body))
  const code = Option.match(parsed, { onNone: () => null, onSome: (e) => e.code })
  const message = Option.flatMap(parsed, (e) => Option.fromNullable(e.message))
  return new TwilioSendError({
    reason: classifyTwilioError(answer.status, code),
    code,
    status: answer.status,
    message: Option.getOrElse(message, () => `Twilio answered HTTP ${answer.status}.`),
    retryAfterMs: retryAdvice(answer, now)
  })
}

const connectionError = (reason: TwilioFailureReason, detail: string) =>
  new TwilioSendError({ reason, code: null, status: null, message: `Twilio: ${detail}.`, retryAfterMs: null })

const failures: ClientFailures<TwilioSendError> = { connection: connectionError, answered: answeredError }

/** Creates the Message resource: Twilio answers 201 with the message queued (or accepted, with a service). */
export const sendMessage = Effect.fn("TwilioClient.sendMessage")(function*(
  account: TwilioAccount,
  request: TwilioSendRequest,
  options: TwilioCallOptions = {}
) {
  const answer = yield* exchange({
    method: "POST",
    url: messagesUrl(account),
    headers: {
      authorization: authorization(account),
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json"
    },
    body: sendForm(request),
    timeoutMs: options.timeoutMs ?? TWILIO_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => createdAnswer(exchanged, failures)))
  const message = decodeMessage(parseJson(answer.body))
  if (Option.isNone(message)) {
    // A success we cannot read: the message exists but we do not know its sid.
    return yield* new TwilioSendError({
      reason: "unknown_outcome",
      code: null,
      status: answer.status,
      message: `Twilio answered HTTP ${answer.status} with a body that is not a Message resource.`,
      retryAfterMs: null
    })
  }
  return toMessage(message.value)
})

/**
 * The Message resource as Twilio has it now (GET …/Messages/{sid}.json): for a
 * message whose status callbacks Parley may have missed (it was down while
 * Twilio posted them). None when Twilio has no such message (404).
 */
export const fetchMessage = Effect.fn("TwilioClient.fetchMessage")(function*(
  account: TwilioAccount,
  sid: string,
  options: TwilioCallOptions = {}
) {
  const found = yield* exchange({
    method: "GET",
    url: messagesUrl(account).replace(/\.json$/, `/${encodeURIComponent(sid)}.json`),
    headers: { authorization: authorization(account), accept: "application/json" },
    timeoutMs: options.timeoutMs ?? TWILIO_TIMEOUT_MS
  }).pipe(Effect.flatMap((exchanged) => foundAnswer(exchanged, failures, [404])))
  if (Option.isNone(found)) return Option.none<TwilioMessage>()
  const answer = found.value
  const message = decodeMessage(parseJson(answer.body))
  if (Option.isNone(message)) {
    return yield* new TwilioSendError({
      reason: "unavailable",
      code: null,
      status: answer.status,
      message: "Twilio answered with a body that is not a Message resource.",
      retryAfterMs: null
    })
  }
  return Option.some(toMessage(message.value))
})

export interface TwilioFindQuery {
  readonly to: string
  readonly from?: string | undefined
  readonly messagingServiceSid?: string | undefined
  /** ms since the epoch: the message was created at or after this (less TWILIO_CLOCK_SKEW_MS). */
  readonly since: number
  readonly body?: string | undefined
  readonly contentSid?: string | undefined
}

/** A message findMessages found, with when Twilio created it (ms since the epoch). */
export interface TwilioFoundMessage {
  readonly message: TwilioMessage
  readonly createdAt: number
}

const createdAt = (json: MessageJson): number => (json.date_created === null ? NaN : Date.parse(json.date_created))

const matches = (query: TwilioFindQuery, earliest: number) => (json: MessageJson): boolean =>
  json.to === query.to &&
  (query.from === undefined || json.from === query.from) &&
  (query.messagingServiceSid === undefined || json.messaging_service_sid === query.messagingServiceSid) &&
  // A template's Message carries the rendered text, not the content sid, so a
  // template send is matched on sender, recipient and time alone.
  (query.body === undefined || json.body === query.body) &&
  // A message whose creation time cannot be read is kept: better a candidate too many than one missed.
  !(createdAt(json) < earliest)

/**
 * Reconciles a send whose outcome is unknown: every message to `to` from
 * `from` (or the messaging service) created at or after `since`, matched by
 * body when one is given, oldest first. Which of them is the action's is the
 * caller's decision: the same text to the same person twice (two appointment
 * confirmations) gives two candidates.
 *
 * Lists with the To and From filters and no DateSent filter, because DateSent
 * is when Twilio handed the message on: a message still queued has none and a
 * DateSent filter would hide exactly the message being looked for. Twilio's
 * documentation promises no order for the list, so every page is read
 * (following `next_page_uri`, whose PageToken is a cursor) rather than
 * stopping at the first message older than the window; past FIND_MAX_PAGES
 * the answer is an error, never a partial list that could miss the message.
 */
export const findMessages = Effect.fn("TwilioClient.findMessages")(function*(
  account: TwilioAccount,
  query: TwilioFindQuery,
  options: TwilioCallOptions = {}
) {
  const earliest = Math.floor((query.since - TWILIO_CLOCK_SKEW_MS) / 1000) * 1000
  const params = new URLSearchParams({ To: query.to, PageSize: String(FIND_PAGE_SIZE) })
  if (query.from !== undefined) params.set("From", query.from)
  const origin = account.apiBase.replace(/\/+$/, "")
  let url: string | null = `${messagesUrl(account)}?${params.toString()}`
  // By sid: a message that moved between pages while they were read is counted once.
  const found = new Map<string, MessageJson>()
  for (let page = 0; url !== null; page++) {
    if (page === FIND_MAX_PAGES) {
      return yield* connectionError("unavailable", `more than ${FIND_MAX_PAGES} pages of messages to ${query.to}`)
    }
    const answer = yield* exchange({
      method: "GET",
      url,
      headers: { authorization: authorization(account), accept: "application/json" },
      timeoutMs: options.timeoutMs ?? TWILIO_TIMEOUT_MS
    }).pipe(Effect.flatMap((exchanged) => readAnswer(exchanged, failures)))
    const decoded = decodePage(parseJson(answer.body))
    if (Option.isNone(decoded)) {
      return yield* new TwilioSendError({
        reason: "unavailable",
        code: null,
        status: answer.status,
        message: "Twilio answered the message list with a body that is not a page of messages.",
        retryAfterMs: null
      })
    }
    // A listed message without a sid (Twilio's schema allows it) could not be adopted anyway.
    for (const json of decoded.value.messages.filter(matches(query, earliest))) if (json.sid !== null) found.set(json.sid, json)
    url = decoded.value.next_page_uri === null ? null : origin + decoded.value.next_page_uri
  }
  return [...found.values()]
    .map((json): TwilioFoundMessage => ({ message: toMessage(json), createdAt: createdAt(json) }))
    .sort((a, b) => (a.createdAt || 0) - (b.createdAt || 0))
})

const ContentJson = Schema.Struct({
  types: Schema.optionalWith(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })), {
    default: () => null
  }),
  variables: Schema.optionalWith(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })), {
    default: () => null
  })
})
const decodeContent = Schema.decodeUnknownOption(ContentJson)

const textOf = (value: unknown, key: "body" | "title"): string | undefined =>
  typeof value === "object" && value !== null && key in value && typeof Reflect.get(value, key) === "string"
    ? String(Reflect.get(value, key))
    : undefined

/** The text a content type shows: `twilio/text` first, then any type's body, then a card's title. */
const contentText = (types: Readonly<Record<string, unknown>>): string | undefined =>
  textOf(types["twilio/text"], "body") ??
    Object.values(types).map((type) => textOf(type, "body")).find((body) => body !== undefined) ??
    Object.values(types).map((type) => textOf(type, "title")).find((title) => title !== undefined)

/**
 * A content template's text as the recipient sees it (Twilio Content API, `GET /v1/Content/{sid}` on
 * content.twilio.com, same credentials), with the variables filled in — the template's own defaults
 * for those not given. None when Twilio does not answer with a readable template: the caller records
 * a placeholder instead, and the send is not held up by it.
 */
export const renderContent = Effect.fn("TwilioClient.renderContent")(function*(
  account: TwilioAccount,
  contentSid: string,
  variables: Readonly<Record<string, string>>,
  options: TwilioCallOptions = {}
) {
  const base = (account.contentApiBase ?? TWILIO_CONTENT_API_BASE).replace(/\/+$/, "")
  const answer = yield* exchange({
    method: "GET",
    url: `${base}/v1/Content/${encodeURIComponent(contentSid)}`,
    headers: { authorization: authorization(account), accept: "application/json" },
    timeoutMs: options.timeoutMs ?? TWILIO_TIMEOUT_MS
  })
  if (answer._tag !== "Answered" || answer.status !== 200) return Option.none<string>()
  const content = decodeContent(parseJson(answer.body))
  if (Option.isNone(content) || content.value.types === null) return Option.none<string>()
  const text = contentText(content.value.types)
  if (text === undefined) return Option.none<string>()
  const given = twilioContentVariables(variables)
  const defaults = content.value.variables ?? {}
  return Option.some(text.replace(/\{\{\s*([^{}\s]+)\s*\}\}/g, (whole, key: string) => {
    const value = given[key] ?? defaults[key]
    return typeof value === "string" ? value : whole
  }))
})

/** What a content-template message records when its text cannot be read: which template, which values. */
export const contentPlaceholder = (contentSid: string, variables: Readonly<Record<string, string>>): string =>
  Object.keys(variables).length === 0
    ? `[WhatsApp template ${contentSid}]`
    : `[WhatsApp template ${contentSid} with ${JSON.stringify(twilioContentVariables(variables))}]`
