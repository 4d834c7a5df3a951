/**
 * A local fake of Twilio's Programmable Messaging REST API (2010-04-01), written
 * from Twilio's public documentation, for tests that must not leave the machine.
 *
 * - `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` (form-encoded), with
 *   HTTP Basic auth as the account (AccountSid:AuthToken) or an API key
 *   (SK…:secret). Wrong credentials: 401 with Twilio's 20003 body. Validation as
 *   Twilio documents it: no To → 21604; no Body and no ContentSid → 21602; no
 *   From and no MessagingServiceSid → 21603; Body over 1,600 characters → 21617;
 *   a WhatsApp To with an SMS From (or the reverse) → 21910; a ContentSid not
 *   `HX` + 32 hex → 21655; ContentVariables not a JSON object of strings →
 *   21656; a MessagingServiceSid not `MG` + 32 hex → 21701; a StatusCallback
 *   that is not an absolute http(s) URL → 21609. The fields it reads are typed
 *   against the official `twilio` package's create options, and the resource
 *   it answers against its Message resource, so a field the real API does not
 *   have fails the build. A success is 201 with the Message resource (`status`
 *   queued, or accepted with a Messaging Service; its sender is the From sent
 *   with it, or the one the service assigns when it moves to queued).
 * - Content templates render their `{{1}}` / `{{first_name}}` placeholders from
 *   ContentVariables keyed as Twilio documents them ("1", "first_name"): keys
 *   written with their braces render blank, as at Twilio. `GET
 *   /v1/Content/{sid}` answers the Content API's resource only on a fake
 *   started with `contentApi: true` (standing for content.twilio.com): Twilio's
 *   REST host does not serve it, so a lookup sent to the REST base fails here too.
 * - Twilio's test-credential magic numbers give Twilio's documented errors
 *   (`TwilioFake.magic`): To +15005550001 → 21211, +15005550002 → 21612,
 *   +15005550003 → 21408, +15005550004 → 21610, +15005550009 → 21614;
 *   From +15005550001 → 21212, +15005550007 → 21606, +15005550008 → 21611.
 * - Lifecycle, reported to StatusCallback as Twilio does (form posts signed
 *   with X-Twilio-Signature by the official `twilio` package's signer; no
 *   callback for the initial status; with `beforeAnswer`, all of them before
 *   the create is answered): SMS sending → sent → delivered; WhatsApp sent → delivered → read;
 *   through a Messaging Service a queued callback first. Our own magic
 *   recipients (Twilio's test credentials send no callbacks, so these are the
 *   fake's): +15005550030 ends undelivered with 30003, +15005550031 ends failed
 *   with 30008, and the WhatsApp recipient +15005550016 is outside the 24-hour
 *   session: free-form text there is accepted (201) and then fails with 63016,
 *   as Twilio reports it; a ContentSid template goes through.
 * - `GET …/Messages/{Sid}.json` (the resource now; 404 with 20404 when unknown).
 * - `GET …/Messages.json` with To, From, DateSent / DateSent< / DateSent>
 *   filters, newest first, in Twilio's paging envelope (`messages`, `page`,
 *   `page_size`, `next_page_uri`, …): PageSize (default 50, at most 1,000, or
 *   the fake's `maxPageSize`, to make tests page), and a PageToken cursor as
 *   Twilio's are (`PA` + the last sid of the page before: a message created
 *   meanwhile neither shifts nor repeats the later pages). `Page` is only an
 *   index for the client, as Twilio documents it.
 * - Controls for tests: fail the next creates (`failNext`), accept and cut the
 *   connection before answering (`dropNextAfterAccept`), never answer
 *   (`hangNext`), go down and come back on the same port (`down`/`up`), bend
 *   the next lifecycles' callbacks (`tweakNextCallbacks`), be told each time a
 *   create has been answered (`onAnswered`: the crash tests kill Parley then),
 *   and see every request (with whether its credentials held), message and
 *   callback.
 */
import { randomBytes } from "node:crypto"
import type { ServerResponse } from "node:http"
import twilio from "twilio"
import type { MessageInstance, MessageListInstanceCreateOptions } from "twilio/lib/rest/api/v2010/account/message.js"
import {
  basicCredentials,
  type CallbackTweak,
  deliveryOrder,
  type Fault,
  FakeServer,
  ProviderFake,
  sendJson
} from "./FakeServer.js"

export interface TwilioFakeOptions {
  readonly accountSid?: string
  readonly authToken?: string
  readonly apiKeys?: ReadonlyArray<{ readonly sid: string; readonly secret: string }>
  /** Messaging Service SID → the sender it assigns. Default: any MG… assigns +15005550006. */
  readonly messagingServices?: Readonly<Record<string, string>>
  /** Content SID → template text with {{1}} or {{name}} placeholders (the rendered text becomes the body). */
  readonly contentTemplates?: Readonly<Record<string, string>>
  /** Content SID → the template's default variable values (the Content API's `variables`). */
  readonly contentDefaults?: Readonly<Record<string, Readonly<Record<string, string>>>>
  /** Whether this server answers Twilio's Content API (content.twilio.com); api.twilio.com does not. Default false. */
  readonly contentApi?: boolean
  /** Delay between lifecycle steps. Default 20 ms. */
  readonly stepMs?: number
  /** The largest page the list serves (Twilio's is 1,000): smaller makes a client page. */
  readonly maxPageSize?: number
}

export interface TwilioFakeRequest {
  readonly method: string
  readonly path: string
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly form: ReadonlyArray<readonly [string, string]>
  /** The Basic auth user (AccountSid or API key SID), when one was given. */
  readonly principal: string | null
  /** Whether the credentials were valid for the account in the path. */
  readonly authenticated: boolean
}

export interface TwilioFakeMessage {
  readonly sid: string
  readonly to: string
  from: string | null
  readonly body: string | null
  readonly contentSid: string | null
  readonly contentVariables: string | null
  readonly messagingServiceSid: string | null
  readonly statusCallback: string | null
  status: string
  errorCode: number | null
  errorMessage: string | null
  readonly dateCreated: number
  dateSent: number | null
  dateUpdated: number
  /** The order of creation, to sort messages created in the same millisecond. */
  readonly sequence: number
}

export interface TwilioFakeCallback {
  readonly url: string
  readonly params: ReadonlyArray<readonly [string, string]>
  readonly signature: string | undefined
  /** The status Parley answered, or null when the post failed. */
  readonly answered: number | null
}

interface Step {
  readonly status: string
  readonly errorCode?: number
}

/** The create fields the fake reads, by their form name, checked against the official SDK's create options. */
const CREATE_FIELDS = {
  To: "to",
  From: "from",
  MessagingServiceSid: "messagingServiceSid",
  Body: "body",
  ContentSid: "contentSid",
  ContentVariables: "contentVariables",
  StatusCallback: "statusCallback"
} as const satisfies Readonly<Record<string, keyof MessageListInstanceCreateOptions>>
type CreateField = keyof typeof CREATE_FIELDS

/** The Message resource's JSON as the official SDK types it (its constructor's payload). */
type MessageResource = ConstructorParameters<typeof MessageInstance>[1]

const CONTENT_SID = /^HX[0-9a-fA-F]{32}$/
const SERVICE_SID = /^MG[0-9a-fA-F]{32}$/

const API_VERSION = "2010-04-01"
const hex = (bytes: number) => randomBytes(bytes).toString("hex")
const E164 = /^\+[1-9]\d{1,14}$/

const ERROR_MESSAGES: Readonly<Record<number, string>> = {
  30003: "Unreachable destination handset",
  30008: "Unknown error",
  63016:
    "Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template."
}

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

const isStringRecord = (json: string): boolean => {
  try {
    const parsed: unknown = JSON.parse(json)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) &&
      Object.values(parsed).every((value) => typeof value === "string")
  } catch {
    return false
  }
}

/** RFC 2822 as Twilio writes it: "Thu, 30 Jul 2015 20:12:31 +0000". */
const rfc2822 = (ms: number) => new Date(ms).toUTCString().replace("GMT", "+0000")

const twilioError = (response: ServerResponse, status: number, code: number, message: string, headers = {}) =>
  sendJson(response, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }, headers)

export class TwilioFake extends ProviderFake {
  /** Inputs with documented outcomes; see the module comment. */
  static readonly magic = {
    validFrom: "+15005550006",
    invalidTo: "+15005550001",
    unroutableTo: "+15005550002",
    regionNotPermittedTo: "+15005550003",
    unsubscribedTo: "+15005550004",
    notMobileTo: "+15005550009",
    invalidFrom: "+15005550001",
    notOwnedFrom: "+15005550007",
    queueFullFrom: "+15005550008",
    undeliveredTo: "+15005550030",
    failedTo: "+15005550031",
    whatsAppOutsideSession: "+15005550016"
  } as const

  readonly accountSid: string
  readonly authToken: string
  readonly requests: Array<TwilioFakeRequest> = []
  readonly messages: Array<TwilioFakeMessage> = []
  readonly callbacks: Array<TwilioFakeCallback> = []
  /** The content SIDs read through the Content API, in order. */
  readonly contentReads: Array<string> = []
  /** Called once the 201 of each create has been written (the message exists and Parley may have its answer). */
  onAnswered: ((message: TwilioFakeMessage) => void) | undefined = undefined
  private sequence = 0

  private constructor(private readonly options: TwilioFakeOptions) {
    super()
    this.accountSid = options.accountSid ?? `AC${hex(16)}`
    this.authToken = options.authToken ?? hex(16)
  }

  static async start(options: TwilioFakeOptions = {}): Promise<TwilioFake> {
    const fake = new TwilioFake(options)
    fake.server = await FakeServer.start((request, body, response) =>
      fake.handle(request.method ?? "GET", request.url ?? "/", request.headers.authorization, body, response)
    )
    return fake
  }

  message(sid: string): TwilioFakeMessage | undefined {
    return this.messages.find((message) => message.sid === sid)
  }

  callbacksFor(sid: string): ReadonlyArray<TwilioFakeCallback> {
    return this.callbacks.filter((callback) => callback.params.some(([k, v]) => k === "MessageSid" && v === sid))
  }

  /** The Message resource as Twilio renders it. */
  resource(message: TwilioFakeMessage): { readonly [K in keyof MessageResource]: unknown } {
    const uri = `/${API_VERSION}/Accounts/${this.accountSid}/Messages/${message.sid}.json`
    return {
      account_sid: this.accountSid,
      api_version: API_VERSION,
      body: message.body,
      date_created: rfc2822(message.dateCreated),
      date_sent: message.dateSent === null ? null : rfc2822(message.dateSent),
      date_updated: rfc2822(message.dateUpdated),
      direction: "outbound-api",
      error_code: message.errorCode,
      error_message: message.errorMessage,
      from: message.from,
      messaging_service_sid: message.messagingServiceSid,
      num_media: "0",
      num_segments: message.messagingServiceSid !== null && message.from === null
        ? "0"
        : String(Math.max(1, Math.ceil((message.body ?? "").length / 153))),
      price: null,
      price_unit: "USD",
      sid: message.sid,
      status: message.status,
      subresource_uris: {
        media: uri.replace(".json", "/Media.json"),
        feedback: uri.replace(".json", "/Feedback.json")
      },
      to: message.to,
      uri
    }
  }

  private authenticate(header: string | undefined, pathSid: string): { principal: string | null; ok: boolean } {
    const credentials = basicCredentials(header)
    if (credentials === undefined) return { principal: null, ok: false }
    const asAccount = credentials.user === this.accountSid && credentials.password === this.authToken
    const asKey = (this.options.apiKeys ?? []).some((key) =>
      key.sid === credentials.user && key.secret === credentials.password
    )
    return { principal: credentials.user, ok: (asAccount || asKey) && pathSid === this.accountSid }
  }

  private async handle(
    method: string,
    rawUrl: string,
    authorization: string | undefined,
    body: string,
    response: ServerResponse
  ) {
    const url = new URL(rawUrl, "http://fake.invalid")
    const form = method === "POST" ? [...new URLSearchParams(body).entries()] : []
    const content = /^\/v1\/Content\/([^/]+)$/.exec(url.pathname)
    if (content?.[1] !== undefined && this.options.contentApi === true) {
      return this.contentResource(content[1], authorization, response)
    }
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages(?:\/(SM[0-9a-f]+))?\.json$/.exec(url.pathname)
    const auth = this.authenticate(authorization, match?.[1] ?? "")
    this.requests.push({
      method,
      path: url.pathname,
      query: [...url.searchParams.entries()],
      form,
      principal: auth.principal,
      authenticated: auth.ok
    })
    if (match === null) return twilioError(response, 404, 20404, "The requested resource was not found")
    if (!auth.ok) {
      return sendJson(response, 401, {
        code: 20003,
        message: "Authenticate",
        more_info: "https://www.twilio.com/docs/errors/20003",
        status: 401
      }, { "www-authenticate": `Basic realm="Twilio API"` })
    }
    const sid = match[2]
    if (sid !== undefined) {
      const message = method === "GET" ? this.message(sid) : undefined
      return message === undefined
        ? twilioError(response, 404, 20404, `The requested resource ${url.pathname} was not found`)
        : sendJson(response, 200, this.resource(message))
    }
    if (method === "GET") return this.list(url, response)
    if (method !== "POST") return twilioError(response, 405, 20004, "Method not allowed")
    const fault = this.faults.take()
    if (fault !== undefined && fault._tag !== "DropAfterAccept") return this.injure(fault, response)
    const created = this.create(new Map(form), response)
    if (created === undefined) return
    // The answer describes the message as created, even when its callbacks go out first.
    const answer = this.resource(created.message)
    if (created.beforeAnswer !== undefined) await created.beforeAnswer
    if (fault?._tag === "DropAfterAccept") {
      // The message exists and its lifecycle runs; only the answer is lost.
      response.socket?.destroy()
      return
    }
    sendJson(response, 201, answer)
    this.onAnswered?.(created.message)
  }

  /** Twilio's Content API: `GET /v1/Content/{sid}` for a template given in `contentTemplates`. */
  private contentResource(sid: string, authorization: string | undefined, response: ServerResponse) {
    const credentials = basicCredentials(authorization)
    const valid = credentials !== undefined && (
      (credentials.user === this.accountSid && credentials.password === this.authToken) ||
      (this.options.apiKeys ?? []).some((key) => key.sid === credentials.user && key.secret === credentials.password)
    )
    this.contentReads.push(sid)
    if (!valid) return twilioError(response, 401, 20003, "Authenticate")
    const text = this.options.contentTemplates?.[sid]
    if (text === undefined) return twilioError(response, 404, 20404, `The requested resource /v1/Content/${sid} was not found`)
    sendJson(response, 200, {
      sid,
      account_sid: this.accountSid,
      friendly_name: "fake template",
      language: "en",
      variables: this.options.contentDefaults?.[sid] ?? {},
      types: { "twilio/text": { body: text } },
      url: `https://content.twilio.com/v1/Content/${sid}`,
      date_created: new Date().toISOString(),
      date_updated: new Date().toISOString(),
      links: {}
    })
  }

  private injure(fault: Exclude<Fault, { _tag: "DropAfterAccept" }>, response: ServerResponse) {
    switch (fault._tag) {
      case "Hang":
        return
      case "ConcurrencyLimit":
        return twilioError(response, 429, 20429, "Too Many Requests")
      case "Status": {
        const headers = fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
        if (fault.status === 429) return twilioError(response, 429, 20429, "Too Many Requests", headers)
        if (fault.status === 503) return twilioError(response, 503, 20503, "Service Unavailable", headers)
        return twilioError(response, fault.status, 20500, "Internal Server Error", headers)
      }
    }
  }

  /** Validates like Twilio and creates the message; answers the error itself and returns undefined otherwise. */
  private create(
    fields: ReadonlyMap<string, string>,
    response: ServerResponse
  ): { readonly message: TwilioFakeMessage; readonly beforeAnswer: Promise<void> | undefined } | undefined {
    const form = (name: CreateField) => fields.get(name)
    const to = form("To") ?? ""
    const from = form("From") ?? ""
    const service = form("MessagingServiceSid") ?? ""
    const body = form("Body") ?? ""
    const contentSid = form("ContentSid") ?? ""
    const variables = form("ContentVariables")
    const statusCallback = form("StatusCallback")
    const reject = (code: number, message: string) => {
      twilioError(response, 400, code, message)
      return undefined
    }
    if (to === "") return reject(21604, "A 'To' phone number is required.")
    if (from === "" && service === "") return reject(21603, "A 'From' phone number is required.")
    if (body === "" && contentSid === "") return reject(21602, "Message body is required.")
    if (body.length > 1600) return reject(21617, "The concatenated message body exceeds the 1600 character limit.")
    if (contentSid !== "" && !CONTENT_SID.test(contentSid)) return reject(21655, "The ContentSid is Invalid.")
    if (variables !== undefined && !isStringRecord(variables)) {
      return reject(21656, "The ContentVariables Parameter is invalid.")
    }
    if (service !== "" && !SERVICE_SID.test(service)) {
      return reject(21701, `The Messaging Service Sid ${service} is invalid.`)
    }
    if (statusCallback !== undefined && !isHttpUrl(statusCallback)) {
      return reject(21609, "The StatusCallback URL is not a valid URL.")
    }
    const whatsApp = to.startsWith("whatsapp:")
    if (from !== "" && whatsApp !== from.startsWith("whatsapp:")) {
      return reject(21910, "Invalid From and To pair. From and To should be of the same channel")
    }
    const toNumber = to.replace(/^whatsapp:/, "")
    const fromNumber = from.replace(/^whatsapp:/, "")
    const magic = TwilioFake.magic
    if (!E164.test(toNumber) || toNumber === magic.invalidTo) {
      return reject(21211, `The 'To' number ${toNumber} is not a valid phone number.`)
    }
    if (from !== "" && (!E164.test(fromNumber) || fromNumber === magic.invalidFrom)) {
      return reject(21212, `The 'From' number ${fromNumber} is not a valid phone number, shortcode, or alphanumeric sender ID.`)
    }
    if (fromNumber === magic.notOwnedFrom) {
      return reject(21606, `The From phone number ${fromNumber} is not a valid, SMS-capable inbound phone number or short code for your account.`)
    }
    if (fromNumber === magic.queueFullFrom) {
      return reject(21611, "This 'From' number has exceeded the maximum number of queued messages")
    }
    if (toNumber === magic.unroutableTo) {
      return reject(21612, `The 'To' phone number: ${toNumber}, is not currently reachable using the 'From' phone number: ${fromNumber} via SMS.`)
    }
    if (toNumber === magic.regionNotPermittedTo) {
      return reject(21408, `Permission to send an SMS has not been enabled for the region indicated by the 'To' number: ${toNumber}.`)
    }
    if (toNumber === magic.unsubscribedTo) return reject(21610, "Attempt to send to unsubscribed recipient")
    if (toNumber === magic.notMobileTo) return reject(21614, `'To' number ${toNumber} is not a valid mobile number`)

    const now = Date.now()
    const message: TwilioFakeMessage = {
      sid: `SM${hex(16)}`,
      to,
      from: service !== "" && from === "" ? null : from,
      body: contentSid === "" ? body : this.render(contentSid, variables),
      contentSid: contentSid === "" ? null : contentSid,
      contentVariables: variables ?? null,
      messagingServiceSid: service === "" ? null : service,
      statusCallback: statusCallback ?? null,
      status: service === "" ? "queued" : "accepted",
      errorCode: null,
      errorMessage: null,
      dateCreated: now,
      dateSent: null,
      dateUpdated: now,
      sequence: this.sequence++
    }
    this.messages.push(message)
    const tweak = this.tweaks.take()
    const lifecycle = this.lifecycles.run(() => this.lifecycle(message, this.steps(message, toNumber), tweak))
    return { message, beforeAnswer: tweak.beforeAnswer === true ? lifecycle : undefined }
  }

  private render(contentSid: string, variables: string | undefined): string {
    const template = this.options.contentTemplates?.[contentSid] ?? ""
    let values: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(variables ?? "{}")
      if (typeof parsed === "object" && parsed !== null) values = { ...parsed }
    } catch {
      values = {}
    }
    const defaults = this.options.contentDefaults?.[contentSid] ?? {}
    return template.replace(/\{\{(\w+)\}\}/g, (_, key: string) => String(values[key] ?? defaults[key] ?? ""))
  }

  private steps(message: TwilioFakeMessage, toNumber: string): ReadonlyArray<Step> {
    const magic = TwilioFake.magic
    const viaService: ReadonlyArray<Step> = message.messagingServiceSid === null ? [] : [{ status: "queued" }]
    if (message.to.startsWith("whatsapp:")) {
      if (toNumber === magic.whatsAppOutsideSession && message.contentSid === null) {
        return [...viaService, { status: "failed", errorCode: 63016 }]
      }
      return [...viaService, { status: "sent" }, { status: "delivered" }, { status: "read" }]
    }
    if (toNumber === magic.undeliveredTo) {
      return [...viaService, { status: "sending" }, { status: "sent" }, { status: "undelivered", errorCode: 30003 }]
    }
    if (toNumber === magic.failedTo) return [...viaService, { status: "sending" }, { status: "failed", errorCode: 30008 }]
    return [...viaService, { status: "sending" }, { status: "sent" }, { status: "delivered" }]
  }

  private async lifecycle(message: TwilioFakeMessage, steps: ReadonlyArray<Step>, tweak: CallbackTweak) {
    const stepMs = this.options.stepMs ?? 20
    const posts: Array<ReadonlyArray<readonly [string, string]>> = []
    // The resource moves through its statuses on schedule; the callbacks
    // describing each move are posted in order, or bent as the test asked.
    for (const step of steps) {
      await this.lifecycles.pause(stepMs)
      if (this.lifecycles.isStopped) return
      this.advance(message, step)
      const params = this.callbackParams(message, step)
      posts.push(params)
      if (tweak.reverse !== true) await this.postAll(message, deliveryOrder([params], tweak), tweak)
    }
    if (tweak.reverse === true) await this.postAll(message, deliveryOrder(posts, tweak), tweak)
  }

  private advance(message: TwilioFakeMessage, step: Step) {
    const now = Date.now()
    if (step.status === "queued" && message.from === null) {
      message.from = this.options.messagingServices?.[message.messagingServiceSid ?? ""] ?? TwilioFake.magic.validFrom
    }
    if (step.status === "sent") message.dateSent = now
    message.status = step.status
    message.errorCode = step.errorCode ?? null
    message.errorMessage = step.errorCode === undefined ? null : ERROR_MESSAGES[step.errorCode] ?? null
    message.dateUpdated = now
  }

  private callbackParams(message: TwilioFakeMessage, step: Step): ReadonlyArray<readonly [string, string]> {
    const params: Array<readonly [string, string]> = [
      ["AccountSid", this.accountSid],
      ["ApiVersion", API_VERSION],
      ["From", message.from ?? ""],
      ["MessageSid", message.sid],
      ["MessageStatus", step.status],
      ["SmsSid", message.sid],
      ["SmsStatus", step.status],
      ["To", message.to]
    ]
    if (message.messagingServiceSid !== null) params.push(["MessagingServiceSid", message.messagingServiceSid])
    if (step.errorCode !== undefined) params.push(["ErrorCode", String(step.errorCode)])
    if (message.to.startsWith("whatsapp:")) params.push(["ChannelPrefix", "whatsapp"])
    if (step.status === "delivered" && !message.to.startsWith("whatsapp:")) {
      params.push(["RawDlrDoneDate", new Date().toISOString().slice(2, 16).replace(/[-T:]/g, "")])
    }
    return params
  }

  private async postAll(
    message: TwilioFakeMessage,
    posts: ReadonlyArray<ReadonlyArray<readonly [string, string]>>,
    tweak: CallbackTweak
  ) {
    if (message.statusCallback === null) return
    for (const params of posts) await this.post(message.statusCallback, params, tweak)
  }

  private async post(url: string, params: ReadonlyArray<readonly [string, string]>, tweak: CallbackTweak) {
    // Signed by the official Twilio package, independently of Parley's own implementation.
    const key = tweak.signature === "wrong" ? `${this.authToken}-wrong` : this.authToken
    const signature = tweak.signature === "none"
      ? undefined
      : twilio.getExpectedTwilioSignature(key, url, Object.fromEntries(params))
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      "user-agent": "TwilioProxy/1.1",
      "i-twilio-idempotency-token": hex(16)
    }
    if (signature !== undefined) headers["x-twilio-signature"] = signature
    let answered: number | null = null
    try {
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"),
        signal: AbortSignal.timeout(15_000)
      })
      await response.body?.cancel()
      answered = response.status
    } catch {
      answered = null
    }
    this.callbacks.push({ url, params, signature, answered })
  }

  private list(url: URL, response: ServerResponse) {
    const query = url.searchParams
    const day = (value: string) => Date.parse(`${value}T00:00:00Z`)
    const DAY = 86_400_000
    const exact = query.get("DateSent")
    const after = query.get("DateSent>")
    const before = query.get("DateSent<")
    // A message not yet sent has no date_sent, so any DateSent filter leaves it out.
    const sentWithin = (sent: number | null) =>
      (exact === null && after === null && before === null) ||
      (sent !== null &&
        (exact === null || (sent >= day(exact) && sent < day(exact) + DAY)) &&
        (after === null || sent >= day(after)) &&
        (before === null || sent < day(before) + DAY))
    const selected = this.messages
      .filter((m) => query.get("To") === null || m.to === query.get("To"))
      .filter((m) => query.get("From") === null || m.from === query.get("From"))
      .filter((m) => sentWithin(m.dateSent))
      .sort((a, b) => b.dateCreated - a.dateCreated || b.sequence - a.sequence)
    const pageSize = Math.min(this.options.maxPageSize ?? 1000, Math.max(1, Number(query.get("PageSize") ?? "50") || 50))
    // The token is a cursor: the page starts after the message it names (gone: from the first).
    const token = query.get("PageToken")
    const cursor = token !== null && token.startsWith("PA") ? selected.findIndex((m) => m.sid === token.slice(2)) : -1
    const start = cursor + 1
    const page = Number(query.get("Page") ?? "0") || 0
    const items = selected.slice(start, start + pageSize)
    const path = `/${API_VERSION}/Accounts/${this.accountSid}/Messages.json`
    const pageUri = (n: number, cursor: string | null) => {
      const params = new URLSearchParams(query)
      params.set("PageSize", String(pageSize))
      params.set("Page", String(n))
      params.delete("PageToken")
      if (cursor !== null) params.set("PageToken", `PA${cursor}`)
      return `${path}?${params.toString()}`
    }
    const last = items.at(-1)
    sendJson(response, 200, {
      end: start + Math.max(0, items.length - 1),
      first_page_uri: pageUri(0, null),
      messages: items.map((m) => this.resource(m)),
      next_page_uri: last !== undefined && start + items.length < selected.length ? pageUri(page + 1, last.sid) : null,
      page,
      page_size: pageSize,
      // Twilio's previous page runs backwards from the first sid of this one; no client here reads it.
      previous_page_uri: page > 0 ? pageUri(page - 1, null) : null,
      start,
      uri: `${path}?${url.searchParams.toString()}`
    })
  }
}
