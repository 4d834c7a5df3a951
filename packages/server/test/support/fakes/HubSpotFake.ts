/**
 * A local fake of HubSpot's OAuth server and CRM API, written from HubSpot's published OpenAPI files
 * (HubSpot/HubSpot-public-api-spec-collection: Auth/Oauth 2026-03, CRM objects v3 for contacts, deals, leads,
 * communications and calls, Properties v3, Owners v3) and typed against `@hubspot/api-client`'s models, for
 * tests that must not leave the machine. One server plays both hosts: the install page (`/oauth/authorize`,
 * on app.hubspot.com in production) and the API (api.hubapi.com).
 *
 * OAuth (only the current date-versioned API; the v1 endpoints HubSpot retires on 2027-02-16 answer 404 here
 * so that nothing in Parley can come to depend on them):
 * - `GET /oauth/authorize` (client_id, scope space-separated, redirect_uri, state, optional_scopes): the test's
 *   chosen user installs into the test's portal at once; 302 to redirect_uri with `code` and `state`. Scopes
 *   must be known; when the app declares its required scopes (`appScopes`) the request must name exactly
 *   those, as HubSpot's install page insists.
 * - `POST /oauth/2026-03/token`, form-encoded, every parameter in the body (a parameter in the query is
 *   refused): `authorization_code` (code, redirect_uri, client_id, client_secret) and `refresh_token` grants.
 *   Answers AccessTokenResponse: access_token (about 300 characters), refresh_token, expires_in 1800,
 *   token_type, token_use, hub_id, user_id, scopes. Errors are 400 in HubSpot's error shape, the category
 *   naming the refused part (BAD_CLIENT_ID, BAD_CLIENT_SECRET, BAD_REDIRECT_URI, BAD_AUTH_CODE,
 *   BAD_REFRESH_TOKEN, as the v1 API's statuses name them).
 * - `POST /oauth/2026-03/token/introspect` (client_id, client_secret, token, token_type_hint): the token's
 *   metadata (user e-mail, user_id, hub_id, hub_domain, scopes, expires_in), or `{active: false}`.
 * - `POST /oauth/2026-03/token/revoke` (client_id, client_secret, token): deletes the refresh token (204).
 *
 * CRM (header `Authorization: Bearer <token>`): an unknown token is 401 INVALID_AUTHENTICATION, an expired one
 * 401 EXPIRED_AUTHENTICATION, a grant without the endpoint's scope 403 MISSING_SCOPES. Every error body is
 * `{status: "error", message, correlationId, category, …}`; 429 adds `errorType: "RATE_LIMIT"` and
 * `policyName` (TEN_SECONDLY_ROLLING or DAILY), and every answer carries the `X-HubSpot-RateLimit-*` headers.
 * - objects (`contacts`/`0-1`, `deals`/`0-3`, `leads`/`0-136`, `communications`/`0-18`, `calls`/`0-48`):
 *   `GET /crm/v3/objects/{type}/{id}?properties=`, `POST /crm/v3/objects/{type}` (properties and inline
 *   associations, 201), `PATCH …/{id}`, `POST …/batch/update` (at most 100 inputs; unknown ids 207),
 *   `POST …/search` (filterGroups of EQ/IN/HAS_PROPERTY filters, at most 6 groups and a limit of 200).
 *   Properties are strings; an unknown property, a value outside an enumeration's options, a number that is
 *   not one, a timestamp that is neither epoch ms nor ISO 8601, an owner id that is no owner, or a missing
 *   required property is 400 VALIDATION_ERROR naming it. New objects become searchable after
 *   `indexDelayMs` (HubSpot's search index lags its writes).
 * - `GET/POST /crm/v3/properties/{type}` (labels; a custom property, 409 if it exists);
 * - `GET /crm/v3/owners` (email, limit ≤ 500, after), `GET /crm/v3/owners/{id}`.
 * Controls: the next calls fail with 429 (either policy) or a 5xx, a create is stored and its connection cut
 * before the answer, a ten-secondly budget, access tokens expired at will, another user behind the next
 * tokens, grants narrowed, counters of refreshes, token exchanges and CRM calls.
 */
import { randomBytes, randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import type {
  BatchInputSimplePublicObjectBatchInput,
  PublicObjectSearchRequest,
  SimplePublicObject,
  SimplePublicObjectInput,
  SimplePublicObjectInputForCreate
} from "@hubspot/api-client/lib/codegen/crm/objects/index.js"
import type { PublicOwner } from "@hubspot/api-client/lib/codegen/crm/owners/index.js"
import type { Property, PropertyCreate } from "@hubspot/api-client/lib/codegen/crm/properties/index.js"
import { FakeServer, sendJson } from "./FakeServer.js"

/** A model as it travels: dates as ISO strings and enums as their values (the client's models hold Date objects and TypeScript enums). */
type Wire<T> = {
  [K in keyof T]: Exclude<T[K], undefined> extends Date ? string
    : Exclude<T[K], undefined> extends string ? `${Exclude<T[K], undefined>}` | Extract<T[K], undefined>
    : T[K]
}

export type HubSpotObjectType = "contacts" | "deals" | "leads" | "communications" | "calls"

const OBJECT_TYPE_IDS: Readonly<Record<string, HubSpotObjectType>> = {
  contacts: "contacts",
  "0-1": "contacts",
  deals: "deals",
  "0-3": "deals",
  leads: "leads",
  "0-136": "leads",
  communications: "communications",
  "0-18": "communications",
  calls: "calls",
  "0-48": "calls"
}

/** The scopes each object's reads and writes need (the OpenAPI files' `security`: engagements go with contacts). */
const OBJECT_SCOPES: Readonly<Record<HubSpotObjectType, { readonly read: string; readonly write: string }>> = {
  contacts: { read: "crm.objects.contacts.read", write: "crm.objects.contacts.write" },
  deals: { read: "crm.objects.deals.read", write: "crm.objects.deals.write" },
  leads: { read: "crm.objects.leads.read", write: "crm.objects.leads.write" },
  communications: { read: "crm.objects.contacts.read", write: "crm.objects.contacts.write" },
  calls: { read: "crm.objects.contacts.read", write: "crm.objects.contacts.write" }
}

/** Creating a property on an object's schema (engagements' schemas are written with the contacts scope). */
const SCHEMA_WRITE_SCOPE: Readonly<Record<HubSpotObjectType, string>> = {
  contacts: "crm.schemas.contacts.write",
  deals: "crm.schemas.deals.write",
  leads: "crm.schemas.contacts.write",
  communications: "crm.schemas.contacts.write",
  calls: "crm.schemas.contacts.write"
}

export const KNOWN_SCOPES: ReadonlyArray<string> = [
  "oauth",
  "crm.objects.contacts.read",
  "crm.objects.contacts.write",
  "crm.objects.deals.read",
  "crm.objects.deals.write",
  "crm.objects.leads.read",
  "crm.objects.leads.write",
  "crm.objects.owners.read",
  "crm.schemas.contacts.read",
  "crm.schemas.contacts.write",
  "crm.schemas.deals.read",
  "crm.schemas.deals.write"
]

/**
 * HUBSPOT_DEFINED association types the fake knows, from an engagement to a record (HubSpot's table of
 * association type ids): communication→contact 81, communication→deal 85, call→contact 194, call→deal 206.
 */
const ASSOCIATION_TYPES: ReadonlyArray<{ readonly from: HubSpotObjectType; readonly to: HubSpotObjectType; readonly id: number }> = [
  { from: "communications", to: "contacts", id: 81 },
  { from: "communications", to: "deals", id: 85 },
  { from: "calls", to: "contacts", id: 194 },
  { from: "calls", to: "deals", id: 206 },
  // The fake's own ids for leads: HubSpot publishes no fixed table for them, so Parley reads them at run time
  // (`GET /crm/v4/associations/{from}/{to}/labels`), as HubSpot advises.
  { from: "communications", to: "leads", id: 9_001 },
  { from: "calls", to: "leads", id: 9_002 }
]

type PropertyType = "string" | "number" | "datetime" | "enumeration" | "bool"

export interface HubSpotFakeProperty {
  readonly name: string
  readonly label: string
  readonly type: PropertyType
  readonly fieldType: string
  readonly groupName: string
  readonly options?: ReadonlyArray<string>
  readonly hubspotDefined: boolean
  /** HubSpot sets it; a write of it is refused (READ_ONLY_VALUE). */
  readonly readOnly?: boolean
  readonly hasUniqueValue?: boolean
}

const p = (name: string, label: string, type: PropertyType = "string", options?: ReadonlyArray<string>): HubSpotFakeProperty => ({
  name,
  label,
  type,
  fieldType: type === "enumeration" ? "select" : type === "number" ? "number" : type === "datetime" ? "date" : type === "bool" ? "booleancheckbox" : "text",
  groupName: "information",
  hubspotDefined: true,
  ...(options === undefined ? {} : { options })
})

const readOnly = (property: HubSpotFakeProperty): HubSpotFakeProperty => ({ ...property, readOnly: true })

const COMMON: ReadonlyArray<HubSpotFakeProperty> = [
  readOnly(p("hs_object_id", "Record ID", "number")),
  readOnly(p("hs_createdate", "Create date", "datetime")),
  readOnly(p("hs_lastmodifieddate", "Last modified date", "datetime")),
  p("hubspot_owner_id", "Owner", "enumeration")
]

/** HubSpot's call statuses (`hs_call_status`'s options). */
export const CALL_STATUSES: ReadonlyArray<string> = [
  "BUSY", "CALLING_CRM_USER", "CANCELED", "COMPLETED", "CONNECTING", "FAILED", "IN_PROGRESS", "NO_ANSWER", "QUEUED", "RINGING"
]

const DEFAULT_PROPERTIES: Readonly<Record<HubSpotObjectType, ReadonlyArray<HubSpotFakeProperty>>> = {
  contacts: [
    ...COMMON,
    p("firstname", "First name"),
    p("lastname", "Last name"),
    p("email", "Email"),
    { ...p("phone", "Phone number"), fieldType: "phonenumber" },
    { ...p("mobilephone", "Mobile phone number"), fieldType: "phonenumber" },
    p("company", "Company name")
  ],
  deals: [...COMMON, p("dealname", "Deal name"), p("dealstage", "Deal stage"), p("amount", "Amount", "number"), p("pipeline", "Pipeline")],
  leads: [...COMMON, p("hs_lead_name", "Lead name"), p("hs_lead_type", "Lead type"), p("hs_lead_label", "Lead label")],
  communications: [
    ...COMMON,
    p("hs_communication_channel_type", "Channel type", "enumeration", ["SMS", "WHATS_APP", "LINKEDIN_MESSAGE"]),
    p("hs_communication_logged_from", "Logged from", "enumeration", ["CRM"]),
    p("hs_communication_body", "Communication body"),
    p("hs_timestamp", "Activity date", "datetime")
  ],
  calls: [
    ...COMMON,
    p("hs_call_title", "Call title"),
    p("hs_call_body", "Call notes"),
    p("hs_call_direction", "Call direction", "enumeration", ["INBOUND", "OUTBOUND"]),
    p("hs_call_status", "Call status", "enumeration", CALL_STATUSES),
    p("hs_call_from_number", "From number"),
    p("hs_call_to_number", "To number"),
    p("hs_call_recording_url", "Recording URL"),
    p("hs_call_duration", "Call duration", "number"),
    p("hs_call_disposition", "Call outcome"),
    p("hs_timestamp", "Activity date", "datetime")
  ]
}

/** What HubSpot refuses a create without (the objects' guides: engagements need their timestamp, a lead its name). */
const REQUIRED_ON_CREATE: Readonly<Record<HubSpotObjectType, ReadonlyArray<string>>> = {
  contacts: [],
  deals: ["dealname"],
  leads: ["hs_lead_name"],
  communications: ["hs_timestamp", "hs_communication_channel_type", "hs_communication_logged_from"],
  calls: ["hs_timestamp"]
}

export interface HubSpotStoredObject {
  readonly id: string
  readonly properties: Record<string, string>
  readonly createdAt: string
  updatedAt: string
  /** When a search first finds it (HubSpot's index lags its writes). */
  readonly searchableAt: number
  readonly associations: Array<{ readonly to: HubSpotObjectType; readonly id: string; readonly typeId: number }>
}

export interface HubSpotFakeUser {
  readonly userId: number
  readonly email: string
  readonly firstName: string
  readonly lastName: string
  /** The owner id this user has as a CRM owner. */
  readonly ownerId: string
}

interface Grant {
  userId: number
  readonly hubId: number
  scopes: ReadonlyArray<string>
}

interface AccessToken extends Grant {
  expiresAt: number
}

export interface HubSpotFakeRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly body: string
  readonly authorization: string | undefined
}

type CrmFault =
  | { readonly _tag: "RateLimit"; readonly policy: "TEN_SECONDLY_ROLLING" | "DAILY" }
  | { readonly _tag: "Status"; readonly status: 500 | 502 | 503 | 504 }
  | { readonly _tag: "DropAfterCreate" }

const correlationId = () => randomUUID()

export class HubSpotFake {
  readonly clientId: string
  readonly clientSecret: string
  readonly hubId = 24_681_357
  readonly hubDomain = "acme-test.hubspot.com"
  readonly appId = 3_141_592
  readonly requests: Array<HubSpotFakeRequest> = []
  readonly users = new Map<number, HubSpotFakeUser>()
  /** The user who installs the app at the next authorize. */
  consentingUser: number
  private refreshHold: { readonly markArrived: () => void; readonly released: Promise<void> } | undefined
  /** The app's required scopes as configured in HubSpot; an install URL must name exactly these (undefined: any known scopes). */
  appScopes: ReadonlyArray<string> | undefined = undefined
  /** Scopes the next installs leave out of the grant. */
  readonly consentDropsScopes: Array<string> = []
  /** How long after a write a search first finds the object. */
  indexDelayMs = 0
  /** Calls one app may make per rolling ten seconds (undefined: no budget). */
  tenSecondlyLimit: number | undefined = undefined
  latencyMs = 0
  /** Called once an object create has been answered (201 sent): the kill -9 tests kill Parley here. */
  onCreateAnswered: ((type: HubSpotObjectType, id: string) => void) | undefined = undefined
  /** Refresh grants answered (successful or not), and authorization codes exchanged. */
  refreshes = 0
  codeExchanges = 0
  readonly objects = new Map<HubSpotObjectType, Map<string, HubSpotStoredObject>>()
  readonly properties = new Map<HubSpotObjectType, Array<HubSpotFakeProperty>>()
  private readonly codes = new Map<string, Grant & { readonly redirectUri: string }>()
  private readonly refreshTokens = new Map<string, Grant & { revoked: boolean }>()
  private readonly accessTokens = new Map<string, AccessToken>()
  private readonly faults: Array<CrmFault> = []
  private readonly recentCalls: Array<number> = []
  private nextId = 31_000_000_001n
  private tokenLifetimeMs = 30 * 60_000
  private server: FakeServer | undefined

  private constructor(options: { readonly clientId?: string; readonly clientSecret?: string }) {
    this.clientId = options.clientId ?? randomUUID()
    this.clientSecret = options.clientSecret ?? randomUUID()
    const admin: HubSpotFakeUser = { userId: 52_001_001, email: "ada@acme.test", firstName: "Ada", lastName: "Admin", ownerId: "71001001" }
    this.users.set(admin.userId, admin)
    this.consentingUser = admin.userId
    for (const [type, defaults] of Object.entries(DEFAULT_PROPERTIES)) {
      const objectType = OBJECT_TYPE_IDS[type]
      if (objectType === undefined) continue
      this.properties.set(objectType, [...defaults])
      this.objects.set(objectType, new Map())
    }
  }

  static async start(options: { readonly clientId?: string; readonly clientSecret?: string } = {}): Promise<HubSpotFake> {
    const fake = new HubSpotFake(options)
    fake.server = await FakeServer.start((request, body, response) => fake.handle(request, body, response))
    return fake
  }

  get url(): string {
    return this.listening().url
  }

  addUser(user: HubSpotFakeUser): void {
    this.users.set(user.userId, user)
  }

  /** A record with fresh numeric-string id; returns the id. */
  addObject(type: HubSpotObjectType, properties: Readonly<Record<string, string>>): string {
    return this.store(type, { ...properties }, []).id
  }

  object(type: HubSpotObjectType, id: string): HubSpotStoredObject | undefined {
    return this.objects.get(type)?.get(id)
  }

  /** Every object of a type, oldest first. */
  all(type: HubSpotObjectType): ReadonlyArray<HubSpotStoredObject> {
    return [...(this.objects.get(type)?.values() ?? [])]
  }

  /** Every access token expires now (the next CRM call is 401 EXPIRED_AUTHENTICATION until refreshed). */
  expireAccessTokens(): void {
    for (const token of this.accessTokens.values()) token.expiresAt = 0
  }

  /** Access tokens issued from now on live this long (HubSpot: 30 minutes). */
  setTokenLifetime(ms: number): void {
    this.tokenLifetimeMs = ms
  }

  /** Deletes every refresh token (as uninstalling the app does); access tokens stop working too. */
  revokeAll(): void {
    for (const token of this.refreshTokens.values()) token.revoked = true
    this.accessTokens.clear()
  }

  /** The grants now belong to another user (the app was reinstalled by them). */
  switchTokensTo(userId: number): void {
    for (const token of [...this.refreshTokens.values(), ...this.accessTokens.values()]) token.userId = userId
  }

  /** Live grants and their tokens lose a scope (an install made before Parley asked for it). */
  narrowGrants(scope: string): void {
    for (const token of [...this.refreshTokens.values(), ...this.accessTokens.values()]) {
      token.scopes = token.scopes.filter((s) => s !== scope)
    }
  }

  failNext(times: number, kind: "TEN_SECONDLY_ROLLING" | "DAILY" | 500 | 502 | 503 | 504): void {
    for (let i = 0; i < times; i++) {
      this.faults.push(typeof kind === "number" ? { _tag: "Status", status: kind } : { _tag: "RateLimit", policy: kind })
    }
  }

  /** The next object create is stored, then its connection is cut before the answer. */
  dropNextAfterCreate(): void {
    this.faults.push({ _tag: "DropAfterCreate" })
  }

  clearFaults(): void {
    this.faults.length = 0
  }

  down(): Promise<void> {
    return this.listening().down()
  }

  up(): Promise<void> {
    return this.listening().up()
  }

  stop(): Promise<void> {
    return this.server?.stop() ?? Promise.resolve()
  }

  /** Refresh tokens issued and not deleted. */
  get liveGrants(): number {
    return [...this.refreshTokens.values()].filter((t) => !t.revoked).length
  }

  /** CRM calls (not OAuth ones) received so far. */
  get crmCalls(): number {
    return this.requests.filter((r) => r.path.startsWith("/crm/")).length
  }

  private listening(): FakeServer {
    if (this.server === undefined) throw new Error("HubSpotFake is not started")
    return this.server
  }

  private newId(): string {
    this.nextId += 1n
    return this.nextId.toString()
  }

  private store(
    type: HubSpotObjectType,
    properties: Record<string, string>,
    associations: HubSpotStoredObject["associations"]
  ): HubSpotStoredObject {
    const id = this.newId()
    const now = new Date().toISOString()
    const stored: HubSpotStoredObject = {
      id,
      properties: { ...properties, hs_object_id: id, hs_createdate: now, hs_lastmodifieddate: now },
      createdAt: now,
      updatedAt: now,
      searchableAt: Date.now() + this.indexDelayMs,
      associations
    }
    this.objects.get(type)?.set(id, stored)
    return stored
  }

  /**
   * The next refresh-token request waits until released (`arrived` once it is here), then is answered as it
   * would have been when it arrived: a reconnect can happen while a refresh is on its way.
   */
  holdNextRefresh(): { readonly arrived: Promise<void>; readonly release: () => void } {
    let markArrived = () => {}
    let release = () => {}
    const arrived = new Promise<void>((resolve) => (markArrived = resolve))
    const released = new Promise<void>((resolve) => (release = resolve))
    this.refreshHold = { markArrived, released }
    return { arrived, release }
  }

  private async handle(request: IncomingMessage, body: string, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://fake")
    this.requests.push({ method: request.method ?? "GET", path: url.pathname, query: url.searchParams, body, authorization: request.headers.authorization })
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs))
    if (url.pathname === "/oauth/authorize") return this.authorize(url, response)
    if (url.pathname.startsWith("/oauth/2026-03/")) return this.oauth(request, url, body, response)
    if (url.pathname.startsWith("/crm/v3/") || url.pathname.startsWith("/crm/v4/associations/")) return this.crm(request, url, body, response)
    error(response, 404, "OBJECT_NOT_FOUND", `Unable to route ${request.method ?? "GET"} ${url.pathname}`)
  }

  // --- OAuth -----------------------------------------------------------------------------------------

  private authorize(url: URL, response: ServerResponse): void {
    const q = url.searchParams
    const redirect = q.get("redirect_uri")
    if (q.get("client_id") !== this.clientId || redirect === null) {
      return page(response, 400, "This app's client_id is not valid or its redirect URL is missing.")
    }
    const asked = (q.get("scope") ?? "").split(/\s+/).filter((s) => s !== "")
    const optional = (q.get("optional_scopes") ?? "").split(/\s+/).filter((s) => s !== "")
    const unknown = [...asked, ...optional].filter((s) => !KNOWN_SCOPES.includes(s))
    if (unknown.length > 0) return page(response, 400, `Unknown scopes: ${unknown.join(", ")}`)
    if (this.appScopes !== undefined && (asked.length !== this.appScopes.length || asked.some((s) => !this.appScopes?.includes(s)))) {
      return page(response, 400, "Scope mismatch: the install URL's scopes differ from the app's required scopes.")
    }
    const code = randomUUID()
    const scopes = [...asked, ...optional].filter((s) => !this.consentDropsScopes.includes(s))
    this.codes.set(code, { userId: this.consentingUser, hubId: this.hubId, scopes, redirectUri: redirect })
    const target = new URL(redirect)
    target.searchParams.set("code", code)
    const state = q.get("state")
    if (state !== null) target.searchParams.set("state", state)
    response.writeHead(302, { location: target.toString() })
    response.end()
  }

  private async oauth(request: IncomingMessage, url: URL, body: string, response: ServerResponse): Promise<void> {
    if (request.method !== "POST") return error(response, 405, "VALIDATION_ERROR", "Method not allowed")
    if ([...url.searchParams.keys()].length > 0) {
      return error(response, 400, "VALIDATION_ERROR", "OAuth parameters belong in the form-encoded body, not the query")
    }
    if (!(request.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")) {
      return error(response, 415, "VALIDATION_ERROR", "Content type must be application/x-www-form-urlencoded")
    }
    const form = new URLSearchParams(body)
    if (form.get("client_id") !== this.clientId) return error(response, 400, "BAD_CLIENT_ID", "missing or unknown client id")
    if (form.get("client_secret") !== this.clientSecret) return error(response, 400, "BAD_CLIENT_SECRET", "missing or invalid client secret")
    const path = url.pathname.slice("/oauth/2026-03".length)
    if (path === "/token") {
      const grant = form.get("grant_type")
      if (grant === "authorization_code") {
        this.codeExchanges++
        const code = form.get("code") ?? ""
        const granted = this.codes.get(code)
        if (granted === undefined) return error(response, 400, "BAD_AUTH_CODE", "missing or invalid auth code")
        if (form.get("redirect_uri") !== granted.redirectUri) return error(response, 400, "BAD_REDIRECT_URI", "redirect_uri does not match")
        this.codes.delete(code)
        const refresh = `na1-${randomUUID()}`
        this.refreshTokens.set(refresh, { userId: granted.userId, hubId: granted.hubId, scopes: granted.scopes, revoked: false })
        return sendJson(response, 200, this.issue(granted, refresh))
      }
      if (grant === "refresh_token") {
        const refresh = form.get("refresh_token") ?? ""
        const held = this.refreshHold
        if (held !== undefined) {
          this.refreshHold = undefined
          held.markArrived()
          await held.released
        }
        this.refreshes++
        const found = this.refreshTokens.get(refresh)
        if (found === undefined || found.revoked) return error(response, 400, "BAD_REFRESH_TOKEN", "missing or invalid refresh token")
        return sendJson(response, 200, this.issue(found, refresh))
      }
      return error(response, 400, "VALIDATION_ERROR", `unsupported grant_type ${grant ?? ""}`)
    }
    if (path === "/token/introspect") {
      const token = form.get("token") ?? ""
      const access = this.accessTokens.get(token)
      if (access !== undefined && access.expiresAt > Date.now()) {
        const user = this.users.get(access.userId)
        return sendJson(response, 200, {
          active: true,
          app_id: this.appId,
          client_id: this.clientId,
          expires_in: Math.max(0, Math.floor((access.expiresAt - Date.now()) / 1000)),
          hub_domain: this.hubDomain,
          hub_id: access.hubId,
          is_private_distribution: false,
          scopes: access.scopes,
          token,
          token_type: "bearer",
          token_use: "access_token",
          ...(user === undefined ? {} : { user: user.email }),
          user_id: access.userId
        })
      }
      const refresh = this.refreshTokens.get(token)
      if (refresh !== undefined && !refresh.revoked) {
        const user = this.users.get(refresh.userId)
        return sendJson(response, 200, {
          active: true,
          app_id: this.appId,
          client_id: this.clientId,
          hub_domain: this.hubDomain,
          hub_id: refresh.hubId,
          scopes: refresh.scopes,
          token,
          token_type: "bearer",
          token_use: "refresh_token",
          ...(user === undefined ? {} : { user: user.email }),
          user_id: refresh.userId
        })
      }
      return sendJson(response, 200, { active: false })
    }
    if (path === "/token/revoke") {
      const found = this.refreshTokens.get(form.get("token") ?? "")
      if (found === undefined) return error(response, 400, "BAD_REFRESH_TOKEN", "missing or invalid refresh token")
      found.revoked = true
      response.writeHead(204)
      return void response.end()
    }
    error(response, 404, "OBJECT_NOT_FOUND", `Unable to route POST ${url.pathname}`)
  }

  private issue(grant: Grant, refreshToken: string) {
    // HubSpot's access tokens vary in length (up to about 300 characters): a column sized for today's breaks.
    const token = `C${randomBytes(216).toString("base64url")}`
    this.accessTokens.set(token, { userId: grant.userId, hubId: grant.hubId, scopes: grant.scopes, expiresAt: Date.now() + this.tokenLifetimeMs })
    return {
      access_token: token,
      refresh_token: refreshToken,
      expires_in: Math.round(this.tokenLifetimeMs / 1000),
      token_type: "bearer",
      token_use: "access_token",
      hub_id: grant.hubId,
      user_id: grant.userId,
      scopes: grant.scopes
    }
  }

  // --- CRM -------------------------------------------------------------------------------------------

  private rateHeaders(): Record<string, string> {
    const limit = this.tenSecondlyLimit ?? 190
    return {
      "x-hubspot-ratelimit-interval-milliseconds": "10000",
      "x-hubspot-ratelimit-max": String(limit),
      "x-hubspot-ratelimit-remaining": String(Math.max(0, limit - this.recentCalls.length)),
      "x-hubspot-ratelimit-daily": "650000",
      "x-hubspot-ratelimit-daily-remaining": "649000"
    }
  }

  private crm(request: IncomingMessage, url: URL, body: string, response: ServerResponse): void {
    const auth = /^Bearer\s+(.+)$/.exec(request.headers.authorization ?? "")
    const token = auth?.[1] === undefined ? undefined : this.accessTokens.get(auth[1])
    if (token === undefined) {
      return error(response, 401, "INVALID_AUTHENTICATION", "Authentication credentials not found. This API supports OAuth 2.0 authentication.")
    }
    if (token.expiresAt <= Date.now()) {
      return error(response, 401, "EXPIRED_AUTHENTICATION", "The OAuth token used to make this call expired.")
    }
    const now = Date.now()
    while (this.recentCalls.length > 0 && (this.recentCalls[0] ?? 0) <= now - 10_000) this.recentCalls.shift()
    const headers = this.rateHeaders()
    if (this.tenSecondlyLimit !== undefined && this.recentCalls.length >= this.tenSecondlyLimit) {
      return rateLimited(response, "TEN_SECONDLY_ROLLING", headers)
    }
    this.recentCalls.push(now)
    const fault = this.faults[0]?._tag === "DropAfterCreate" ? undefined : this.faults.shift()
    if (fault?._tag === "RateLimit") return rateLimited(response, fault.policy, headers)
    if (fault?._tag === "Status") return error(response, fault.status, "INTERNAL_ERROR", "internal error", {}, headers)
    const need = (scope: string): boolean => {
      if (token.scopes.includes(scope)) return true
      error(response, 403, "MISSING_SCOPES", "This app hasn't been granted all required scopes to make this call.", {
        errors: [{ message: `One or more of the following scopes are required.`, context: { requiredGranularScopes: [scope] } }]
      }, headers)
      return false
    }
    const method = request.method ?? "GET"
    // Associations v4: the association types between two objects (`GET …/{from}/{to}/labels`).
    const labelsMatch = /^\/crm\/v4\/associations\/([^/]+)\/([^/]+)\/labels$/.exec(url.pathname)
    if (labelsMatch !== null) {
      const from = OBJECT_TYPE_IDS[labelsMatch[1] ?? ""]
      const to = OBJECT_TYPE_IDS[labelsMatch[2] ?? ""]
      if (method !== "GET" || from === undefined || to === undefined) return error(response, 404, "OBJECT_NOT_FOUND", `Unable to route ${method} ${url.pathname}`, {}, headers)
      if (!need(OBJECT_SCOPES[from].read)) return
      return sendJson(response, 200, { results: ASSOCIATION_TYPES.filter((a) => a.from === from && a.to === to).map((a) => ({ category: "HUBSPOT_DEFINED", typeId: a.id, label: null })) }, headers)
    }
    const path = url.pathname.slice("/crm/v3".length)
    const ok = (status: number, payload: unknown) => sendJson(response, status, payload, headers)
    const invalid = (message: string, extra: Record<string, unknown> = {}) =>
      error(response, 400, "VALIDATION_ERROR", message, extra, headers)
    const parsed = parseJson(body)

    if (path === "/owners" || path === "/owners/") {
      if (method !== "GET" || !need("crm.objects.owners.read")) return method !== "GET" ? invalid("Method not allowed") : undefined
      const limit = Number(url.searchParams.get("limit") ?? "100")
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) return invalid("limit must be between 1 and 500")
      const email = url.searchParams.get("email")
      const owners = [...this.users.values()].filter((u) => email === null || u.email === email).map((u) => this.owner(u))
      return ok(200, { results: owners.slice(0, limit) })
    }
    const ownerMatch = /^\/owners\/([^/]+)$/.exec(path)
    if (ownerMatch?.[1] !== undefined) {
      if (!need("crm.objects.owners.read")) return
      const byUserId = url.searchParams.get("idProperty") === "userId"
      const user = [...this.users.values()].find((u) => (byUserId ? String(u.userId) : u.ownerId) === ownerMatch[1])
      if (user === undefined) return error(response, 404, "OBJECT_NOT_FOUND", "resource not found", {}, headers)
      return ok(200, this.owner(user))
    }

    const propertiesMatch = /^\/properties\/([^/]+)(?:\/([^/]+))?$/.exec(path)
    if (propertiesMatch?.[1] !== undefined) {
      const type = OBJECT_TYPE_IDS[propertiesMatch[1]]
      if (type === undefined) return error(response, 400, "VALIDATION_ERROR", `Unable to infer object type from: ${propertiesMatch[1]}`, {}, headers)
      const defined = this.properties.get(type) ?? []
      if (method === "GET") {
        if (!need(OBJECT_SCOPES[type].read)) return
        if (propertiesMatch[2] !== undefined) {
          const one = defined.find((d) => d.name === propertiesMatch[2])
          return one === undefined ? error(response, 404, "OBJECT_NOT_FOUND", "property not found", {}, headers) : ok(200, wireProperty(one))
        }
        return ok(200, { results: defined.map(wireProperty) })
      }
      if (method === "POST" && propertiesMatch[2] === undefined) {
        if (!need(SCHEMA_WRITE_SCOPE[type])) return
        const input = parsed as Partial<PropertyCreate> | undefined
        if (input?.name === undefined || input.label === undefined || input.type === undefined || input.fieldType === undefined || input.groupName === undefined) {
          return invalid("name, label, type, fieldType and groupName are required")
        }
        if (!/^[a-z][a-z0-9_]*$/.test(input.name)) return invalid(`Property name ${input.name} is not valid`)
        if (defined.some((d) => d.name === input.name)) {
          return error(response, 409, "OBJECT_ALREADY_EXISTS", `Property named '${input.name}' already exists.`, {}, headers)
        }
        const type_ = input.type === "enumeration" || input.type === "number" || input.type === "datetime" || input.type === "bool" ? input.type : "string"
        const created: HubSpotFakeProperty = {
          name: input.name,
          label: input.label,
          type: type_,
          fieldType: input.fieldType,
          groupName: input.groupName,
          hubspotDefined: false,
          ...(input.options === undefined ? {} : { options: input.options.map((o) => o.value) }),
          ...(input.hasUniqueValue === true ? { hasUniqueValue: true } : {})
        }
        defined.push(created)
        return ok(201, wireProperty(created))
      }
      return invalid("Method not allowed")
    }

    const objectMatch = /^\/objects\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?$/.exec(path)
    const type = objectMatch?.[1] === undefined ? undefined : OBJECT_TYPE_IDS[objectMatch[1]]
    if (objectMatch === null || type === undefined) return error(response, 404, "OBJECT_NOT_FOUND", `Unable to route ${method} ${url.pathname}`, {}, headers)
    const store = this.objects.get(type) ?? new Map<string, HubSpotStoredObject>()
    const [, , second, third] = objectMatch
    const defined = this.properties.get(type) ?? []

    if (method === "POST" && second === undefined) {
      if (!need(OBJECT_SCOPES[type].write)) return
      const input = parsed as Partial<SimplePublicObjectInputForCreate> | undefined
      if (input?.properties === undefined || typeof input.properties !== "object") return invalid("properties is required")
      const problems = this.validate(type, input.properties, true)
      if (problems.length > 0) return invalid(validationMessage(problems), { errors: problems.map(problemDetail) })
      const associations: HubSpotStoredObject["associations"] = []
      for (const association of input.associations ?? []) {
        for (const spec of association.types ?? []) {
          const known = ASSOCIATION_TYPES.find((a) => a.from === type && a.id === spec.associationTypeId)
          if (spec.associationCategory !== "HUBSPOT_DEFINED" || known === undefined) {
            return invalid(`${spec.associationCategory} ${spec.associationTypeId} is not a valid association type between ${type} and the target`)
          }
          if (this.objects.get(known.to)?.get(association.to.id) === undefined) {
            return invalid(`No ${known.to} with ID ${association.to.id} exists`, { subCategory: "crm.associations.INVALID_OBJECT_IDS" })
          }
          associations.push({ to: known.to, id: association.to.id, typeId: known.id })
        }
      }
      const created = this.store(type, { ...input.properties }, associations)
      if (this.faults[0]?._tag === "DropAfterCreate") {
        this.faults.shift()
        return void response.socket?.destroy()
      }
      ok(201, this.wire(created, Object.keys(input.properties)))
      this.onCreateAnswered?.(type, created.id)
      return
    }

    if (method === "POST" && second === "batch" && third === "update") {
      if (!need(OBJECT_SCOPES[type].write)) return
      const input = parsed as Partial<BatchInputSimplePublicObjectBatchInput> | undefined
      if (!Array.isArray(input?.inputs)) return invalid("inputs is required")
      if (input.inputs.length > 100) return invalid(`Batch input too large: ${input.inputs.length} inputs, at most 100 are allowed`)
      // The OpenAPI file's SimplePublicObjectBatchInput: `id` and `properties` are required.
      if (input.inputs.some((one) => typeof one?.id !== "string" || typeof one.properties !== "object" || one.properties === null)) {
        return invalid("Each input needs an id (string) and properties (object)")
      }
      const ids = input.inputs.map((one) => one.id)
      const duplicates = [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))]
      if (duplicates.length > 0) return invalid(`Duplicate IDs found in batch input: [${duplicates.join(", ")}]. IDs must be unique`)
      for (const one of input.inputs) {
        const problems = this.validate(type, one.properties, false)
        if (problems.length > 0) return invalid(validationMessage(problems), { errors: problems.map(problemDetail) })
      }
      const missing = input.inputs.filter((one) => !store.has(one.id)).map((one) => one.id)
      const results = input.inputs.flatMap((one) => {
        const found = store.get(one.id)
        if (found === undefined) return []
        this.update(found, one.properties)
        return [this.wire(found, Object.keys(one.properties))]
      })
      const times = { startedAt: new Date().toISOString(), completedAt: new Date().toISOString() }
      if (missing.length === 0) return ok(200, { status: "COMPLETE", results, ...times })
      return ok(207, {
        status: "COMPLETE",
        results,
        numErrors: 1,
        errors: [{ status: "error", category: "OBJECT_NOT_FOUND", message: "Could not get some objects, they may be deleted or not exist.", context: { ids: missing }, links: {}, errors: [] }],
        ...times
      })
    }

    if (method === "POST" && second === "search" && third === undefined) {
      if (!need(OBJECT_SCOPES[type].read)) return
      const input = parsed as Partial<Wire<PublicObjectSearchRequest>> | undefined
      const groups = input?.filterGroups ?? []
      if (groups.length > 6) return invalid("Too many filter groups: at most 6 are allowed")
      if (groups.reduce((n, g) => n + g.filters.length, 0) > 18) return invalid("Too many filters: at most 18 are allowed")
      const limit = input?.limit ?? 10
      if (limit > 200) return invalid("limit must be at most 200")
      for (const name of [...groups.flatMap((g) => g.filters.map((f) => f.propertyName)), ...(input?.properties ?? [])]) {
        if (!defined.some((d) => d.name === name)) return invalid(`Property "${name}" does not exist on ${type}`)
      }
      const matches = [...store.values()].filter((o) =>
        o.searchableAt <= Date.now() &&
        (groups.length === 0 || groups.some((g) => g.filters.every((f) => {
          const value = o.properties[f.propertyName]
          if (f.operator === "EQ") return value !== undefined && value === f.value
          if (f.operator === "IN") return value !== undefined && (f.values ?? []).includes(value)
          if (f.operator === "HAS_PROPERTY") return value !== undefined && value !== ""
          return false
        }))))
      const after = Number(input?.after ?? "0")
      const page = matches.slice(after, after + limit)
      return ok(200, {
        total: matches.length,
        results: page.map((o) => this.wire(o, input?.properties ?? [])),
        ...(after + limit < matches.length ? { paging: { next: { after: String(after + limit) } } } : {})
      })
    }

    if (second !== undefined && third === undefined && second !== "batch" && second !== "search") {
      const found = store.get(second)
      if (method === "GET") {
        if (!need(OBJECT_SCOPES[type].read)) return
        if (found === undefined) return error(response, 404, "OBJECT_NOT_FOUND", "resource not found", {}, headers)
        const asked = (url.searchParams.get("properties") ?? "").split(",").filter((s) => s !== "")
        return ok(200, this.wire(found, asked))
      }
      if (method === "PATCH") {
        if (!need(OBJECT_SCOPES[type].write)) return
        if (found === undefined) return error(response, 404, "OBJECT_NOT_FOUND", "resource not found", {}, headers)
        const input = parsed as Partial<SimplePublicObjectInput> | undefined
        if (input?.properties === undefined) return invalid("properties is required")
        const problems = this.validate(type, input.properties, false)
        if (problems.length > 0) return invalid(validationMessage(problems), { errors: problems.map(problemDetail) })
        this.update(found, input.properties)
        return ok(200, this.wire(found, Object.keys(input.properties)))
      }
    }
    error(response, 404, "OBJECT_NOT_FOUND", `Unable to route ${method} ${url.pathname}`, {}, headers)
  }

  private owner(user: HubSpotFakeUser): Wire<PublicOwner> {
    return {
      id: user.ownerId,
      email: user.email,
      firstName: user.firstName,
      lastName: user.lastName,
      userId: user.userId,
      userIdIncludingInactive: user.userId,
      type: "PERSON",
      archived: false,
      createdAt: "2025-01-01T00:00:00.000Z",
      updatedAt: "2025-01-01T00:00:00.000Z"
    }
  }

  private update(found: HubSpotStoredObject, properties: Readonly<Record<string, string>>): void {
    const now = new Date().toISOString()
    Object.assign(found.properties, properties, { hs_lastmodifieddate: now })
    found.updatedAt = now
  }

  /** HubSpot answers the asked properties plus its defaults; a property without a value answers null. */
  private wire(found: HubSpotStoredObject, asked: ReadonlyArray<string>): Wire<SimplePublicObject> {
    const names = new Set(["hs_object_id", "hs_createdate", "hs_lastmodifieddate", ...asked])
    const properties: Record<string, string> = {}
    for (const name of names) {
      const value = found.properties[name]
      if (value !== undefined) properties[name] = value
    }
    return { id: found.id, properties, createdAt: found.createdAt, updatedAt: found.updatedAt, archived: false }
  }

  private validate(type: HubSpotObjectType, properties: unknown, creating: boolean): Array<Problem> {
    if (typeof properties !== "object" || properties === null) return [{ name: "properties", error: "INVALID_INPUT", message: "properties must be an object" }]
    const defined = this.properties.get(type) ?? []
    const problems: Array<Problem> = []
    for (const [name, value] of Object.entries(properties)) {
      const property = defined.find((d) => d.name === name)
      if (property === undefined) {
        problems.push({ name, error: "PROPERTY_DOESNT_EXIST", message: `Property "${name}" does not exist` })
        continue
      }
      if (typeof value !== "string") {
        problems.push({ name, error: "INVALID_INPUT", message: `Property "${name}" must be a string` })
        continue
      }
      if (property.readOnly === true) problems.push({ name, error: "READ_ONLY_VALUE", message: `${name} is a read only property; its value cannot be set.` })
      else if (name === "hubspot_owner_id") {
        if (value !== "" && ![...this.users.values()].some((u) => u.ownerId === value)) {
          problems.push({ name, error: "INVALID_OPTION", message: `${value} was not one of the allowed options` })
        }
      } else if (property.type === "enumeration" && property.options !== undefined && !property.options.includes(value)) {
        problems.push({ name, error: "INVALID_OPTION", message: `${value} was not one of the allowed options: [${property.options.join(", ")}]` })
      } else if (property.type === "number" && value !== "" && !Number.isFinite(Number(value))) {
        problems.push({ name, error: "INVALID_INTEGER", message: `${value} is not a valid number` })
      } else if (property.type === "datetime" && !/^\d{10,14}$/.test(value) && Number.isNaN(Date.parse(value))) {
        problems.push({ name, error: "INVALID_DATE", message: `${value} is not a valid datetime` })
      } else if (property.hasUniqueValue === true && value !== "" && this.all(type).some((o) => o.properties[name] === value)) {
        problems.push({ name, error: "UNIQUE_VALUE_CONFLICT", message: `${name} must be unique; ${value} already exists` })
      }
    }
    if (creating) {
      for (const name of REQUIRED_ON_CREATE[type]) {
        const value = (properties as Record<string, unknown>)[name]
        if (value === undefined || value === "") problems.push({ name, error: "REQUIRED", message: `${name} is required` })
      }
    }
    return problems
  }
}

interface Problem {
  readonly name: string
  readonly error: string
  readonly message: string
}

/** HubSpot's VALIDATION_ERROR message names each refused property in a JSON list. */
const validationMessage = (problems: ReadonlyArray<Problem>): string =>
  `Property values were not valid: ${JSON.stringify(problems.map((x) => ({ isValid: false, message: x.message, error: x.error, name: x.name, localizedErrorMessage: x.message })))}`

const problemDetail = (x: Problem) => ({ message: x.message, code: x.error, context: { propertyName: [x.name] } })

const wireProperty = (property: HubSpotFakeProperty): Wire<Property> => ({
  name: property.name,
  label: property.label,
  type: property.type,
  fieldType: property.fieldType,
  groupName: property.groupName,
  description: "",
  hubspotDefined: property.hubspotDefined,
  hasUniqueValue: property.hasUniqueValue ?? false,
  options: (property.options ?? []).map((value, displayOrder) => ({ label: value, value, displayOrder, hidden: false })),
  modificationMetadata: { archivable: !property.hubspotDefined, readOnlyDefinition: property.hubspotDefined, readOnlyValue: property.readOnly ?? false }
})

const parseJson = (body: string): unknown => {
  try {
    return body === "" ? undefined : JSON.parse(body)
  } catch {
    return undefined
  }
}

/** HubSpot's error body: `{status: "error", message, correlationId, category, …}`. */
const error = (
  response: ServerResponse,
  status: number,
  category: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {}
): void => sendJson(response, status, { status: "error", message, correlationId: correlationId(), category, ...extra }, headers)

const rateLimited = (response: ServerResponse, policy: "TEN_SECONDLY_ROLLING" | "DAILY", headers: Record<string, string>): void =>
  sendJson(response, 429, {
    status: "error",
    message: policy === "DAILY" ? "You have reached your daily limit." : "You have reached your ten_secondly_rolling limit.",
    errorType: "RATE_LIMIT",
    correlationId: correlationId(),
    policyName: policy,
    groupName: "publicapi:app-api-calls"
  }, { ...headers, ...(policy === "DAILY" ? { "x-hubspot-ratelimit-daily-remaining": "0" } : { "x-hubspot-ratelimit-remaining": "0" }) })

const page = (response: ServerResponse, status: number, message: string): void => {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8" })
  response.end(`<!doctype html><title>HubSpot</title><p>${message.replace(/[<&]/g, (c) => (c === "<" ? "&lt;" : "&amp;"))}</p>`)
}
