/**
 * A local fake of Zoho's accounts server (OAuth 2.0) and of the CRM REST API
 * v8, written from Zoho's public documentation and API definitions
 * (zoho/crm-oas, v8.0), for tests that must not leave the machine. One server
 * answers both: the accounts endpoints under `/oauth/v2`, the CRM under
 * `/crm/v8`, and it names itself as both `accounts-server` and `api_domain`.
 *
 * Accounts (as Zoho documents the server-based flow):
 * - `GET /oauth/v2/auth` (client_id, response_type=code, redirect_uri, scope,
 *   access_type, prompt, state): the test's chosen user consents at once; a
 *   302 to redirect_uri with `code`, `location`, `accounts-server`, `state`.
 * - `POST /oauth/v2/token` (form body or query): `authorization_code` and
 *   `refresh_token` grants. Errors are **HTTP 200** with `{"error": …}`
 *   (`invalid_client`, `invalid_client_secret`, `invalid_redirect_uri`,
 *   `invalid_code` — also for a revoked refresh token); more than ten
 *   refreshes of one refresh token in ten minutes answer Zoho's throttle
 *   (`{"error":"Access Denied", …, "status":"failure"}`, HTTP 200).
 * - `POST /oauth/v2/token/revoke?token=…` → `{"status":"success"}`.
 *
 * CRM (header `Authorization: Zoho-oauthtoken <token>`; unknown or expired
 * token → 401 `INVALID_TOKEN`; a token without the scope → 401
 * `OAUTH_SCOPE_MISMATCH`):
 * - `GET /users?type=CurrentUser`, `GET /org`;
 * - `GET/POST /settings/modules` (the flags describe the current user;
 *   creating a module answers 201 or, where the edition refuses, 403
 *   `FEATURE_NOT_SUPPORTED`), `GET/POST /settings/fields?module=`;
 * - records: `GET /{module}/{id}` (`fields=`), `GET /{module}` (`fields`,
 *   `per_page`, `page`, `sort_by`, `sort_order`), `GET /{module}/search?phone=`, `POST /{module}`,
 *   `PUT /{module}`, `POST /{module}/upsert` (`duplicate_check_fields`), at
 *   most 100 records a call, with per-record `SUCCESS` / `INVALID_DATA` /
 *   `DUPLICATE_DATA` items; ids are 19-digit strings;
 * - `NO_PERMISSION` (403) for modules the user may not view or create, and
 *   for records the test denies.
 * - checkboxes (`data_type` "boolean", created with /settings/fields like any custom field): a value other
 *   than true or false is a per-record `INVALID_DATA` with `expected_data_type`; on the standard modules a
 *   write naming a field the module does not have (a checkbox `crm setup` never made) is `INVALID_DATA`
 *   naming it;
 * - field lengths (`length` in /settings/fields): a longer value is a per-record
 *   `INVALID_DATA` with `details.maximum_length`, as zoho/crm-oas's examples show;
 *   a new custom-module record without its Name is `MANDATORY_NOT_FOUND`;
 * - a concurrency cap (`concurrencyCap`, Free edition 5): a CRM call beyond it
 *   while others are in flight answers 429 `TOO_MANY_REQUESTS`;
 * - Controls: the next calls fail with `TOO_MANY_REQUESTS` (429) or
 *   `INTERNAL_ERROR` (500), an upsert is written and the connection cut before
 *   the answer, latency on every answer, down/up, access tokens expired at
 *   will, another user behind the next tokens, counters of refreshes and of
 *   CRM calls.
 */
import { randomBytes } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { FakeServer, sendJson } from "./FakeServer.js"

export interface ZohoFakeUser {
  readonly id: string
  readonly zuid: string
  readonly full_name: string
  readonly email: string
  readonly profile: { readonly name: string; readonly id: string }
  /** Modules this user may not view (NO_PERMISSION; `viewable: false` in /settings/modules). */
  readonly hiddenModules?: ReadonlyArray<string>
}

export interface ZohoFakeField {
  readonly api_name: string
  readonly field_label: string
  readonly data_type: string
  readonly unique?: boolean
  readonly pick_list_values?: ReadonlyArray<{ readonly display_value: string; readonly actual_value: string }>
  readonly lookup?: { readonly module: { readonly api_name: string } }
  /** The most characters a value may have (Zoho's `length`): text 255 unless set, a small textarea 2,000, a large one 32,000. */
  readonly length?: number
  readonly textarea?: { readonly type: "small" | "large" | "rich_text" }
  /** Zoho refuses a new record without it (MANDATORY_NOT_FOUND): a custom module's Name. */
  readonly system_mandatory?: boolean
}

/** Zoho's default `length` of a field created without one, by data type (textarea by its `textarea.type`). */
const defaultLength = (dataType: string, textarea: string | undefined): number | undefined =>
  dataType === "textarea" ? (textarea === "large" ? 32_000 : textarea === "rich_text" ? 50_000 : 2_000)
    : dataType === "text" ? 255
    : undefined

interface FakeModule {
  readonly api_name: string
  readonly module_name: string
  readonly plural_label: string
  readonly singular_label: string
  readonly generated_type: "default" | "custom"
  readonly fields: Array<ZohoFakeField>
}

export type ZohoRecord = Record<string, unknown> & { readonly id: string }

/** A profile: what its users may do in each module (Zoho's `Crm_Implied_{View,Create,Edit,Delete}_{module}`). */
export interface ZohoFakeProfile {
  readonly id: string
  readonly name: string
  /** Zoho's own Administrator profile: its permissions cannot be changed through the API. */
  readonly system?: boolean
}

const ACTIONS = ["View", "Create", "Edit", "Delete"] as const
type ModuleAction = (typeof ACTIONS)[number]

interface Permission {
  readonly id: string
  readonly profileId: string
  readonly module: string
  readonly action: ModuleAction
  enabled: boolean
}

interface Grant {
  readonly zuid: string
  readonly scope: ReadonlyArray<string>
}

interface Token extends Grant {
  readonly orgId: string
  expiresAt: number
}

export interface ZohoFakeRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly body: string
}

/** Zoho answers 204 with no body for a record or page that does not exist. */
const noContent = (response: ServerResponse): void => {
  response.writeHead(204)
  response.end()
}

type CrmFault = "429" | "500" | "drop"

/** Keys of a record that are not fields of its module's layout (the record's id and Zoho's own audit fields). */
const SYSTEM_KEYS: ReadonlyArray<string> = ["id", "Owner", "Created_Time", "Modified_Time", "Created_By", "Modified_By"]

/** The values of a write's `trigger` array (Zoho's automations an API write may run). */
const TRIGGERS: ReadonlyArray<string> = ["workflow", "approval", "blueprint", "pathfinder", "orchestration"]

const FIELDS = (pairs: ReadonlyArray<FieldSpec>): Array<ZohoFakeField> =>
  pairs.map(([api_name, field_label, data_type]) => ({ api_name, field_label, data_type: data_type ?? "text" }))

type FieldSpec = readonly [string, string, string?]

const standardModule = (api_name: string, singular: string, fields: ReadonlyArray<FieldSpec>): FakeModule => ({
  api_name,
  module_name: api_name,
  plural_label: api_name,
  singular_label: singular,
  generated_type: "default",
  fields: FIELDS(fields)
})

const STANDARD_MODULES: ReadonlyArray<FakeModule> = [
  standardModule("Leads", "Lead", [["First_Name", "First Name"], ["Last_Name", "Last Name"], ["Full_Name", "Lead Name"], ["Phone", "Phone", "phone"], ["Mobile", "Mobile", "phone"], ["Company", "Company"], ["Email", "Email", "email"]]),
  standardModule("Contacts", "Contact", [["First_Name", "First Name"], ["Last_Name", "Last Name"], ["Full_Name", "Contact Name"], ["Phone", "Phone", "phone"], ["Mobile", "Mobile", "phone"], ["Email", "Email", "email"]]),
  standardModule("Accounts", "Account", [["Account_Name", "Account Name"], ["Phone", "Phone", "phone"]]),
  standardModule("Vendors", "Vendor", [["Vendor_Name", "Vendor Name"], ["Phone", "Phone", "phone"], ["Email", "Email", "email"]]),
  standardModule("Deals", "Deal", [["Deal_Name", "Deal Name"], ["Stage", "Stage"], ["Amount", "Amount", "currency"]])
]

const LOOKUP_FIELDS: ReadonlyArray<readonly [string, string, string, string, string?]> = [
  ["Leads", "Owner", "Lead Owner", "ownerlookup"],
  ["Contacts", "Owner", "Contact Owner", "ownerlookup"],
  ["Contacts", "Account_Name", "Account Name", "lookup", "Accounts"],
  ["Deals", "Owner", "Deal Owner", "ownerlookup"],
  ["Deals", "Contact_Name", "Contact Name", "lookup", "Contacts"],
  ["Deals", "Account_Name", "Account Name", "lookup", "Accounts"]
]

const ZOHO_SCOPE_OF: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\/users/, "ZohoCRM.users"],
  [/^\/org/, "ZohoCRM.org"],
  [/^\/settings\/modules/, "ZohoCRM.settings.modules"],
  [/^\/settings\/profiles/, "ZohoCRM.settings.profiles"],
  [/^\/settings\/fields/, "ZohoCRM.settings.fields"],
  [/^\//, "ZohoCRM.modules"]
]

export class ZohoFake {
  readonly clientId: string
  readonly clientSecret: string
  readonly orgId = "60012345678"
  readonly orgName = "Acme Test Org"
  readonly requests: Array<ZohoFakeRequest> = []
  readonly users = new Map<string, ZohoFakeUser>()
  /** Who consents at the next authorize (a zuid). */
  consentingUser: string
  /** Latency added to every answer. */
  latencyMs = 0
  /** Zoho's cap on concurrent CRM calls of one organisation (undefined: no cap). */
  concurrencyCap: number | undefined = undefined
  /** CRM calls in flight now, and the most seen at once. */
  inFlight = 0
  maxInFlight = 0
  /** CRM calls refused by the concurrency cap. */
  concurrencyRefusals = 0
  /** False: creating modules and fields is refused as the edition does (403 FEATURE_NOT_SUPPORTED). */
  metadataWritable = true
  /** Refresh grants answered (successful or not). */
  refreshes = 0
  /**
   * The record writes Zoho would have run workflow rules on: those whose request said `trigger` with
   * "workflow" (Zoho runs no rule on an API write otherwise), in order.
   */
  readonly workflowRuns: Array<{ readonly module: string; readonly id: string; readonly on: "create" | "edit" }> = []
  /** Scopes the next consents leave out of the grant (as an older or hand-edited consent link would). */
  readonly consentDropsScopes: Array<string> = []
  /** The `api_domain` token answers name instead of this server (a foreign one, in tests of the refusal). */
  apiDomainOverride: string | undefined
  /** Record ids whose GET answers NO_PERMISSION. */
  readonly deniedRecords = new Set<string>()
  readonly modules = new Map<string, FakeModule>()
  readonly records = new Map<string, Map<string, ZohoRecord>>()
  private readonly codes = new Map<string, Grant>()
  private readonly refreshTokens = new Map<string, Grant & { revoked: boolean; uses: Array<number> }>()
  private readonly accessTokens = new Map<string, Token>()
  private readonly faults: Array<CrmFault> = []
  /**
   * Profiles and their module permissions. A module is visible to a user only if the module's `profiles`
   * include the user's profile and that profile has View on it; creating and editing records need Create and
   * Edit. A module created through the API grants the profiles named in its `profiles` every permission.
   */
  readonly profiles = new Map<string, ZohoFakeProfile>()
  /** False: profile and module-access changes are refused (403 NO_PERMISSION), as for a user without Manage Profiles. */
  profilesWritable = true
  private readonly permissions = new Map<string, Permission>()
  private readonly moduleProfiles = new Map<string, Set<string>>()
  private nextId = 5725767000000524001n
  private server: FakeServer | undefined
  private tokenLifetimeMs = 3_600_000
  private currentSecret: string | undefined
  private hold: { readonly markWritten: () => void; readonly released: Promise<void> } | undefined
  private refreshHold: { readonly markArrived: () => void; readonly released: Promise<void> } | undefined

  private constructor(options: { readonly clientId?: string; readonly clientSecret?: string }) {
    this.clientId = options.clientId ?? `1000.${randomBytes(12).toString("hex").toUpperCase()}`
    this.clientSecret = options.clientSecret ?? randomBytes(20).toString("hex")
    const admin: ZohoFakeUser = {
      id: "5725767000000412001",
      zuid: "800000001",
      full_name: "Ada Admin",
      email: "ada@acme.test",
      profile: { name: "Administrator", id: "5725767000000026011" }
    }
    this.users.set(admin.zuid, admin)
    this.consentingUser = admin.zuid
    for (const m of STANDARD_MODULES) {
      this.modules.set(m.api_name, { ...m, fields: [...m.fields] })
      this.records.set(m.api_name, new Map())
      this.moduleProfiles.set(m.api_name, new Set())
    }
    // Owner and lookup fields as Zoho's standard modules have them (a record answers them as {name, id}).
    for (const [module, api_name, field_label, data_type, target] of LOOKUP_FIELDS) {
      const fields = this.modules.get(module)?.fields
      if (fields !== undefined && !fields.some((f) => f.api_name === api_name)) {
        fields.push({ api_name, field_label, data_type, ...(target === undefined ? {} : { lookup: { module: { api_name: target } } }) })
      }
    }
    const standardModules = STANDARD_MODULES.map((m) => m.api_name)
    this.addProfile({ id: "5725767000000026011", name: "Administrator", system: true }, standardModules)
    this.addProfile({ id: "5725767000000026014", name: "Standard" }, standardModules)
  }

  /** A profile whose users have every permission on `modules` (standard modules) and none on the others. */
  addProfile(profile: ZohoFakeProfile, modules: ReadonlyArray<string>): void {
    this.profiles.set(profile.id, profile)
    for (const module of this.modules.values()) {
      const granted = modules.includes(module.api_name)
      if (granted) this.moduleProfiles.get(module.api_name)?.add(profile.id)
      for (const action of ACTIONS) this.permission(profile.id, module.api_name).get(action).enabled = granted
    }
  }

  /** Whether users of the profile may do `action` in the module (what Zoho enforces on every call). */
  may(profileId: string, module: string, action: ModuleAction): boolean {
    return (this.moduleProfiles.get(module)?.has(profileId) ?? false) && this.permission(profileId, module).get(action).enabled
  }

  /**
   * Sets one permission of a profile, as an administrator does in Zoho's settings (a test of a user who lost
   * Edit on a module: Zoho then answers each of that user's record edits NO_PERMISSION).
   */
  setPermission(profileId: string, module: string, action: ModuleAction, enabled: boolean): void {
    this.permission(profileId, module).get(action).enabled = enabled
  }

  /** The profiles a module is accessible to. */
  profilesOf(module: string): ReadonlyArray<string> {
    return [...(this.moduleProfiles.get(module) ?? [])]
  }

  /** An access token for a user, as that user's own session would hold (for tests acting as that user). */
  tokenFor(zuid: string): string {
    return this.issueAccess({ zuid, scope: ["ZohoCRM.modules.ALL", "ZohoCRM.settings.ALL", "ZohoCRM.users.READ", "ZohoCRM.org.READ"] }).access_token
  }

  private permission(profileId: string, module: string): { readonly get: (action: ModuleAction) => Permission } {
    return {
      get: (action) => {
        const found = [...this.permissions.values()].find((p) => p.profileId === profileId && p.module === module && p.action === action)
        if (found !== undefined) return found
        const created: Permission = { id: this.newId(), profileId, module, action, enabled: false }
        this.permissions.set(created.id, created)
        return created
      }
    }
  }

  /** Sets the profiles a module is accessible to; profiles given access get every permission, as Zoho does. */
  private grantModule(module: string, profileIds: ReadonlyArray<string>): void {
    const granted = this.moduleProfiles.get(module) ?? new Set<string>()
    for (const id of granted) {
      if (!profileIds.includes(id)) for (const action of ACTIONS) this.permission(id, module).get(action).enabled = false
    }
    for (const id of profileIds) {
      if (!granted.has(id)) for (const action of ACTIONS) this.permission(id, module).get(action).enabled = true
    }
    this.moduleProfiles.set(module, new Set(profileIds))
  }

  static async start(options: { readonly clientId?: string; readonly clientSecret?: string } = {}): Promise<ZohoFake> {
    const fake = new ZohoFake(options)
    fake.server = await FakeServer.start((request, body, response) => fake.handle(request, body, response))
    return fake
  }

  get url(): string {
    if (this.server === undefined) throw new Error("ZohoFake is not started")
    return this.server.url
  }

  /** The client's secret is regenerated in Zoho's API console (or set back to `secret`): others are refused. */
  rotateClientSecret(secret?: string): string {
    this.currentSecret = secret ?? randomBytes(20).toString("hex")
    return this.currentSecret
  }

  /** Live grants and their tokens lose a scope (a connection made before Parley asked for it). */
  narrowGrants(scope: string): void {
    for (const token of [...this.refreshTokens.values(), ...this.accessTokens.values()]) {
      Object.assign(token, { scope: token.scope.filter((s) => s !== scope) })
    }
  }

  addUser(user: ZohoFakeUser): void {
    this.users.set(user.zuid, user)
  }

  /** A record in a module, with a fresh 19-digit id; returns the id. */
  addRecord(module: string, fields: Readonly<Record<string, unknown>>): string {
    const id = this.newId()
    this.moduleRecords(module).set(id, { ...fields, id })
    return id
  }

  /** Every access token expires now (the next CRM call is 401 INVALID_TOKEN until refreshed). */
  expireAccessTokens(): void {
    for (const token of this.accessTokens.values()) token.expiresAt = 0
  }

  /** Access tokens issued from now on live this long (Zoho: one hour). */
  setTokenLifetime(ms: number): void {
    this.tokenLifetimeMs = ms
  }

  /** Revokes every refresh token (as a user removing the connected app would). */
  revokeAll(): void {
    for (const token of this.refreshTokens.values()) token.revoked = true
    this.accessTokens.clear()
  }

  /** The next refreshes and CRM tokens belong to another user (the refresh token was re-issued to them). */
  switchTokensTo(zuid: string): void {
    for (const token of [...this.refreshTokens.values(), ...this.accessTokens.values()]) {
      Object.assign(token, { zuid })
    }
  }

  failNext(times: number, kind: "429" | "500"): void {
    for (let i = 0; i < times; i++) this.faults.push(kind)
  }

  /**
   * The next record write is made, then its answer is held until `release()`: the test can kill the client
   * in between (`written` resolves once the records are stored).
   */
  holdNextWrite(): { readonly written: Promise<void>; readonly release: () => void } {
    let markWritten = () => {}
    let release = () => {}
    const written = new Promise<void>((resolve) => (markWritten = resolve))
    const released = new Promise<void>((resolve) => (release = resolve))
    this.hold = { markWritten, released }
    return { written, release }
  }

  /**
   * The next refresh-token grant arrives, then waits until `release()` before Zoho looks at the token: the test
   * can reconnect in between, as an administrator would while a background refresh is still on its way.
   */
  holdNextRefresh(): { readonly arrived: Promise<void>; readonly release: () => void } {
    let markArrived = () => {}
    let release = () => {}
    const arrived = new Promise<void>((resolve) => (markArrived = resolve))
    const released = new Promise<void>((resolve) => (release = resolve))
    this.refreshHold = { markArrived, released }
    return { arrived, release }
  }

  clearFaults(): void {
    this.faults.length = 0
  }

  /** The next upsert/insert writes its records, then the connection is cut before the answer. */
  dropNextAfterWrite(): void {
    this.faults.push("drop")
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

  /** Refresh tokens issued and not revoked: grants still live at Zoho. */
  get liveGrants(): number {
    return [...this.refreshTokens.values()].filter((t) => !t.revoked).length
  }

  /** CRM calls (not the accounts server's) received so far. */
  get crmCalls(): number {
    return this.requests.filter((r) => r.path.startsWith("/crm/")).length
  }

  private listening(): FakeServer {
    if (this.server === undefined) throw new Error("ZohoFake is not started")
    return this.server
  }

  private newId(): string {
    this.nextId += 1000n
    return this.nextId.toString()
  }

  private moduleRecords(module: string): Map<string, ZohoRecord> {
    let found = this.records.get(module)
    if (found === undefined) {
      found = new Map()
      this.records.set(module, found)
    }
    return found
  }

  private async handle(request: IncomingMessage, body: string, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://fake")
    this.requests.push({ method: request.method ?? "GET", path: url.pathname, query: url.searchParams, body })
    if (url.pathname.startsWith("/crm/v8/")) {
      // Zoho counts a call from its arrival to its answer against the organisation's concurrency cap.
      if (this.concurrencyCap !== undefined && this.inFlight >= this.concurrencyCap) {
        this.concurrencyRefusals++
        return sendJson(response, 429, { code: "TOO_MANY_REQUESTS", details: {}, message: "The API concurrency limit has been reached.", status: "error" })
      }
      this.inFlight++
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
      try {
        if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs))
        return await this.crm(request, url, body, response)
      } finally {
        this.inFlight--
      }
    }
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs))
    if (url.pathname.startsWith("/oauth/v2/")) return this.accounts(request, url, body, response)
    sendJson(response, 404, { code: "INVALID_URL_PATTERN", details: {}, message: "Please check if the URL trying to access is a correct one", status: "error" })
  }

  // --- accounts server -------------------------------------------------------------------------------

  private async accounts(request: IncomingMessage, url: URL, body: string, response: ServerResponse): Promise<void> {
    const form = new URLSearchParams(body)
    const param = (name: string) => form.get(name) ?? url.searchParams.get(name)
    if (url.pathname === "/oauth/v2/auth" && request.method === "GET") {
      const redirect = url.searchParams.get("redirect_uri")
      if (url.searchParams.get("client_id") !== this.clientId || redirect === null) {
        return sendJson(response, 400, { error: "invalid_client" })
      }
      const code = `1000.${randomBytes(16).toString("hex")}`
      const asked = (url.searchParams.get("scope") ?? "").split(",")
      this.codes.set(code, { zuid: this.consentingUser, scope: asked.filter((s) => !this.consentDropsScopes.includes(s)) })
      const target = new URL(redirect)
      target.searchParams.set("state", url.searchParams.get("state") ?? "")
      target.searchParams.set("code", code)
      target.searchParams.set("location", "us")
      target.searchParams.set("accounts-server", this.url)
      response.writeHead(302, { location: target.toString() })
      return void response.end()
    }
    if (url.pathname === "/oauth/v2/token/revoke" && request.method === "POST") {
      const token = param("token")
      const found = token === null ? undefined : this.refreshTokens.get(token)
      if (found !== undefined) found.revoked = true
      return sendJson(response, 200, { status: "success" })
    }
    if (url.pathname === "/oauth/v2/token" && request.method === "POST") {
      if (param("client_id") !== this.clientId) return sendJson(response, 200, { error: "invalid_client" })
      if (param("client_secret") !== (this.currentSecret ?? this.clientSecret)) return sendJson(response, 200, { error: "invalid_client_secret" })
      const grant = param("grant_type")
      if (grant === "authorization_code") {
        const code = param("code") ?? ""
        const granted = this.codes.get(code)
        this.codes.delete(code)
        if (granted === undefined) return sendJson(response, 200, { error: "invalid_code" })
        const refresh = `1000.${randomBytes(16).toString("hex")}.${randomBytes(16).toString("hex")}`
        this.refreshTokens.set(refresh, { ...granted, revoked: false, uses: [] })
        return sendJson(response, 200, { ...this.issueAccess(granted), refresh_token: refresh })
      }
      if (grant === "refresh_token") {
        const held = this.refreshHold
        if (held !== undefined) {
          this.refreshHold = undefined
          held.markArrived()
          await held.released
        }
        this.refreshes++
        const found = this.refreshTokens.get(param("refresh_token") ?? "")
        if (found === undefined || found.revoked) return sendJson(response, 200, { error: "invalid_code" })
        const now = Date.now()
        found.uses = found.uses.filter((t) => t > now - 600_000)
        if (found.uses.length >= 10) {
          return sendJson(response, 200, {
            error_description: "You have made too many requests continuously. Please try again after some time.",
            error: "Access Denied",
            status: "failure"
          })
        }
        found.uses.push(now)
        return sendJson(response, 200, this.issueAccess(found))
      }
      return sendJson(response, 200, { error: "unsupported_grant_type" })
    }
    sendJson(response, 404, { error: "invalid_request" })
  }

  private issueAccess(grant: Grant) {
    const token = `1000.${randomBytes(16).toString("hex")}.${randomBytes(16).toString("hex")}`
    this.accessTokens.set(token, { ...grant, orgId: this.orgId, expiresAt: Date.now() + this.tokenLifetimeMs })
    return { access_token: token, scope: grant.scope.join(" "), api_domain: this.apiDomainOverride ?? this.url, token_type: "Bearer", expires_in: Math.round(this.tokenLifetimeMs / 1000) }
  }

  // --- CRM v8 ----------------------------------------------------------------------------------------

  private crm(request: IncomingMessage, url: URL, body: string, response: ServerResponse): void | Promise<void> {
    const error = (status: number, code: string, message: string, details: Record<string, unknown> = {}) =>
      sendJson(response, status, { code, details, message, status: "error" })
    const auth = /^Zoho-oauthtoken\s+(.+)$/.exec(request.headers.authorization ?? "")
    const token = auth?.[1] === undefined ? undefined : this.accessTokens.get(auth[1])
    if (token === undefined || token.expiresAt <= Date.now()) return error(401, "INVALID_TOKEN", "invalid oauth token")
    const path = url.pathname.slice("/crm/v8".length)
    const needed = ZOHO_SCOPE_OF.find(([pattern]) => pattern.test(path))?.[1] ?? "ZohoCRM.modules"
    if (!token.scope.some((s) => s === "ZohoCRM.settings.ALL" && needed.startsWith("ZohoCRM.settings") || s.startsWith(needed))) {
      return error(401, "OAUTH_SCOPE_MISMATCH", "invalid oauth scope to access this URL")
    }
    const fault = this.faults[0] === "drop" ? undefined : this.faults.shift()
    if (fault === "429") return error(429, "TOO_MANY_REQUESTS", "The API concurrency limit has been reached.")
    if (fault === "500") return error(500, "INTERNAL_ERROR", "Internal Server Error")
    const user = this.users.get(token.zuid)
    if (user === undefined) return error(401, "INVALID_TOKEN", "invalid oauth token")
    const method = request.method ?? "GET"
    const json = (): Record<string, unknown> => {
      try {
        const parsed: unknown = JSON.parse(body)
        return typeof parsed === "object" && parsed !== null ? { ...parsed } : {}
      } catch {
        return {}
      }
    }

    if (path === "/users" && url.searchParams.get("type") === "CurrentUser") {
      return sendJson(response, 200, {
        users: [{ id: user.id, first_name: user.full_name.split(" ")[0] ?? null, last_name: user.full_name.split(" ").slice(1).join(" "), full_name: user.full_name, email: user.email, zuid: user.zuid, status: "active", profile: user.profile, role: { name: "CEO", id: "5725767000000026005" }, time_zone: "Europe/London" }]
      })
    }
    if (path === "/org") {
      return sendJson(response, 200, { org: [{ id: this.orgId, zgid: "700000001", primary_zuid: "800000001", company_name: this.orgName, time_zone: "Europe/London", type: "production" }] })
    }
    if (path === "/settings/modules" && method === "GET") {
      return sendJson(response, 200, {
        modules: [...this.modules.values()].map((m) => {
          const hidden = (user.hiddenModules ?? []).includes(m.api_name)
          const may = (action: ModuleAction) => !hidden && this.may(user.profile.id, m.api_name, action)
          return {
            api_name: m.api_name, module_name: m.module_name, plural_label: m.plural_label, singular_label: m.singular_label, id: `57257670000000${m.api_name.length}`,
            generated_type: m.generated_type, api_supported: true, viewable: may("View"), creatable: may("Create"), editable: may("Edit"), deletable: may("Delete"),
            profiles: this.profilesOf(m.api_name).map((id) => ({ id, name: this.profiles.get(id)?.name ?? id }))
          }
        })
      })
    }
    if (path === "/settings/modules" && method === "POST") {
      if (!this.metadataWritable) return error(403, "FEATURE_NOT_SUPPORTED", "Custom modules are not available in this edition")
      const items = Array.isArray(json()["modules"]) ? json()["modules"] as Array<Record<string, unknown>> : []
      const answers = items.map((item) => {
        const apiName = typeof item["api_name"] === "string" ? item["api_name"] : String(item["plural_label"] ?? "").replace(/\W+/g, "_")
        if (this.modules.has(apiName)) return { code: "DUPLICATE_DATA", details: { api_name: "api_name" }, message: "duplicate data", status: "error" }
        if (!Array.isArray(item["profiles"]) || item["profiles"].length === 0) return { code: "MANDATORY_NOT_FOUND", details: { api_name: "profiles" }, message: "required field not found", status: "error" }
        const profileIds = item["profiles"].map((p: unknown) => (typeof p === "object" && p !== null && "id" in p ? String(p.id) : ""))
        if (profileIds.some((id) => !this.profiles.has(id))) return { code: "INVALID_DATA", details: { api_name: "profiles" }, message: "invalid profile id", status: "error" }
        this.modules.set(apiName, {
          api_name: apiName,
          module_name: apiName,
          plural_label: String(item["plural_label"] ?? apiName),
          singular_label: String(item["singular_label"] ?? apiName),
          generated_type: "custom",
          fields: [{ api_name: "Name", field_label: `${String(item["singular_label"] ?? apiName)} Name`, data_type: "text", length: 120, system_mandatory: true }]
        })
        this.moduleRecords(apiName)
        this.moduleProfiles.set(apiName, new Set())
        this.grantModule(apiName, profileIds)
        return { code: "SUCCESS", details: { id: this.newId() }, message: "module created", status: "success" }
      })
      return sendJson(response, 201, { modules: answers })
    }
    const moduleSetting = /^\/settings\/modules\/([A-Za-z0-9_]+)$/.exec(path)
    if (moduleSetting !== null) {
      const m = this.modules.get(moduleSetting[1] ?? "")
      if (m === undefined) return error(400, "INVALID_MODULE", "the module name given seems to be invalid", { resource_path_index: 2 })
      const profiles = () => this.profilesOf(m.api_name).map((id) => ({ id, name: this.profiles.get(id)?.name ?? id }))
      if (method === "GET") return sendJson(response, 200, { modules: [{ api_name: m.api_name, plural_label: m.plural_label, singular_label: m.singular_label, generated_type: m.generated_type, profiles: profiles() }] })
      if (method !== "PUT") return error(400, "INVALID_REQUEST_METHOD", "The http request method type is not a valid one")
      if (!this.profilesWritable) return error(403, "NO_PERMISSION", "permission denied", { permissions: ["Crm_Implied_Manage_Profiles"] })
      const item = Array.isArray(json()["modules"]) ? (json()["modules"] as Array<Record<string, unknown>>)[0] : undefined
      const given = item?.["profiles"]
      // The OpenAPI file: singular_label, plural_label and a non-empty profiles list are required.
      const missing = ["singular_label", "plural_label", "profiles"].find((k) => item?.[k] === undefined) ??
        (Array.isArray(given) && given.length > 0 ? undefined : "profiles")
      if (missing !== undefined) return sendJson(response, 400, { modules: [{ code: "MANDATORY_NOT_FOUND", details: { api_name: missing, json_path: `$.modules[0].${missing}` }, message: "required field not found", status: "error" }] })
      const ids = (Array.isArray(given) ? given : []).map((p: unknown) => (typeof p === "object" && p !== null && "id" in p ? String(p.id) : ""))
      if (ids.some((id) => !this.profiles.has(id))) return sendJson(response, 400, { modules: [{ code: "INVALID_DATA", details: { api_name: "profiles", json_path: "$.modules[0].profiles" }, message: "invalid profile id", status: "error" }] })
      this.grantModule(m.api_name, ids)
      return sendJson(response, 200, { modules: [{ code: "SUCCESS", details: { id: `57257670000000${m.api_name.length}` }, message: "module updated successfully", status: "success" }] })
    }
    if (path === "/settings/profiles" && method === "GET") {
      return sendJson(response, 200, {
        profiles: [...this.profiles.values()].map((p) => ({ id: p.id, name: p.name, display_label: p.name, api_name: p.name.replace(/\W+/g, "_"), custom: p.system !== true && p.name !== "Standard", type: "normal_profile" })),
        info: { page: 1, per_page: 200, count: this.profiles.size, more_records: false }
      })
    }
    const profileSetting = /^\/settings\/profiles\/(\d+)$/.exec(path)
    if (profileSetting !== null) {
      const profile = this.profiles.get(profileSetting[1] ?? "")
      if (profile === undefined) return error(400, "INVALID_DATA", "the id given seems to be invalid", { resource_path_index: 2 })
      if (method === "GET") {
        const details = [...this.modules.keys()].flatMap((module) =>
          ACTIONS.map((action) => {
            const p = this.permission(profile.id, module).get(action)
            return { id: p.id, name: `Crm_Implied_${action}_${module}`, module, display_label: action, enabled: this.may(profile.id, module, action) }
          })
        )
        return sendJson(response, 200, { profiles: [{ id: profile.id, name: profile.name, display_label: profile.name, custom: profile.system !== true, permissions_details: details }] })
      }
      if (method !== "PUT") return error(400, "INVALID_REQUEST_METHOD", "The http request method type is not a valid one")
      if (!this.profilesWritable) return error(403, "NO_PERMISSION", "permission denied", { permissions: ["Crm_Implied_Manage_Profiles"] })
      if (profile.system === true) return sendJson(response, 400, { profiles: [{ code: "NOT_ALLOWED", details: { id: profile.id }, message: "the permissions of a system profile cannot be changed", status: "error" }] })
      const item = Array.isArray(json()["profiles"]) ? (json()["profiles"] as Array<Record<string, unknown>>)[0] : undefined
      const changes = Array.isArray(item?.["permissions_details"]) ? item["permissions_details"] as Array<Record<string, unknown>> : []
      const unknown = changes.find((c) => {
        const found = this.permissions.get(String(c["id"]))
        return found === undefined || found.profileId !== profile.id || typeof c["enabled"] !== "boolean"
      })
      if (unknown !== undefined) return sendJson(response, 400, { profiles: [{ code: "INVALID_DATA", details: { api_name: "permissions_details", id: unknown["id"] }, message: "invalid permission", status: "error" }] })
      for (const c of changes) {
        const found = this.permissions.get(String(c["id"]))
        if (found !== undefined) found.enabled = c["enabled"] === true
      }
      return sendJson(response, 200, { profiles: [{ code: "SUCCESS", details: { id: profile.id }, message: "profile updated successfully", status: "success" }] })
    }
    if (path === "/settings/fields") {
      const module = this.modules.get(url.searchParams.get("module") ?? "")
      if (module === undefined) return error(400, "INVALID_MODULE", "the module name given seems to be invalid")
      if (method === "GET") {
        return sendJson(response, 200, {
          fields: module.fields.map((f) => {
            const length = f.length ?? defaultLength(f.data_type, f.textarea?.type)
            return { ...f, ...(length === undefined ? {} : { length }), id: `${f.api_name.length}000`, custom_field: module.generated_type === "custom" }
          })
        })
      }
      if (!this.metadataWritable) return error(403, "FEATURE_NOT_SUPPORTED", "Custom fields are not available in this edition")
      const items = Array.isArray(json()["fields"]) ? json()["fields"] as Array<Record<string, unknown>> : []
      const answers = items.map((item) => {
        const apiName = typeof item["api_name"] === "string" ? item["api_name"] : String(item["field_label"] ?? "").replace(/\W+/g, "_")
        if (module.fields.some((f) => f.api_name === apiName)) return { code: "DUPLICATE_DATA", details: { api_name: apiName }, message: "duplicate data", status: "error" }
        const dataType = String(item["data_type"] ?? "text")
        const textareaType = typeof item["textarea"] === "object" && item["textarea"] !== null && "type" in item["textarea"] &&
            (item["textarea"].type === "large" || item["textarea"].type === "rich_text" || item["textarea"].type === "small")
          ? item["textarea"].type
          : undefined
        const length = typeof item["length"] === "number" ? item["length"] : defaultLength(dataType, textareaType)
        const field: ZohoFakeField = {
          api_name: apiName,
          field_label: String(item["field_label"] ?? apiName),
          data_type: dataType,
          ...(length === undefined ? {} : { length }),
          ...(dataType === "textarea" ? { textarea: { type: textareaType ?? "small" } } : {}),
          ...(item["unique"] === undefined ? {} : { unique: true }),
          ...(Array.isArray(item["pick_list_values"]) ? { pick_list_values: item["pick_list_values"] as ZohoFakeField["pick_list_values"] & object } : {}),
          ...(typeof item["lookup"] === "object" && item["lookup"] !== null ? { lookup: item["lookup"] as ZohoFakeField["lookup"] & object } : {})
        }
        module.fields.push(field)
        return { code: "SUCCESS", details: { id: this.newId() }, message: "field created", status: "success" }
      })
      return sendJson(response, 201, { fields: answers })
    }

    const match = /^\/([A-Za-z_]+)(?:\/([^/]+))?$/.exec(path)
    const module = match?.[1] === undefined ? undefined : this.modules.get(match[1])
    if (match === null || module === undefined) return error(400, "INVALID_MODULE", "the module name given seems to be invalid")
    if ((user.hiddenModules ?? []).includes(module.api_name) || !this.may(user.profile.id, module.api_name, "View")) {
      return error(403, "NO_PERMISSION", "permission denied", { permissions: [`Crm_Implied_View_${module.api_name}`] })
    }
    // Writing needs Create (a new record) or Edit (an update, an upsert's match) in the user's profile.
    const writeDenied = (action: ModuleAction) =>
      this.may(user.profile.id, module.api_name, action)
        ? undefined
        : { code: "NO_PERMISSION", details: { permissions: [`Crm_Implied_${action}_${module.api_name}`] }, message: "permission denied", status: "error" }
    const store = this.moduleRecords(module.api_name)
    const fieldsParam = url.searchParams.get("fields")
    const project = (record: ZohoRecord): ZohoRecord => {
      if (fieldsParam === null) return record
      const out: ZohoRecord = { id: record.id }
      for (const f of fieldsParam.split(",")) if (f in record) out[f] = record[f]
      return out
    }
    const sub = match[2]
    if (method === "GET" && sub === "search") {
      // Zoho's search by phone matches every phone field of the module.
      const phone = url.searchParams.get("phone")
      const phoneFields = module.fields.filter((f) => f.data_type === "phone").map((f) => f.api_name)
      const hits = phone === null ? [] : [...store.values()].filter((r) => phoneFields.some((f) => r[f] === phone))
      if (hits.length === 0) return noContent(response)
      return sendJson(response, 200, { data: hits.map(project), info: { per_page: 200, count: hits.length, page: 1, more_records: false } })
    }
    if (method === "GET" && sub !== undefined) {
      if (this.deniedRecords.has(sub)) return error(403, "NO_PERMISSION", "permission denied", { permissions: ["Crm_Implied_View_Record"] })
      const record = store.get(sub)
      if (record === undefined) return noContent(response)
      return sendJson(response, 200, { data: [project(record)] })
    }
    if (method === "GET") {
      const perPage = Math.min(Number(url.searchParams.get("per_page") ?? 200), 200)
      const page = Number(url.searchParams.get("page") ?? 1)
      const sortBy = url.searchParams.get("sort_by")
      const all = [...store.values()]
      if (sortBy !== null) {
        const dir = url.searchParams.get("sort_order") === "desc" ? -1 : 1
        all.sort((a, b) => dir * String(a[sortBy] ?? "").localeCompare(String(b[sortBy] ?? "")))
      }
      const slice = all.slice((page - 1) * perPage, page * perPage)
      if (slice.length === 0) return noContent(response)
      return sendJson(response, 200, { data: slice.map(project), info: { per_page: perPage, count: slice.length, page, more_records: all.length > page * perPage } })
    }
    const data = Array.isArray(json()["data"]) ? json()["data"] as Array<Record<string, unknown>> : []
    if (data.length > 100) return error(400, "LIMIT_EXCEEDED", "the number of records exceeds 100", { limit: 100 })
    // `trigger`: an array of Zoho's automation kinds; absent means all of them run (Zoho's default).
    const trigger = json()["trigger"]
    if (trigger !== undefined && (!Array.isArray(trigger) || trigger.some((t) => typeof t !== "string" || !TRIGGERS.includes(t)))) {
      return error(400, "INVALID_DATA", "invalid data", { api_name: "trigger" })
    }
    const runsWorkflows = trigger === undefined || (Array.isArray(trigger) && trigger.includes("workflow"))
    const ran = (id: string, on: "create" | "edit") => {
      if (runsWorkflows) this.workflowRuns.push({ module: module.api_name, id, on })
    }
    // `Owner` names an active user of the organisation by id; Zoho answers it as `{ name, id }`.
    const ownerOf = (record: Record<string, unknown>): { readonly name: string; readonly id: string } | "invalid" | undefined => {
      const owner = record["Owner"]
      if (owner === undefined) return undefined
      const id = typeof owner === "object" && owner !== null && "id" in owner ? owner.id : undefined
      const found = [...this.users.values()].find((u) => u.id === id)
      return found === undefined ? "invalid" : { name: found.full_name, id: found.id }
    }
    const invalidOwner = { code: "INVALID_DATA", details: { api_name: "Owner", expected_data_type: "lookup" }, message: "invalid data", status: "error" }
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "+00:00")
    const by = { name: user.full_name, id: user.id }
    // A picklist value it does not list, or a checkbox (`boolean`) given anything but true or false.
    const fieldOk = (record: Record<string, unknown>): ZohoFakeField | undefined =>
      module.fields.find((f) =>
        record[f.api_name] !== undefined && record[f.api_name] !== null && (
          (f.data_type === "picklist" && !(f.pick_list_values ?? []).some((v) => v.actual_value === record[f.api_name])) ||
          (f.data_type === "boolean" && typeof record[f.api_name] !== "boolean")
        ))
    // A field the module does not have (a checkbox `crm setup` has not created): INVALID_DATA naming it. Only on the
    // standard modules, where Parley writes nothing but its own fields (the fake's custom modules carry no system fields).
    const unknownField = (record: Record<string, unknown>) =>
      module.generated_type !== "default" ? undefined : Object.keys(record).find((key) =>
        !SYSTEM_KEYS.includes(key) && !module.fields.some((f) => f.api_name === key))
    const notAField = (key: string) =>
      ({ code: "INVALID_DATA", details: { api_name: key }, message: "invalid data", status: "error" })
    const uniqueClash = (record: Record<string, unknown>, self: string | undefined) =>
      module.fields.find((f) => f.unique === true && record[f.api_name] !== undefined &&
        [...store.values()].some((r) => r.id !== self && r[f.api_name] === record[f.api_name]))
    const invalid = (field: ZohoFakeField) =>
      ({ code: "INVALID_DATA", details: { api_name: field.api_name, expected_data_type: field.data_type }, message: "invalid data", status: "error" })
    /** A value longer than its field's `length`: INVALID_DATA naming the length, as Zoho answers it. */
    const tooLong = (record: Record<string, unknown>, index: number) => {
      const field = module.fields.find((f) => {
        const length = f.length ?? defaultLength(f.data_type, f.textarea?.type)
        const value = record[f.api_name]
        return length !== undefined && typeof value === "string" && [...value].length > length
      })
      if (field === undefined) return undefined
      return {
        code: "INVALID_DATA",
        details: { maximum_length: field.length ?? defaultLength(field.data_type, field.textarea?.type), api_name: field.api_name, json_path: `$.data[${index}].${field.api_name}` },
        message: "invalid data",
        status: "error"
      }
    }
    const mandatoryMissing = (record: Record<string, unknown>, index: number) => {
      const field = module.fields.find((f) => f.system_mandatory === true && (record[f.api_name] === undefined || record[f.api_name] === null || record[f.api_name] === ""))
      return field === undefined ? undefined : {
        code: "MANDATORY_NOT_FOUND",
        details: { api_name: field.api_name, json_path: `$.data[${index}].${field.api_name}` },
        message: "required field not found",
        status: "error"
      }
    }
    const success = (id: string, message: string, extra: Record<string, unknown> = {}) =>
      ({ code: "SUCCESS", details: { Modified_Time: now, Modified_By: by, Created_Time: now, id, Created_By: by }, message, status: "success", ...extra })

    let answers: Array<Record<string, unknown>>
    if (method === "POST" && (sub === undefined || sub === "upsert")) {
      const checks = sub === "upsert"
        ? (Array.isArray(json()["duplicate_check_fields"]) ? json()["duplicate_check_fields"] as Array<string> : module.fields.filter((f) => f.unique === true).map((f) => f.api_name))
        : []
      answers = data.map((record, index) => {
        const unknown = unknownField(record)
        if (unknown !== undefined) return notAField(unknown)
        const bad = fieldOk(record)
        if (bad !== undefined) return invalid(bad)
        const long = tooLong(record, index)
        if (long !== undefined) return long
        const owner = ownerOf(record)
        if (owner === "invalid") return invalidOwner
        const existing = checks.length === 0 ? undefined : [...store.values()].find((r) => checks.some((c) => record[c] !== undefined && r[c] === record[c]))
        if (existing !== undefined) {
          const denied = writeDenied("Edit")
          if (denied !== undefined) return denied
          store.set(existing.id, { ...existing, ...record, id: existing.id, Modified_Time: now, Owner: owner ?? existing["Owner"] })
          ran(existing.id, "edit")
          return success(existing.id, "record updated", { action: "update", duplicate_field: checks[0] })
        }
        const clash = uniqueClash(record, undefined)
        if (clash !== undefined) return { code: "DUPLICATE_DATA", details: { api_name: clash.api_name, id: [...store.values()].find((r) => r[clash.api_name] === record[clash.api_name])?.id }, message: "duplicate data", status: "error" }
        const missing = mandatoryMissing(record, index)
        if (missing !== undefined) return missing
        const denied = writeDenied("Create")
        if (denied !== undefined) return denied
        const id = this.newId()
        store.set(id, { ...record, id, Created_Time: now, Modified_Time: now, Owner: owner ?? by })
        ran(id, "create")
        return success(id, "record added", sub === "upsert" ? { action: "insert", duplicate_field: null } : {})
      })
    } else if (method === "PUT" && sub === undefined) {
      answers = data.map((record, index) => {
        const id = typeof record["id"] === "string" ? record["id"] : ""
        const existing = store.get(id)
        if (existing === undefined) return { code: "INVALID_DATA", details: { api_name: "id" }, message: "the related id given seems to be invalid", status: "error" }
        const unknown = unknownField(record)
        if (unknown !== undefined) return notAField(unknown)
        const bad = fieldOk(record)
        if (bad !== undefined) return invalid(bad)
        const long = tooLong(record, index)
        if (long !== undefined) return long
        const owner = ownerOf(record)
        if (owner === "invalid") return invalidOwner
        const denied = writeDenied("Edit")
        if (denied !== undefined) return denied
        store.set(id, { ...existing, ...record, id, Modified_Time: now, Owner: owner ?? existing["Owner"] })
        ran(id, "edit")
        return success(id, "record updated")
      })
    } else {
      return error(400, "INVALID_URL_PATTERN", "Please check if the URL trying to access is a correct one")
    }
    if (this.faults[0] === "drop") {
      this.faults.shift()
      response.socket?.destroy()
      return
    }
    const failures = answers.filter((a) => a["status"] !== "success").length
    const hold = this.hold
    if (hold !== undefined) {
      this.hold = undefined
      hold.markWritten()
      return hold.released.then(() => {
        if (!response.destroyed) sendJson(response, failures === 0 ? 201 : 207, { data: answers })
      })
    }
    sendJson(response, failures === 0 ? (method === "POST" ? 201 : 200) : failures === answers.length ? 400 : 207, { data: answers })
  }
}
