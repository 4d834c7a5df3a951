/**
 * A local fake of Vapi's API for outbound phone calls, written from Vapi's
 * public documentation (API reference and server-message schemas), for tests
 * that must not leave the machine.
 *
 * - `POST /call` with `Authorization: Bearer <private key>`; another key → 401.
 *   The body is checked like Vapi's validation (NestJS: 400 with
 *   `{ message: [..], error: "Bad Request", statusCode: 400 }`): a property the
 *   create-call DTO does not have ("property X should not exist"), no assistant,
 *   no phone number, no customer number (or not E.164). The wording of those
 *   messages is ours; the shape is Vapi's. The properties allowed at the top
 *   level, in `assistantOverrides` and in `customer` are typed against the
 *   official `@vapi-ai/server-sdk` (CreateCallDto, AssistantOverrides,
 *   CreateCustomerDto: `squadVersion` is not one), exhaustively, so the fake
 *   and the SDK cannot drift apart. A success is 201 with the Call
 *   (`id`, `status: "queued"`, `type: "outboundPhoneCall"`, `assistantId`,
 *   `phoneNumberId`, `customer`, `assistantOverrides`, `createdAt`, …).
 * - Then server messages to the server URL (`setServer`), authenticated the
 *   way the test chose (`x-vapi-secret`, a Bearer credential in any header, or
 *   an HMAC credential: by default `x-signature` = hex HMAC-SHA256 of
 *   `<x-timestamp>.<body>`, or SHA-512, base64, a prefix, other header
 *   names, another payload format, an old timestamp), before the create is
 *   answered when the test asks (`beforeAnswer`): `status-update` ringing → in-progress → ended (with
 *   `endedReason`), then `end-of-call-report` (`endedReason`,
 *   `artifact.transcript`, `artifact.recordingUrl` and `artifact.recording`,
 *   `analysis.summary`). The transcript quotes the `purposeMessage` variable,
 *   so a test can see the variables arrived.
 * - Magic customer numbers choose the ending (`VapiFake.magic`), and `endWith`
 *   gives a number any of the SDK's 597 `endedReason`s; any other number
 *   talks and hangs up (`customer-ended-call`).
 * - `GET /call` with Vapi's documented filters (id, assistantId, phoneNumberId,
 *   limit, createdAtGt/Lt/Ge/Le), as a plain array of at most `limit` calls
 *   (default 100) — the next page is the client's to ask for, by the createdAt
 *   filters — and `GET /call/{id}`. Vapi's reference names no order and takes
 *   no sort parameter: newest first by default, `listOrder` picks which calls a
 *   full page keeps (oldest first, or newest first) so a client cannot lean on it.
 * - The same test controls as the Twilio fake: `failNext` (429/500/503),
 *   `failNextWithConcurrencyLimit` (Vapi's 400 "Over Concurrency Limit"),
 *   `dropNextAfterAccept`, `hangNext`, `down`/`up`, `tweakNextCallbacks`,
 *   `onAnswered` (told each time a create has been answered), and every
 *   request, call and server message recorded.
 */
import { createHmac, randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import { Vapi } from "@vapi-ai/server-sdk"
import {
  type CallbackTweak,
  deliveryOrder,
  type Fault,
  FakeServer,
  ProviderFake,
  sendJson
} from "./FakeServer.js"

export type VapiServerAuth = "x-vapi-secret" | "bearer" | "hmac"

/**
 * How an HMAC credential signs (the SDK's `HmacAuthenticationPlan`, its secret being the server secret), and
 * the test's own controls: the timestamp's offset and a Bearer credential's header and prefix.
 */
export interface VapiSigning extends Partial<Omit<Vapi.HmacAuthenticationPlan, "secretKey">> {
  /** The timestamp sent, from now (ms). Default 0; a negative one makes the message look old. */
  readonly timestampOffsetMs?: number
  /** Bearer credential: its header (default authorization) and whether "Bearer " prefixes the token. */
  readonly bearerHeader?: string
  readonly bearerPrefix?: boolean
}

const PLAN_ALGORITHMS: ReadonlySet<string> = new Set(Object.values(Vapi.HmacAuthenticationPlanAlgorithm))
const PLAN_ENCODINGS: ReadonlySet<string> = new Set(Object.values(Vapi.HmacAuthenticationPlanSignatureEncoding))
const PLAN_PLACEHOLDERS: ReadonlySet<string> = new Set(["{body}", "{timestamp}", "{method}", "{url}", "{svix-id}"])
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * What Vapi refuses of a plan when the credential is made (the SDK's enums; a payload format naming
 * anything but the documented placeholders; a base64 secret that is not base64): the fake refuses it too,
 * so a test cannot sign in a way Vapi never would.
 */
const checkPlan = (secret: string, signing: VapiSigning): void => {
  if (signing.algorithm !== undefined && !PLAN_ALGORITHMS.has(signing.algorithm)) {
    throw new Error(`Vapi's HmacAuthenticationPlan has no algorithm ${signing.algorithm}`)
  }
  if (signing.signatureEncoding !== undefined && !PLAN_ENCODINGS.has(signing.signatureEncoding)) {
    throw new Error(`Vapi's HmacAuthenticationPlan has no signatureEncoding ${signing.signatureEncoding}`)
  }
  const unknown = (signing.payloadFormat ?? "").match(/\{[^}]*\}/g)?.filter((p) => !PLAN_PLACEHOLDERS.has(p)) ?? []
  if (unknown.length > 0) throw new Error(`Vapi's payloadFormat has no placeholder ${unknown.join(", ")}`)
  if (signing.secretIsBase64 === true && !BASE64.test(secret)) throw new Error("secretIsBase64, but the secret is not base64")
}

export interface VapiFakeOptions {
  /** The organisation's private key. Default: a random one. */
  readonly apiKey?: string
  /** Delay between lifecycle steps. Default 20 ms. */
  readonly stepMs?: number
}

export interface VapiFakeRequest {
  readonly method: string
  readonly path: string
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly body: unknown
  readonly authenticated: boolean
}

export interface VapiFakeCall {
  readonly id: string
  readonly orgId: string
  readonly assistantId: string
  readonly phoneNumberId: string
  readonly customer: { readonly number: string }
  readonly assistantOverrides: Readonly<Record<string, unknown>> | null
  status: string
  endedReason: string | null
  readonly createdAt: number
  updatedAt: number
  startedAt: number | null
  endedAt: number | null
  transcript: string | null
  recordingUrl: string | null
  readonly sequence: number
}

export interface VapiFakeDelivery {
  readonly url: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  /** The status the server answered, or null when the post failed. */
  readonly answered: number | null
}

type Ending = Vapi.CallEndedReason

/** Every key of T, exactly: the compiler refuses a missing one and one T does not have. */
const keysOf = <T>(keys: { readonly [K in keyof Required<T>]: true }): ReadonlySet<string> => new Set(Object.keys(keys))

/** The create-call DTO's top-level properties (the SDK's CreateCallDto); anything else is refused. */
const CREATE_CALL_PROPERTIES = keysOf<Vapi.CreateCallDto>({
  assistantVersion: true,
  transport: true,
  customers: true,
  name: true,
  schedulePlan: true,
  assistantId: true,
  assistant: true,
  assistantOverrides: true,
  squadId: true,
  squad: true,
  squadOverrides: true,
  workflowId: true,
  workflow: true,
  workflowOverrides: true,
  phoneNumberId: true,
  phoneNumber: true,
  customerId: true,
  customer: true
})

const ASSISTANT_OVERRIDES_PROPERTIES = keysOf<Vapi.AssistantOverrides>({
  transcriber: true,
  model: true,
  voice: true,
  firstMessage: true,
  firstMessageInterruptionsEnabled: true,
  firstMessageMode: true,
  voicemailDetection: true,
  clientMessages: true,
  serverMessages: true,
  maxDurationSeconds: true,
  backgroundSound: true,
  modelOutputInMessagesEnabled: true,
  transportConfigurations: true,
  observabilityPlan: true,
  credentials: true,
  hooks: true,
  "tools:append": true,
  variableValues: true,
  name: true,
  voicemailMessage: true,
  endCallMessage: true,
  endCallPhrases: true,
  compliancePlan: true,
  metadata: true,
  backgroundSpeechDenoisingPlan: true,
  analysisPlan: true,
  artifactPlan: true,
  startSpeakingPlan: true,
  stopSpeakingPlan: true,
  monitorPlan: true,
  credentialIds: true,
  server: true,
  keypadInputPlan: true
})

const CUSTOMER_PROPERTIES = keysOf<Vapi.CreateCustomerDto>({
  numberE164CheckEnabled: true,
  extension: true,
  assistantOverrides: true,
  squadOverrides: true,
  number: true,
  sipUri: true,
  name: true,
  email: true,
  externalId: true
})

/** Every `endedReason` the SDK lists. */
export const VAPI_ENDED_REASONS: ReadonlyArray<Vapi.CallEndedReason> = Object.values(Vapi.CallEndedReason)

const E164 = /^\+[1-9]\d{1,14}$/

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const stringField = (record: Readonly<Record<string, unknown>>, key: string): string | undefined => {
  const value = record[key]
  return typeof value === "string" ? value : undefined
}

export class VapiFake extends ProviderFake {
  /** Customer numbers with a chosen ending; any other number ends with customer-ended-call. */
  static readonly magic = {
    assistantEnds: "+15005550101",
    noAnswer: "+15005550102",
    busy: "+15005550103",
    failsToConnect: "+15005550104",
    voicemail: "+15005550105"
  } as const

  readonly apiKey: string
  readonly orgId = randomUUID()
  readonly requests: Array<VapiFakeRequest> = []
  readonly calls: Array<VapiFakeCall> = []
  readonly deliveries: Array<VapiFakeDelivery> = []
  /** Called once the 201 of each create has been written (the call exists and Parley may have its answer). */
  onAnswered: ((call: VapiFakeCall) => void) | undefined = undefined
  private sequence = 0
  private serverUrl: string | undefined
  private secret = ""
  private auth: VapiServerAuth = "x-vapi-secret"
  private signing: VapiSigning = {}
  private readonly endings = new Map<string, Ending>()
  /** Server messages describe the call without its assistantOverrides (so without Parley's metadata). */
  messagesWithoutMetadata = false
  /** The order `GET /call` lists calls in, and so which a full page keeps (Vapi promises no order). */
  listOrder: "newest-first" | "oldest-first" = "newest-first"

  private constructor(private readonly options: VapiFakeOptions) {
    super()
    this.apiKey = options.apiKey ?? randomUUID()
  }

  static async start(options: VapiFakeOptions = {}): Promise<VapiFake> {
    const fake = new VapiFake(options)
    fake.server = await FakeServer.start((request, body, response) =>
      fake.handle(request.method ?? "GET", request.url ?? "/", request.headers.authorization, body, response)
    )
    return fake
  }

  /** Where server messages go (the organisation's server URL) and how they are authenticated. */
  setServer(url: string, secret: string, auth: VapiServerAuth = "x-vapi-secret", signing: VapiSigning = {}): void {
    if (auth === "hmac") checkPlan(secret, signing)
    this.serverUrl = url
    this.secret = secret
    this.auth = auth
    this.signing = signing
  }

  /** Calls to `number` end with `reason`. */
  endWith(number: string, reason: Ending): void {
    this.endings.set(number, reason)
  }

  failNextWithConcurrencyLimit(times = 1): void {
    this.faults.push({ _tag: "ConcurrencyLimit" }, times)
  }

  call(id: string): VapiFakeCall | undefined {
    return this.calls.find((call) => call.id === id)
  }

  /** Server messages delivered about one call, parsed, in the order posted. */
  deliveriesFor(callId: string): ReadonlyArray<{ readonly delivery: VapiFakeDelivery; readonly json: unknown }> {
    const parse = (body: string): unknown => JSON.parse(body)
    return this.deliveries
      .map((delivery) => ({ delivery, json: parse(delivery.body) }))
      .filter(({ json }) =>
        isRecord(json) && isRecord(json["message"]) && isRecord(json["message"]["call"]) &&
        json["message"]["call"]["id"] === callId
      )
  }

  /** The Call resource as Vapi renders it. */
  resource(call: VapiFakeCall): { readonly [K in keyof Vapi.Call]?: unknown } {
    const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString())
    return {
      id: call.id,
      orgId: call.orgId,
      type: "outboundPhoneCall",
      status: call.status,
      ...(call.endedReason === null ? {} : { endedReason: call.endedReason }),
      assistantId: call.assistantId,
      phoneNumberId: call.phoneNumberId,
      customer: call.customer,
      ...(call.assistantOverrides === null ? {} : { assistantOverrides: call.assistantOverrides }),
      createdAt: iso(call.createdAt),
      updatedAt: iso(call.updatedAt),
      ...(call.startedAt === null ? {} : { startedAt: iso(call.startedAt) }),
      ...(call.endedAt === null ? {} : { endedAt: iso(call.endedAt) }),
      cost: 0,
      phoneCallProvider: "twilio",
      phoneCallTransport: "pstn",
      monitor: {
        listenUrl: `wss://fake.vapi.invalid/${call.id}/listen`,
        controlUrl: `https://fake.vapi.invalid/${call.id}/control`
      },
      ...(call.transcript === null && call.recordingUrl === null
        ? {}
        : { artifact: { transcript: call.transcript ?? "", recordingUrl: call.recordingUrl } })
    }
  }

  private messageCall(call: VapiFakeCall) {
    const { assistantOverrides: _, ...rest } = this.resource(call)
    return this.messagesWithoutMetadata ? rest : this.resource(call)
  }

  private async handle(
    method: string,
    rawUrl: string,
    authorization: string | undefined,
    body: string,
    response: ServerResponse
  ) {
    const url = new URL(rawUrl, "http://fake.invalid")
    const authenticated = authorization === `Bearer ${this.apiKey}`
    let parsed: unknown = undefined
    try {
      parsed = body === "" ? undefined : JSON.parse(body)
    } catch {
      parsed = body
    }
    this.requests.push({ method, path: url.pathname, query: [...url.searchParams.entries()], body: parsed, authenticated })
    if (!authenticated) {
      return sendJson(response, 401, {
        message: "Invalid Key. Hot tip, you may be using the private key instead of the public key, or vice versa.",
        error: "Unauthorized",
        statusCode: 401
      })
    }
    if (url.pathname === "/call" && method === "GET") return this.list(url, response)
    const one = /^\/call\/([^/]+)$/.exec(url.pathname)
    if (one?.[1] !== undefined && method === "GET") {
      const call = this.call(one[1])
      return call === undefined
        ? sendJson(response, 404, { message: "Not Found", statusCode: 404 })
        : sendJson(response, 200, this.resource(call))
    }
    if (url.pathname !== "/call" || method !== "POST") {
      return sendJson(response, 404, { message: `Cannot ${method} ${url.pathname}`, error: "Not Found", statusCode: 404 })
    }
    const fault = this.faults.take()
    if (fault !== undefined && fault._tag !== "DropAfterAccept") return this.injure(fault, response)
    const created = this.create(parsed, response)
    if (created === undefined) return
    const answer = this.resource(created.call)
    if (created.beforeAnswer !== undefined) await created.beforeAnswer
    if (fault?._tag === "DropAfterAccept") {
      response.socket?.destroy()
      return
    }
    sendJson(response, 201, answer)
    this.onAnswered?.(created.call)
  }

  private injure(fault: Exclude<Fault, { _tag: "DropAfterAccept" }>, response: ServerResponse) {
    switch (fault._tag) {
      case "Hang":
        return
      case "ConcurrencyLimit":
        return sendJson(response, 400, { error: "Over Concurrency Limit" })
      case "Status": {
        const headers = fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
        if (fault.status === 429) {
          return sendJson(response, 429, { message: "ThrottlerException: Too Many Requests", statusCode: 429 }, headers)
        }
        if (fault.status === 503) return sendJson(response, 503, { message: "Service Unavailable", statusCode: 503 }, headers)
        return sendJson(response, fault.status, { message: "Internal server error", statusCode: fault.status }, headers)
      }
    }
  }

  private create(
    body: unknown,
    response: ServerResponse
  ): { readonly call: VapiFakeCall; readonly beforeAnswer: Promise<void> | undefined } | undefined {
    const problems: Array<string> = []
    if (!isRecord(body)) {
      sendJson(response, 400, { message: ["body must be a JSON object"], error: "Bad Request", statusCode: 400 })
      return undefined
    }
    for (const key of Object.keys(body)) if (!CREATE_CALL_PROPERTIES.has(key)) problems.push(`property ${key} should not exist`)
    const assistantId = stringField(body, "assistantId")
    const phoneNumberId = stringField(body, "phoneNumberId")
    const customer = isRecord(body["customer"]) ? body["customer"] : undefined
    const number = customer === undefined ? undefined : stringField(customer, "number")
    const overrides = body["assistantOverrides"]
    if (assistantId === undefined || assistantId === "") problems.push("assistantId must be a string (or give assistant, squad or workflow)")
    if (phoneNumberId === undefined || phoneNumberId === "") problems.push("phoneNumberId must be a string (or give phoneNumber)")
    if (number === undefined || !E164.test(number)) problems.push("customer.number must be a valid phone number in E.164 format")
    if (overrides !== undefined && !isRecord(overrides)) problems.push("assistantOverrides must be an object")
    if (isRecord(overrides)) {
      for (const key of Object.keys(overrides)) {
        if (!ASSISTANT_OVERRIDES_PROPERTIES.has(key)) problems.push(`assistantOverrides.property ${key} should not exist`)
      }
    }
    if (customer !== undefined) {
      for (const key of Object.keys(customer)) {
        if (!CUSTOMER_PROPERTIES.has(key)) problems.push(`customer.property ${key} should not exist`)
      }
    }
    if (problems.length > 0 || assistantId === undefined || phoneNumberId === undefined || number === undefined) {
      sendJson(response, 400, { message: problems, error: "Bad Request", statusCode: 400 })
      return undefined
    }
    const now = Date.now()
    const call: VapiFakeCall = {
      id: randomUUID(),
      orgId: this.orgId,
      assistantId,
      phoneNumberId,
      customer: { number },
      assistantOverrides: isRecord(overrides) ? overrides : null,
      status: "queued",
      endedReason: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      endedAt: null,
      transcript: null,
      recordingUrl: null,
      sequence: this.sequence++
    }
    this.calls.push(call)
    const tweak = this.tweaks.take()
    const lifecycle = this.lifecycles.run(() => this.lifecycle(call, tweak))
    return { call, beforeAnswer: tweak.beforeAnswer === true ? lifecycle : undefined }
  }

  private ending(number: string): Ending {
    const chosen = this.endings.get(number)
    if (chosen !== undefined) return chosen
    const magic = VapiFake.magic
    switch (number) {
      case magic.assistantEnds:
        return "assistant-ended-call"
      case magic.noAnswer:
        return "customer-did-not-answer"
      case magic.busy:
        return "customer-busy"
      case magic.failsToConnect:
        return "twilio-failed-to-connect-call"
      case magic.voicemail:
        return "voicemail"
      default:
        return "customer-ended-call"
    }
  }

  private purpose(call: VapiFakeCall): string {
    const values = call.assistantOverrides?.["variableValues"]
    const purpose = isRecord(values) ? stringField(values, "purposeMessage") : undefined
    return purpose ?? "Hello, this is an automated call."
  }

  private async lifecycle(call: VapiFakeCall, tweak: CallbackTweak) {
    const stepMs = this.options.stepMs ?? 20
    const ending = this.ending(call.customer.number)
    const unanswered: ReadonlyArray<string> = ["customer-did-not-answer", "customer-busy"]
    const answered = !unanswered.includes(ending) && !/fail|error|fault/.test(ending)
    const statuses: ReadonlyArray<string> = !answered && !unanswered.includes(ending)
      ? ["ended"]
      : answered
      ? ["ringing", "in-progress", "ended"]
      : ["ringing", "ended"]
    const messages: Array<Record<string, unknown>> = []
    for (const status of statuses) {
      await this.lifecycles.pause(stepMs)
      if (this.lifecycles.isStopped) return
      const now = Date.now()
      call.status = status
      call.updatedAt = now
      if (status === "in-progress") call.startedAt = now
      if (status === "ended") {
        call.endedReason = ending
        call.endedAt = now
        if (answered) {
          call.transcript = ending === "voicemail"
            ? `AI: ${this.purpose(call)}`
            : `AI: ${this.purpose(call)}\nUser: Thanks, that works for me.\nAI: Great, goodbye.`
          call.recordingUrl = `https://storage.fake.vapi.invalid/${call.id}-mono.wav`
        }
      }
      const update = this.statusUpdate(call, status, now)
      messages.push(update)
      if (tweak.reverse !== true) await this.postAll(deliveryOrder([update], tweak), tweak)
    }
    await this.lifecycles.pause(stepMs)
    if (this.lifecycles.isStopped) return
    const report = this.endOfCallReport(call)
    messages.push(report)
    await this.postAll(deliveryOrder(tweak.reverse === true ? messages : [report], tweak), tweak)
  }

  private statusUpdate(call: VapiFakeCall, status: string, now: number): Record<string, unknown> {
    return {
      message: {
        type: "status-update",
        status,
        ...(status === "ended" ? { endedReason: call.endedReason } : {}),
        timestamp: now,
        call: this.messageCall(call),
        customer: call.customer,
        phoneNumber: { id: call.phoneNumberId }
      }
    }
  }

  private endOfCallReport(call: VapiFakeCall): Record<string, unknown> {
    const recording = call.recordingUrl === null ? {} : {
      recordingUrl: call.recordingUrl,
      stereoRecordingUrl: call.recordingUrl.replace("-mono", "-stereo"),
      recording: { stereoUrl: call.recordingUrl.replace("-mono", "-stereo"), mono: { combinedUrl: call.recordingUrl } }
    }
    return {
      message: {
        type: "end-of-call-report",
        endedReason: call.endedReason,
        timestamp: Date.now(),
        startedAt: call.startedAt === null ? undefined : new Date(call.startedAt).toISOString(),
        endedAt: call.endedAt === null ? undefined : new Date(call.endedAt).toISOString(),
        cost: 0,
        artifact: { transcript: call.transcript ?? "", messages: [], ...recording },
        analysis: { summary: call.transcript === null ? "" : "The customer confirmed." },
        call: this.messageCall(call),
        customer: call.customer,
        phoneNumber: { id: call.phoneNumberId }
      }
    }
  }

  private async postAll(messages: ReadonlyArray<Record<string, unknown>>, tweak: CallbackTweak) {
    for (const message of messages) await this.post(message, tweak)
  }

  private async post(message: Record<string, unknown>, tweak: CallbackTweak) {
    const url = this.serverUrl
    if (url === undefined) return
    const body = JSON.stringify(message)
    const secret = tweak.signature === "wrong" ? `${this.secret}-wrong` : this.secret
    const headers: Record<string, string> = { "content-type": "application/json" }
    const signing = this.signing
    if (tweak.signature !== "none") {
      if (this.auth === "x-vapi-secret") headers["x-vapi-secret"] = secret
      if (this.auth === "bearer") {
        headers[signing.bearerHeader ?? "authorization"] = signing.bearerPrefix === false ? secret : `Bearer ${secret}`
      }
      if (this.auth === "hmac") {
        // The plan's defaults: timestamp included, `{timestamp}.{body}`, x-signature, x-timestamp, hex.
        const timestamp = String(Date.now() + (signing.timestampOffsetMs ?? 0))
        const includeTimestamp = signing.includeTimestamp ?? true
        const messageId = `msg_${randomUUID().replaceAll("-", "")}`
        const payload = (signing.payloadFormat ?? (includeTimestamp ? "{timestamp}.{body}" : "{body}")).replace(
          /\{(timestamp|body|method|url|svix-id)\}/g,
          (_, name: string) =>
            name === "timestamp" ? timestamp : name === "body" ? body : name === "method" ? "POST" : name === "url" ? url : messageId
        )
        if (includeTimestamp) headers[signing.timestampHeader ?? "x-timestamp"] = timestamp
        if (signing.messageIdHeader !== undefined || (signing.payloadFormat ?? "").includes("{svix-id}")) {
          headers[signing.messageIdHeader ?? "svix-id"] = messageId
        }
        const key = signing.secretIsBase64 === true ? Buffer.from(secret, "base64") : secret
        headers[signing.signatureHeader ?? "x-signature"] = (signing.signaturePrefix ?? "") +
          createHmac(signing.algorithm ?? "sha256", key).update(payload).digest(signing.signatureEncoding ?? "hex")
      }
    }
    let answered: number | null = null
    try {
      const response = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(15_000) })
      await response.body?.cancel()
      answered = response.status
    } catch {
      answered = null
    }
    this.deliveries.push({ url, body, headers, answered })
  }

  private list(url: URL, response: ServerResponse) {
    const query = url.searchParams
    const time = (name: string) => {
      const value = query.get(name)
      return value === null ? null : Date.parse(value)
    }
    const [gt, lt, ge, le] = [time("createdAtGt"), time("createdAtLt"), time("createdAtGe"), time("createdAtLe")]
    const limit = Math.min(1000, Math.max(0, Number(query.get("limit") ?? "100") || 100))
    const calls = this.calls
      .filter((c) => query.get("id") === null || c.id === query.get("id"))
      .filter((c) => query.get("assistantId") === null || c.assistantId === query.get("assistantId"))
      .filter((c) => query.get("phoneNumberId") === null || c.phoneNumberId === query.get("phoneNumberId"))
      .filter((c) =>
        (gt === null || c.createdAt > gt) && (lt === null || c.createdAt < lt) &&
        (ge === null || c.createdAt >= ge) && (le === null || c.createdAt <= le)
      )
      .sort((a, b) => (b.createdAt - a.createdAt || b.sequence - a.sequence) * (this.listOrder === "newest-first" ? 1 : -1))
      .slice(0, limit)
    sendJson(response, 200, calls.map((call) => this.resource(call)))
  }
}
