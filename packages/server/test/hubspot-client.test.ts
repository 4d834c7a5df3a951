/**
 * HubSpot's client against the local HubSpot fake, on the store this run tests (SQLite, or Postgres with
 * PARLEY_TEST_STORE=postgres): install and callback at the date-versioned token API, merges by property
 * label with the owner's name, a linked live text as a communication and an AI call as a call, 50
 * concurrent calls as the token lapses costing one refresh, 429 (both policies), 403, 5xx, idempotent
 * creation after a dropped connection, batched write-back, a refused refresh token and another user.
 */
import { Crm } from "@parley/core/domain"
import { ConfigProvider, Effect, Either, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.js"
import * as HubSpotConfig from "../src/crm/hubspot/HubSpotConfig.js"
import * as HubSpotConnect from "../src/crm/hubspot/HubSpotConnect.js"
import * as HubSpotConnections from "../src/crm/hubspot/HubSpotConnections.js"
import * as HubSpotRecords from "../src/crm/hubspot/HubSpotRecords.js"
import * as HubSpotSession from "../src/crm/hubspot/HubSpotSession.js"
import * as HubSpotSetup from "../src/crm/hubspot/HubSpotSetup.js"
import { DatabaseLive } from "../src/store/Database.js"
import * as SecretBox from "../src/store/SecretBox.js"
import * as BuiltInCrm from "../src/crm/builtin/BuiltInCrm.js"
import * as SqlOrganisations from "../src/store/SqlOrganisations.js"
import { Organisations } from "@parley/core/domain"
import { HubSpotFake } from "./support/fakes/HubSpotFake.js"
import { openOrganisation } from "./support/organisations.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"

const ORG = "org_hubspot"

type Services = Crm.Crm | HubSpotConnections.HubSpotConnections | HubSpotConfig.HubSpotConfig | ServerConfig | Organisations.Organisations

describe("HubSpot client against the fake", () => {
  let db: TestDatabase
  let fake: HubSpotFake
  let runtime: ManagedRuntime.ManagedRuntime<Services, unknown>
  let session: HubSpotSession.HubSpotSessionService
  let records: ReturnType<typeof HubSpotRecords.make>
  const run = <A, E>(effect: Effect.Effect<A, E, Services>) => runtime.runPromise(effect)
  const attempt = <A>(effect: Effect.Effect<A, Crm.CrmError, Services>) => run(Effect.either(effect))
  let contactId = ""
  let dealId = ""

  const connect = async (options: { readonly switchOrg: boolean } = { switchOrg: false }) => {
    const started = await run(HubSpotConnect.start(ORG, options))
    const answer = await fetch(started.url, { redirect: "manual" })
    const back = new URL(answer.headers.get("location") ?? "")
    return run(Effect.either(Effect.flatMap(Crm.Crm, (builtIn) =>
      HubSpotConnect.complete(builtIn, { code: back.searchParams.get("code") ?? undefined, state: back.searchParams.get("state") ?? undefined }))))
  }

  beforeAll(async () => {
    fake = await HubSpotFake.start()
    db = await createTestDatabase()
    const config = ConfigProvider.fromMap(new Map([
      ["PARLEY_DATA_DIR", db.dataDir],
      ["PARLEY_PUBLIC_URL", "https://parley.example.test"],
      ...Object.entries(db.env)
    ]))
    const base = Layer.mergeAll(DatabaseLive, SecretBox.layer).pipe(Layer.provideMerge(ServerConfig.layer))
    const layer = Layer.mergeAll(BuiltInCrm.layer, HubSpotConnections.layer, SqlOrganisations.layer).pipe(
      Layer.provideMerge(base),
      Layer.provideMerge(HubSpotConfig.layerFrom({
        clientId: Option.some(fake.clientId),
        clientSecret: Option.some(Redacted.make(fake.clientSecret)),
        authUrl: fake.url,
        apiUrl: fake.url
      })),
      Layer.provide(Layer.setConfigProvider(config))
    )
    runtime = ManagedRuntime.make(layer)
    await run(Effect.flatMap(Organisations.Organisations, (o) => o.insert(openOrganisation(ORG, "HubSpot org"))))
    session = await run(Effect.flatMap(Crm.Crm, (builtIn) => HubSpotSession.make(builtIn)))
    records = HubSpotRecords.make(session, () => Effect.succeed(false))
    contactId = fake.addObject("contacts", { firstname: "Grace", lastname: "Hopper", phone: "+14155550123", hubspot_owner_id: "71001001" })
    dealId = fake.addObject("deals", { dealname: "Compilers", amount: "1200" })
  }, 60_000)

  afterAll(async () => {
    await runtime?.dispose()
    await fake?.stop()
    await db?.drop()
  })

  it("installs through the 2026-03 token API and connects the token's user and portal", async () => {
    const started = await run(HubSpotConnect.start(ORG, { switchOrg: false }))
    const url = new URL(started.url)
    expect(url.pathname).toBe("/oauth/authorize")
    expect(url.searchParams.get("redirect_uri")).toBe("https://parley.example.test/oauth/hubspot/callback")
    expect(url.searchParams.get("scope")?.split(" ")).toEqual(HubSpotConnect.SCOPES)
    const done = await connect()
    expect(Either.getOrThrow(done)).toMatchObject({ user: "ada@acme.test", hubId: String(fake.hubId) })
    expect(fake.requests.some((r) => r.path.startsWith("/oauth/v1"))).toBe(false)
    const connection = await run(Effect.flatMap(Crm.Crm, (c) => c.connection(ORG)))
    expect(connection).toMatchObject({ state: "connected", account: { id: "52001001", name: "ada@acme.test" } })
    // Tokens are sealed at rest.
    const rows = await db.query<{ refresh_token: string; access_token: string }>("SELECT refresh_token, access_token FROM hubspot_connections WHERE org_id = ?", [ORG])
    expect(rows[0]?.refresh_token.startsWith("enc:v1:")).toBe(true)
    expect(rows[0]?.access_token.startsWith("enc:v1:")).toBe(true)
    // A made-up code is refused at HubSpot, and its state is then used up.
    const replay = await run(Effect.either(Effect.flatMap(Crm.Crm, (builtIn) => HubSpotConnect.complete(builtIn, { code: "x", state: url.searchParams.get("state") ?? "" }))))
    expect(Either.isLeft(replay) && replay.left.message).toContain("BAD_AUTH_CODE")
    const again = await run(Effect.either(Effect.flatMap(Crm.Crm, (builtIn) => HubSpotConnect.complete(builtIn, { code: "x", state: url.searchParams.get("state") ?? "" }))))
    expect(Either.isLeft(again) && again.left.message).toContain("unknown, used or older than 10 minutes")
  })

  it("before crm setup a creation is SETUP_REQUIRED (HubSpot refuses the unknown parley_key); setup creates the properties once", async () => {
    const early = await attempt(records.recordAction({
      orgId: ORG, key: "before-setup", kind: "message", direction: "Outbound", type: "SMS", status: "Queued", line: "+14155550100",
      counterpart: "+14155550123", body: "too early", at: "2026-11-27T10:00:00.000Z", scheduledFor: null, botId: null, sentBy: null, record: null
    }))
    expect(Either.isLeft(early) && early.left).toMatchObject({ reason: "setup_required", field: "parley_key" })
    expect(fake.all("communications")).toEqual([])
    const first = await attempt(HubSpotSetup.setup(session, ORG))
    expect(Either.getOrThrow(first).created).toEqual(["calls.parley_key", "communications.parley_key", "communications.parley_status", "calls.parley_error", "communications.parley_error", "contacts.parley_sms_opt_out"])
    const second = await attempt(HubSpotSetup.setup(session, ORG))
    expect(Either.getOrThrow(second)).toMatchObject({ created: [], existing: ["calls.parley_key", "communications.parley_key", "communications.parley_status", "calls.parley_error", "communications.parley_error", "contacts.parley_sms_opt_out"] })
  })

  it("reads records with fields by label, the owner by name; Vendors is refused naming the module", async () => {
    const found = await attempt(records.findRecord(ORG, "Contacts", contactId, ["First name", "Owner", "Company name"]))
    expect(Option.getOrThrow(Either.getOrThrow(found))).toMatchObject({
      module: "Contacts",
      id: contactId,
      name: "Grace Hopper",
      phone: "+14155550123",
      fields: { "First name": "Grace", Owner: "Ada Admin", "Company name": "" }
    })
    expect(Option.isNone(Either.getOrThrow(await attempt(records.findRecord(ORG, "Deals", "999999", []))))).toBe(true)
    const vendors = await attempt(records.findRecord(ORG, "Vendors", "1", []))
    expect(Either.isLeft(vendors) && vendors.left).toMatchObject({ reason: "rejected", code: "MODULE_NOT_SUPPORTED" })
    expect(Either.isLeft(vendors) && vendors.left.field).toContain("Vendors")
  })

  const draft = (overrides: Partial<Crm.CrmActionDraft> = {}): Crm.CrmActionDraft => ({
    orgId: ORG,
    key: `key-${Math.random()}`,
    kind: "message",
    direction: "Outbound",
    type: "WhatsApp",
    status: "Queued",
    line: "+14155550100",
    counterpart: "+14155550123",
    body: "Hello Grace",
    at: "2026-11-27T10:00:00.000Z",
    scheduledFor: null,
    botId: null,
    sentBy: null,
    record: { module: "Deals", id: dealId },
    ...overrides
  })

  it("records a linked live text as a communication and an AI call as a call, associated with the record and the contact", async () => {
    const text = Option.getOrThrow(Either.getOrThrow(await attempt(records.recordAction(draft()))))
    const communication = fake.object("communications", text)
    expect(communication?.properties).toMatchObject({
      hs_communication_channel_type: "WHATS_APP",
      hs_communication_logged_from: "CRM",
      hs_communication_body: "Hello Grace",
      hs_timestamp: "2026-11-27T10:00:00.000Z",
      hubspot_owner_id: "71001001"
    })
    expect(communication?.associations).toEqual(expect.arrayContaining([
      { to: "deals", id: dealId, typeId: 85 },
      { to: "contacts", id: contactId, typeId: 81 }
    ]))
    const call = Option.getOrThrow(Either.getOrThrow(await attempt(records.recordAction(draft({ kind: "ai_call", type: "Call", body: "", record: { module: "Contacts", id: contactId } })))))
    expect(fake.object("calls", call)?.properties).toMatchObject({
      hs_call_direction: "OUTBOUND",
      hs_call_status: "QUEUED",
      hs_call_from_number: "+14155550100",
      hs_call_to_number: "+14155550123"
    })
    expect(fake.object("calls", call)?.associations).toEqual([{ to: "contacts", id: contactId, typeId: 194 }])
  })

  it("creates once across a dropped connection: the retry finds the object by its parley_key", async () => {
    const one = draft()
    fake.dropNextAfterCreate()
    const first = await attempt(records.recordAction(one))
    expect(Either.isLeft(first) && first.left.reason).toBe("unavailable")
    const second = Option.getOrThrow(Either.getOrThrow(await attempt(records.recordAction(one))))
    const key = HubSpotRecords.parleyKey(one.key)
    expect(fake.all("communications").filter((o) => o.properties["parley_key"] === key).map((o) => o.id)).toEqual([second])
  })

  it("50 concurrent calls as the token lapses refresh it once", async () => {
    fake.expireAccessTokens()
    const before = fake.refreshes
    const results = await Promise.all(Array.from({ length: 50 }, () => attempt(records.findRecord(ORG, "Contacts", contactId, ["First name"]))))
    expect(results.every(Either.isRight)).toBe(true)
    expect(fake.refreshes - before).toBe(1)
  })

  it("maps HubSpot's 429 (bounded retry of the ten-secondly limit, none of the daily one), 5xx and 403", async () => {
    fake.failNext(3, "TEN_SECONDLY_ROLLING")
    const busy = await attempt(records.findByPhone(ORG, "+14155550123"))
    expect(Either.isLeft(busy) && busy.left).toMatchObject({ reason: "busy", retryAfterSeconds: 10, code: "TEN_SECONDLY_ROLLING" })
    fake.failNext(2, "TEN_SECONDLY_ROLLING")
    expect(Either.isRight(await attempt(records.findByPhone(ORG, "+14155550123")))).toBe(true)
    fake.failNext(1, "DAILY")
    const calls = fake.crmCalls
    const daily = await attempt(records.findByPhone(ORG, "+14155550123"))
    expect(Either.isLeft(daily) && daily.left).toMatchObject({ reason: "busy", code: "DAILY" })
    expect(fake.crmCalls - calls).toBe(1)
    fake.failNext(1, 502)
    const down = await attempt(records.findByPhone(ORG, "+14155550123"))
    expect(Either.isLeft(down) && down.left.reason).toBe("unavailable")
    fake.narrowGrants("crm.objects.deals.read")
    const denied = await attempt(records.findRecord(ORG, "Deals", dealId, []))
    expect(Either.isLeft(denied) && denied.left).toMatchObject({ reason: "permission_denied", code: "MISSING_SCOPES" })
    const rows = await db.query<{ last_error_code: string }>("SELECT last_error_code FROM hubspot_connections WHERE org_id = ?", [ORG])
    expect(rows[0]?.last_error_code).toBe("MISSING_SCOPES")
  })

  it("writes back in batches of at most 100", async () => {
    const ids = Array.from({ length: 150 }, (_, i) => fake.addObject("calls", { hs_timestamp: "2026-11-27T10:00:00.000Z", hs_call_status: "QUEUED", hs_call_title: `c${i}` }))
    const before = fake.requests.filter((r) => r.path.endsWith("/batch/update")).length
    const result = await attempt(records.writeBack(ORG, ids.map((crmId) => ({ kind: "ai_call" as const, crmId, status: "Completed", body: "transcript", recordingUrl: "https://recordings.example/1.mp3", durationMs: 61_000 }))))
    expect(Either.isRight(result)).toBe(true)
    const batches = fake.requests.filter((r) => r.path.endsWith("/batch/update")).slice(before)
    expect(batches.map((r) => (JSON.parse(r.body) as { inputs: Array<unknown> }).inputs.length)).toEqual([100, 50])
    expect(fake.object("calls", ids[149] ?? "")?.properties).toMatchObject({ hs_call_status: "COMPLETED", hs_call_body: "transcript", hs_call_duration: "61000" })
  })

  it("marks the connection IDENTITY_CHANGED when the refreshed token belongs to another user, OAUTH_REQUIRED when refused", async () => {
    fake.addUser({ userId: 52_001_002, email: "bob@acme.test", firstName: "Bob", lastName: "B", ownerId: "71001002" })
    fake.switchTokensTo(52_001_002)
    fake.expireAccessTokens()
    const changed = await attempt(records.findByPhone(ORG, "+14155550123"))
    expect(Either.isLeft(changed) && changed.left.reason).toBe("identity_changed")
    expect(await run(Effect.flatMap(Crm.Crm, (c) => c.connection(ORG)))).toMatchObject({ state: "identity_changed" })
    fake.switchTokensTo(52_001_001)
    expect(Either.isRight(await connect())).toBe(true)
    fake.revokeAll()
    const lapsed = await attempt(records.findByPhone(ORG, "+14155550123"))
    expect(Either.isLeft(lapsed) && lapsed.left.reason).toBe("oauth_required")
    expect(await run(Effect.flatMap(Crm.Crm, (c) => c.connection(ORG)))).toMatchObject({ state: "disconnected" })
  })

  it("refuses another portal without --switch-org, and disconnecting revokes the grant", async () => {
    expect(Either.isRight(await connect())).toBe(true)
    await db.query("UPDATE hubspot_connections SET hub_id = ? WHERE org_id = ?", ["11111", ORG])
    const refused = await connect()
    expect(Either.isLeft(refused) && refused.left._tag === "HubSpotConnectFailed" && refused.left.status).toBe(409)
    expect(Either.isRight(await connect({ switchOrg: true }))).toBe(true)
    const live = fake.liveGrants
    expect(await run(HubSpotConnect.disconnect(ORG))).toBe(true)
    expect(fake.liveGrants).toBe(live - 1)
  })
})
