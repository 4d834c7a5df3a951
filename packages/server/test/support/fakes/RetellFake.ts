/**
 * A local fake of Retell AI's API for outbound phone calls, written from
 * Retell's API reference and webhook guide and typed against the official
 * `retell-sdk` 5.66 types (requests, answers and webhook bodies), so a field
 * the real API does not have fails the type check. For tests that must not
 * leave the machine.
 *
 * - `Authorization: Bearer <api key>` on every request; another key → 401
 *   `{ status: "error", message }` (Retell's error shape throughout).
 * - `POST /v2/create-phone-call`: the body holds only CallCreatePhoneCallParams'
 *   fields (another → 400); `from_number` and `to_number` required and E.164
 *   (400); `from_number` one of the workspace's numbers and `override_agent_id`
 *   one of its agents, or the number bound to an agent (422 "Cannot find
 *   requested asset under given api key."); `retell_llm_dynamic_variables`
 *   string values only and `metadata` an object (400). 201 with the call,
 *   `call_status: "registered"`.
 * - `GET /v2/get-call/{call_id}`: 200 with the call; an id the workspace does
 *   not have → 422, as Retell's API reference lists for get-call.
 * - `POST /v3/list-calls`: `filter_criteria` (from_number, to_number,
 *   call_status, start_timestamp, metadata, agent), `sort_order` by
 *   `start_timestamp` (calls that never started last), `limit` ≤ 1000 (default
 *   50), an opaque `pagination_key` with `has_more`, `skip` (not with
 *   `pagination_key`); items without transcript and recording, as v3 lists them.
 * - Then the webhooks to the agent's webhook URL (else the workspace's), each
 *   `{ event, call }` signed `x-retell-signature` with the official SDK's
 *   signer: `call_started` (only when the call connects), `call_ended` with
 *   `disconnection_reason`, transcript and recording, `call_analyzed` with
 *   `call_analysis`. The transcript quotes the `purposeMessage` variable.
 * - Magic destination numbers choose the ending (`RetellFake.magic`), or
 *   `endNextWith(reason)` any of the SDK's disconnection reasons; any other
 *   number talks and hangs up (`user_hangup`).
 * - The shared test controls (`failNext`, `dropNextAfterAccept`, `hangNext`,
 *   `down`/`up`, `tweakNextCallbacks` — its `beforeAnswer` too), `onAnswered`
 *   (told each time a create has been answered: the crash tests' kill hook),
 *   plus `webhooksBeforeAnswerNext` (the create answers only after the first
 *   webhook was delivered),
 *   `signNextWebhooksAt` (timestamps off by some ms: stale signatures) and
 *   `failNextWithConcurrencyLimit` (the call is made and ends
 *   `concurrency_limit_reached`, as Retell reports it), `seed` (calls made
 *   elsewhere, to fill list pages) and `maxPageSize` (short list pages).
 */
import { randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import type { AgentResponse } from "retell-sdk/resources/agent"
import type {
  CallCreatePhoneCallParams,
  CallListParams,
  CallListResponse,
  PhoneCallResponse
} from "retell-sdk/resources/call"
import { symmetric } from "retell-sdk/lib/webhook_auth"
import { type CallbackTweak, deliveryOrder, type Fault, FakeServer, ProviderFake, sendJson } from "./FakeServer.js"

export type RetellDisconnectionReason = NonNullable<PhoneCallResponse["disconnection_reason"]>
export type RetellWebhookEvent = NonNullable<AgentResponse["webhook_events"]>[number]
type FilterCriteria = NonNullable<CallListParams["filter_criteria"]>
type V3PhoneCall = CallListResponse.V3PhoneCallResponse

/** A webhook body as Retell posts it. */
export interface RetellWebhookBody {
  readonly event: RetellWebhookEvent
  readonly call: PhoneCallResponse
}

export interface RetellFakeOptions {
  /** The workspace's API key (also the webhook signing key). Default: a random one. */
  readonly apiKey?: string
  /** Agents the workspace has. Default: one random id (`fake.agents[0]`). */
  readonly agents?: ReadonlyArray<string>
  /** Numbers the workspace owns, each optionally bound to an outbound agent. Default: +14155550100, unbound. */
  readonly numbers?: ReadonlyArray<{ readonly number: string; readonly agentId?: string }>
  /** Delay between lifecycle steps. Default 20 ms. */
  readonly stepMs?: number
  /**
   * The most items one list-calls page holds, whatever `limit` asks (a cursor API may answer short
   * pages; `has_more` and `pagination_key` say whether more follow). Default: `limit`.
   */
  readonly maxPageSize?: number
}

export interface RetellFakeRequest {
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly authenticated: boolean
}

export interface RetellFakeCall {
  /** The call object as get-call renders it; the lifecycle updates it. */
  readonly resource: PhoneCallResponse
  readonly sequence: number
}

export interface RetellFakeDelivery {
  readonly url: string
  /** The raw body, as signed. */
  readonly body: string
  readonly json: RetellWebhookBody
  readonly headers: Readonly<Record<string, string>>
  /** The status the receiver answered, or null when the post failed. */
  readonly answered: number | null
}

/** The create-phone-call body's fields: exactly CallCreatePhoneCallParams' (a key the SDK lacks fails the type check). */
const CREATE_FIELDS: Readonly<Record<keyof CallCreatePhoneCallParams, true>> = {
  from_number: true,
  to_number: true,
  agent_override: true,
  custom_sip_headers: true,
  ignore_e164_validation: true,
  metadata: true,
  override_agent_id: true,
  override_agent_version: true,
  retell_llm_dynamic_variables: true
}
const LIST_FIELDS: Readonly<Record<keyof CallListParams, true>> = {
  filter_criteria: true,
  include_total: true,
  limit: true,
  pagination_key: true,
  skip: true,
  sort_order: true
}
const FILTER_FIELDS: Readonly<Record<keyof FilterCriteria, true>> = {
  agent: true,
  agent_tag: true,
  batch_call_id: true,
  call_id: true,
  call_status: true,
  call_successful: true,
  call_type: true,
  combined_cost: true,
  custom_analysis_data: true,
  custom_attributes: true,
  data_storage_setting: true,
  direction: true,
  disconnection_reason: true,
  duration_ms: true,
  dynamic_variables: true,
  e2e_latency_p50: true,
  end_timestamp: true,
  from_number: true,
  in_voicemail: true,
  metadata: true,
  start_timestamp: true,
  to_number: true,
  tool_calls: true,
  user_sentiment: true
}
/** The filters this fake applies; a request using another known filter is answered 501 so a test notices. */
const APPLIED_FILTERS: ReadonlySet<string> = new Set(
  ["agent", "call_status", "from_number", "metadata", "start_timestamp", "to_number"] satisfies ReadonlyArray<
    keyof FilterCriteria
  >
)
const LIST_MAX = 1000
const LIST_DEFAULT = 50

/** Reasons with which the call never connects: Retell sends no call_started, and there is no transcript. */
const NOT_CONNECTED: ReadonlySet<RetellDisconnectionReason> = new Set<RetellDisconnectionReason>([
  "dial_no_answer",
  "dial_busy",
  "dial_failed",
  "user_declined",
  "invalid_destination",
  "telephony_provider_permission_denied",
  "telephony_provider_unavailable",
  "sip_routing_error",
  "marked_as_spam",
  "concurrency_limit_reached",
  "no_concurrency_fallback",
  "no_valid_payment",
  "registered_call_timeout",
  "error_user_not_joined"
])

const E164 = /^\+[1-9]\d{1,14}$/
const NOT_FOUND = "Cannot find requested asset under given api key."

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const stringField = (record: Readonly<Record<string, unknown>>, key: string): string | undefined => {
  const value = record[key]
  return typeof value === "string" ? value : undefined
}

const sendError = (response: ServerResponse, status: number, message: string, headers: Readonly<Record<string, string>> = {}) =>
  sendJson(response, status, { status: "error", message }, headers)

/** A list-calls filter that this fake cannot read: answered 400 like any malformed request. */
class BadFilter extends Error {}

const stringMatches = (filter: unknown, actual: string | undefined): boolean => {
  if (!isRecord(filter) || filter["type"] !== "string" || typeof filter["value"] !== "string") throw new BadFilter("string filter")
  const value = filter["value"]
  const text = actual ?? ""
  switch (filter["op"]) {
    case "eq":
      return actual === value
    case "ne":
      return actual !== value
    case "sw":
      return text.startsWith(value)
    case "ew":
      return text.endsWith(value)
    case "co":
      return text.includes(value)
    default:
      throw new BadFilter("string filter op")
  }
}

const numberMatches = (filter: unknown, actual: number | undefined): boolean => {
  if (!isRecord(filter)) throw new BadFilter("number filter")
  if (filter["type"] === "range" && filter["op"] === "bt") {
    const range: unknown = filter["value"]
    const low = Array.isArray(range) ? range[0] : undefined
    const high = Array.isArray(range) ? range[1] : undefined
    if (!Array.isArray(range) || range.length !== 2 || typeof low !== "number" || typeof high !== "number") {
      throw new BadFilter("range filter")
    }
    return actual !== undefined && actual >= low && actual <= high
  }
  const value = filter["value"]
  if (filter["type"] !== "number" || typeof value !== "number") throw new BadFilter("number filter")
  if (actual === undefined) return filter["op"] === "ne"
  switch (filter["op"]) {
    case "eq":
      return actual === value
    case "ne":
      return actual !== value
    case "gt":
      return actual > value
    case "ge":
      return actual >= value
    case "lt":
      return actual < value
    case "le":
      return actual <= value
    default:
      throw new BadFilter("number filter op")
  }
}

const enumMatches = (filter: unknown, actual: string): boolean => {
  if (!isRecord(filter) || filter["type"] !== "enum" || filter["op"] !== "in" || !Array.isArray(filter["value"])) {
    throw new BadFilter("enum filter")
  }
  return filter["value"].includes(actual)
}

export class RetellFake extends ProviderFake {
  /** Destination numbers with a chosen ending; any other number ends with user_hangup. */
  static readonly magic = {
    agentHangsUp: "+15005550201",
    noAnswer: "+15005550202",
    busy: "+15005550203",
    dialFails: "+15005550204",
    voicemail: "+15005550205",
    declined: "+15005550206"
  } as const

  readonly apiKey: string
  readonly agents: ReadonlyArray<string>
  readonly numbers: ReadonlyArray<{ readonly number: string; readonly agentId?: string }>
  readonly requests: Array<RetellFakeRequest> = []
  readonly calls: Array<RetellFakeCall> = []
  readonly deliveries: Array<RetellFakeDelivery> = []
  /** Called once the 201 of each create has been written (the call exists and Parley may have its answer). */
  onAnswered: ((call: RetellFakeCall) => void) | undefined = undefined
  private sequence = 0
  private accountWebhook: string | undefined
  private readonly agentWebhooks = new Map<string, string>()
  private readonly endings: Array<RetellDisconnectionReason> = []
  private readonly beforeAnswer: Array<true> = []
  private readonly signatureOffsets: Array<number> = []

  private constructor(private readonly options: RetellFakeOptions) {
    super()
    this.apiKey = options.apiKey ?? `key_${randomUUID().replaceAll("-", "")}`
    this.agents = options.agents ?? [`agent_${randomUUID().replaceAll("-", "").slice(0, 24)}`]
    this.numbers = options.numbers ?? [{ number: "+14155550100" }]
  }

  static async start(options: RetellFakeOptions = {}): Promise<RetellFake> {
    const fake = new RetellFake(options)
    fake.server = await FakeServer.start((request, body, response) =>
      fake.handle(request.method ?? "GET", request.url ?? "/", request.headers.authorization, body, response)
    )
    return fake
  }

  /** Where webhooks go: an agent's webhook URL when `agentId` is given (it wins), else the workspace's. */
  setWebhook(url: string, agentId?: string): void {
    if (agentId === undefined) this.accountWebhook = url
    else this.agentWebhooks.set(agentId, url)
  }

  /** The next `times` calls end with `reason`, whatever number they call. */
  endNextWith(reason: RetellDisconnectionReason, times = 1): void {
    for (let i = 0; i < times; i++) this.endings.push(reason)
  }

  /** The next `times` creates answer only once the call's first webhook was delivered. */
  webhooksBeforeAnswerNext(times = 1): void {
    for (let i = 0; i < times; i++) this.beforeAnswer.push(true)
  }

  /** The webhooks of the next `lifecycles` calls are signed with a timestamp `offsetMs` from now (negative: in the past). */
  signNextWebhooksAt(offsetMs: number, lifecycles = 1): void {
    for (let i = 0; i < lifecycles; i++) this.signatureOffsets.push(offsetMs)
  }

  /** The next `times` creates are made and end `concurrency_limit_reached` without connecting. */
  failNextWithConcurrencyLimit(times = 1): void {
    this.faults.push({ _tag: "ConcurrencyLimit" }, times)
  }

  /**
   * Adds `count` ended calls between two numbers, made elsewhere (the dashboard, another system):
   * they have no lifecycle and send no webhooks. `startedAt` ms since the epoch (default now).
   */
  seed(count: number, from: string, to: string, startedAt = Date.now()): void {
    const agentId = this.agents[0] ?? "agent_seeded"
    for (let i = 0; i < count; i++) {
      this.calls.push({
        sequence: this.sequence++,
        resource: {
          call_id: `call_${randomUUID().replaceAll("-", "").slice(0, 28)}`,
          call_type: "phone_call",
          call_status: "ended",
          direction: "outbound",
          agent_id: agentId,
          agent_version: 1,
          from_number: from,
          to_number: to,
          metadata: { source: "seeded" },
          start_timestamp: startedAt,
          end_timestamp: startedAt + 30_000,
          duration_ms: 30_000,
          disconnection_reason: "user_hangup"
        }
      })
    }
  }

  call(id: string): RetellFakeCall | undefined {
    return this.calls.find((call) => call.resource.call_id === id)
  }

  /** Webhooks delivered about one call, parsed, in the order posted. */
  deliveriesFor(callId: string): ReadonlyArray<{ readonly delivery: RetellFakeDelivery; readonly body: RetellWebhookBody }> {
    return this.deliveries.flatMap((delivery) =>
      delivery.json.call.call_id === callId ? [{ delivery, body: delivery.json }] : []
    )
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
    let malformed = false
    try {
      parsed = body === "" ? undefined : JSON.parse(body)
    } catch {
      parsed = body
      malformed = true
    }
    this.requests.push({ method, path: url.pathname, body: parsed, authenticated })
    if (!authenticated) return sendError(response, 401, "API key is missing or invalid.")
    if (malformed) return sendError(response, 400, "Invalid request format, please check API reference.")
    const one = /^\/v2\/get-call\/([^/]+)$/.exec(url.pathname)
    if (one?.[1] !== undefined && method === "GET") {
      const call = this.call(decodeURIComponent(one[1]))
      return call === undefined ? sendError(response, 422, NOT_FOUND) : sendJson(response, 200, call.resource)
    }
    if (url.pathname === "/v3/list-calls" && method === "POST") return this.list(parsed, response)
    if (url.pathname !== "/v2/create-phone-call" || method !== "POST") {
      return sendError(response, 404, `Cannot ${method} ${url.pathname}`)
    }
    const fault = this.faults.take()
    if (fault !== undefined && fault._tag !== "DropAfterAccept" && fault._tag !== "ConcurrencyLimit") {
      return this.injure(fault, response)
    }
    if (fault?._tag === "ConcurrencyLimit") this.endings.unshift("concurrency_limit_reached")
    const created = this.create(parsed, response)
    if (created === undefined) return
    // The answer describes the call as created, even when webhooks went out before it.
    const answer = structuredClone(created.call.resource)
    if (created.firstWebhook !== undefined) await created.firstWebhook
    if (fault?._tag === "DropAfterAccept") {
      response.socket?.destroy()
      return
    }
    sendJson(response, 201, answer)
    this.onAnswered?.(created.call)
  }

  private injure(fault: Exclude<Fault, { _tag: "DropAfterAccept" | "ConcurrencyLimit" }>, response: ServerResponse) {
    switch (fault._tag) {
      case "Hang":
        return
      case "Status": {
        const headers = fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
        if (fault.status === 429) return sendError(response, 429, "Account rate limited, please throttle your requests.", headers)
        if (fault.status === 402) return sendError(response, 402, "Trial has ended, please add payment method.", headers)
        return sendError(response, fault.status, "An unexpected server error occurred.", headers)
      }
    }
  }

  private create(body: unknown, response: ServerResponse): { call: RetellFakeCall; firstWebhook?: Promise<void> } | undefined {
    if (!isRecord(body)) {
      sendError(response, 400, "Invalid request format, please check API reference.")
      return undefined
    }
    const unknown = Object.keys(body).filter((key) => !Object.hasOwn(CREATE_FIELDS, key))
    if (unknown.length > 0) {
      sendError(response, 400, `Invalid request format: unknown field ${unknown.join(", ")}.`)
      return undefined
    }
    const from = stringField(body, "from_number")
    const to = stringField(body, "to_number")
    const override = body["override_agent_id"]
    const variables = body["retell_llm_dynamic_variables"]
    const metadata = body["metadata"]
    const problems: Array<string> = []
    if (from === undefined || !E164.test(from)) problems.push("from_number must be a phone number in E.164 format")
    if (to === undefined || !E164.test(to)) problems.push("to_number must be a phone number in E.164 format")
    if (override !== undefined && (typeof override !== "string" || override === "")) problems.push("override_agent_id must be a non-empty string")
    if (variables !== undefined && (!isRecord(variables) || !Object.values(variables).every((v) => typeof v === "string"))) {
      problems.push("retell_llm_dynamic_variables must be an object of string values")
    }
    if (metadata !== undefined && !isRecord(metadata)) problems.push("metadata must be an object")
    if (problems.length > 0 || from === undefined || to === undefined) {
      sendError(response, 400, problems.join("; "))
      return undefined
    }
    const owned = this.numbers.find((n) => n.number === from)
    const agentId = typeof override === "string" ? override : owned?.agentId
    if (owned === undefined || (agentId !== undefined && !this.agents.includes(agentId))) {
      sendError(response, 422, NOT_FOUND)
      return undefined
    }
    if (agentId === undefined) {
      sendError(response, 400, "from_number has no outbound agent bound; give override_agent_id.")
      return undefined
    }
    const request: CallCreatePhoneCallParams = {
      from_number: from,
      to_number: to,
      override_agent_id: agentId,
      ...(isRecord(variables) ? { retell_llm_dynamic_variables: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, String(v)])) } : {}),
      ...(metadata === undefined ? {} : { metadata })
    }
    const resource: PhoneCallResponse = {
      call_id: `call_${randomUUID().replaceAll("-", "").slice(0, 28)}`,
      call_type: "phone_call",
      call_status: "registered",
      direction: "outbound",
      agent_id: agentId,
      agent_version: 1,
      agent_name: "Parley test agent",
      from_number: request.from_number,
      to_number: request.to_number,
      metadata: request.metadata ?? {},
      retell_llm_dynamic_variables: request.retell_llm_dynamic_variables ?? {},
      data_storage_setting: "everything",
      opt_in_signed_url: false
    }
    const call: RetellFakeCall = { resource, sequence: this.sequence++ }
    this.calls.push(call)
    const tweak = this.tweaks.take()
    const offset = this.signatureOffsets.shift() ?? 0
    const ending = this.endings.shift() ?? this.ending(to)
    if (this.beforeAnswer.shift() === true || tweak.beforeAnswer === true) {
      let first: () => void = () => undefined
      const firstWebhook = new Promise<void>((resolve) => (first = resolve))
      this.lifecycles.run(() => this.lifecycle(call, ending, tweak, offset, first).finally(first))
      return { call, firstWebhook }
    }
    this.lifecycles.run(() => this.lifecycle(call, ending, tweak, offset, () => undefined))
    return { call }
  }

  private ending(number: string): RetellDisconnectionReason {
    const magic = RetellFake.magic
    switch (number) {
      case magic.agentHangsUp:
        return "agent_hangup"
      case magic.noAnswer:
        return "dial_no_answer"
      case magic.busy:
        return "dial_busy"
      case magic.dialFails:
        return "dial_failed"
      case magic.voicemail:
        return "voicemail_reached"
      case magic.declined:
        return "user_declined"
      default:
        return "user_hangup"
    }
  }

  private purpose(call: PhoneCallResponse): string {
    return call.retell_llm_dynamic_variables?.["purposeMessage"] ?? "Hello, this is an automated call."
  }

  private async lifecycle(
    call: RetellFakeCall,
    ending: RetellDisconnectionReason,
    tweak: CallbackTweak,
    signatureOffset: number,
    firstPosted: () => void
  ) {
    const stepMs = this.options.stepMs ?? 20
    const resource = call.resource
    const connected = !NOT_CONNECTED.has(ending)
    const webhooks: Array<RetellWebhookBody> = []
    const post = async (body: RetellWebhookBody) => {
      webhooks.push(body)
      if (tweak.reverse === true) return
      for (const each of deliveryOrder([body], tweak)) await this.post(resource.agent_id, each, tweak, signatureOffset)
      firstPosted()
    }
    if (connected) {
      await this.lifecycles.pause(stepMs)
      if (this.lifecycles.isStopped) return
      resource.call_status = "ongoing"
      resource.start_timestamp = Date.now()
      await post({ event: "call_started", call: structuredClone(resource) })
    }
    await this.lifecycles.pause(stepMs)
    if (this.lifecycles.isStopped) return
    const now = Date.now()
    resource.disconnection_reason = ending
    resource.call_status = !connected ? "not_connected" : ending.startsWith("error_") ? "error" : "ended"
    resource.end_timestamp = now
    resource.duration_ms = resource.start_timestamp === undefined ? 0 : now - resource.start_timestamp
    if (connected) {
      resource.transcript = ending === "voicemail_reached" || ending === "ivr_reached"
        ? `Agent: ${this.purpose(resource)}\n`
        : `Agent: ${this.purpose(resource)}\nUser: Thanks, that works for me.\nAgent: Great, goodbye.\n`
      resource.recording_url = `https://fake-retell.invalid/${resource.call_id}/recording.wav`
    }
    await post({ event: "call_ended", call: structuredClone(resource) })
    await this.lifecycles.pause(stepMs)
    if (this.lifecycles.isStopped) return
    resource.call_analysis = {
      call_successful: connected && ending !== "voicemail_reached",
      call_summary: connected ? "The customer confirmed." : "The call did not connect.",
      in_voicemail: ending === "voicemail_reached",
      user_sentiment: connected ? "Positive" : "Unknown"
    }
    await post({ event: "call_analyzed", call: structuredClone(resource) })
    if (tweak.reverse === true) {
      for (const each of deliveryOrder(webhooks, tweak)) await this.post(resource.agent_id, each, tweak, signatureOffset)
      firstPosted()
    }
  }

  private async post(agentId: string, body: RetellWebhookBody, tweak: CallbackTweak, signatureOffset: number) {
    const url = this.agentWebhooks.get(agentId) ?? this.accountWebhook
    if (url === undefined) return
    const raw = JSON.stringify(body)
    const key = tweak.signature === "wrong" ? `${this.apiKey}-wrong` : this.apiKey
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (tweak.signature !== "none") headers["x-retell-signature"] = await symmetric.sign(raw, key, Date.now() + signatureOffset)
    let answered: number | null = null
    try {
      const response = await fetch(url, { method: "POST", headers, body: raw, signal: AbortSignal.timeout(10_000) })
      await response.body?.cancel()
      answered = response.status
    } catch {
      answered = null
    }
    this.deliveries.push({ url, body: raw, json: body, headers, answered })
  }

  /** An item as v3 list-calls renders it: without the transcripts and the recording. */
  private listed(resource: PhoneCallResponse): V3PhoneCall {
    const {
      transcript: _transcript,
      transcript_object: _object,
      transcript_with_tool_calls: _withTools,
      scrubbed_transcript_with_tool_calls: _scrubbed,
      recording_url: _recording,
      ...rest
    } = resource
    return rest
  }

  private list(body: unknown, response: ServerResponse) {
    const params = body === undefined ? {} : body
    if (!isRecord(params)) return sendError(response, 400, "Invalid request format, please check API reference.")
    const unknown = Object.keys(params).filter((key) => !Object.hasOwn(LIST_FIELDS, key))
    if (unknown.length > 0) return sendError(response, 400, `Invalid request format: unknown field ${unknown.join(", ")}.`)
    if (params["skip"] !== undefined && params["pagination_key"] !== undefined) {
      return sendError(response, 400, "skip and pagination_key cannot be used together.")
    }
    const limit = params["limit"] ?? LIST_DEFAULT
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) {
      return sendError(response, 400, `limit must be an integer from 1 to ${LIST_MAX}.`)
    }
    const skip = params["skip"] ?? 0
    if (typeof skip !== "number" || !Number.isInteger(skip) || skip < 0) return sendError(response, 400, "skip must be a non-negative integer.")
    const order = params["sort_order"] ?? "descending"
    if (order !== "ascending" && order !== "descending") return sendError(response, 400, "sort_order must be ascending or descending.")
    const criteria = params["filter_criteria"] ?? {}
    if (!isRecord(criteria)) return sendError(response, 400, "filter_criteria must be an object.")
    const unknownFilters = Object.keys(criteria).filter((key) => !Object.hasOwn(FILTER_FIELDS, key))
    if (unknownFilters.length > 0) return sendError(response, 400, `Invalid filter_criteria: unknown field ${unknownFilters.join(", ")}.`)
    const unapplied = Object.keys(criteria).filter((key) => !APPLIED_FILTERS.has(key))
    if (unapplied.length > 0) return sendError(response, 501, `The Retell fake does not apply ${unapplied.join(", ")}.`)
    let matching: Array<RetellFakeCall>
    try {
      matching = this.calls.filter(({ resource }) => this.matches(criteria, resource))
    } catch (error) {
      if (error instanceof BadFilter) return sendError(response, 400, `Invalid filter_criteria: ${error.message}.`)
      throw error
    }
    // Sorted by start_timestamp; calls that never started come last either way.
    const sign = order === "descending" ? -1 : 1
    matching.sort((a, b) => {
      const [x, y] = [a.resource.start_timestamp, b.resource.start_timestamp]
      if (x === undefined || y === undefined) return x === y ? b.sequence - a.sequence : x === undefined ? 1 : -1
      return sign * (x - y) || b.sequence - a.sequence
    })
    let start = skip
    const key = params["pagination_key"]
    if (key !== undefined) {
      const after = typeof key === "string" ? Buffer.from(key, "base64url").toString("utf8") : ""
      const index = matching.findIndex(({ resource }) => resource.call_id === after)
      if (index < 0) return sendError(response, 400, "Invalid pagination_key.")
      start = index + 1
    }
    const size = Math.min(limit, this.options.maxPageSize ?? limit)
    const page = matching.slice(start, start + size)
    const hasMore = start + size < matching.length
    const last = page.at(-1)
    const answer: CallListResponse = {
      has_more: hasMore,
      items: page.map(({ resource }) => this.listed(resource)),
      ...(hasMore && last !== undefined ? { pagination_key: Buffer.from(last.resource.call_id).toString("base64url") } : {})
    }
    sendJson(response, 200, answer)
  }

  private matches(criteria: Readonly<Record<string, unknown>>, call: PhoneCallResponse): boolean {
    for (const [name, filter] of Object.entries(criteria)) {
      switch (name) {
        case "from_number":
          if (!stringMatches(filter, call.from_number)) return false
          break
        case "to_number":
          if (!stringMatches(filter, call.to_number)) return false
          break
        case "call_status":
          if (!enumMatches(filter, call.call_status)) return false
          break
        case "start_timestamp":
          if (!numberMatches(filter, call.start_timestamp)) return false
          break
        case "agent": {
          if (!Array.isArray(filter)) throw new BadFilter("agent filter")
          const ids = filter.map((agent: unknown) => (isRecord(agent) ? stringField(agent, "agent_id") : undefined))
          if (!ids.includes(call.agent_id)) return false
          break
        }
        case "metadata": {
          if (!Array.isArray(filter)) throw new BadFilter("metadata filter")
          const metadata = isRecord(call.metadata) ? call.metadata : {}
          for (const each of filter) {
            const key = isRecord(each) ? stringField(each, "key") : undefined
            if (key === undefined) throw new BadFilter("metadata filter key")
            const value = metadata[key]
            if (!stringMatches(each, typeof value === "string" ? value : undefined)) return false
          }
          break
        }
      }
    }
    return true
  }
}
