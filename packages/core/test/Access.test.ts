// Organisation access on every request: subscription, pilot gate, CRM
// connection, seat; the executing CRM account (switched for every key at once
// on reconnect); and scope enforcement.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  ALL_SCOPES,
  Actions,
  ApiKeys,
  Caller,
  Crm,
  Organisations,
  type Scope,
  Scopes
} from "../src/internal.js"
import { callerFor, CoreTestLayer, seedDemo } from "./harness.js"

const OTHER_ACCOUNT: Crm.CrmAccount = { id: "crm_user_other", name: "Olive Other", permissions: Crm.FULL_PERMISSIONS }

const updateOrg = (patch: Organisations.OrganisationPatch) =>
  Effect.flatMap(Organisations.Organisations, (orgs) => orgs.update("org_demo", patch)).pipe(
    Effect.map(Option.getOrThrow)
  )

const setConnection = (connection: Crm.CrmConnection) =>
  Effect.flatMap(Crm.Crm, (crm) => crm.setConnection("org_demo", connection))

describe("organisation access", () => {
  it.effect("an active, connected organisation resolves the caller with its organisation and account", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      expect(caller.orgId).toBe("org_demo")
      expect(caller.organisation.id).toBe("org_demo")
      expect(caller.account.id).toBe("crm_user_demo")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an inactive subscription is SubscriptionInactive on the next request, for every key", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* callerFor(demo.keys.live)
      yield* updateOrg({ subscriptionActive: false })
      for (const token of [demo.keys.live, demo.keys.test]) {
        const error = yield* Effect.flip(callerFor(token))
        expect(error._tag).toBe("SubscriptionInactive")
        expect(error.message).toContain("subscription")
      }
      yield* updateOrg({ subscriptionActive: true })
      expect((yield* callerFor(demo.keys.live)).orgId).toBe("org_demo")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a closed pilot gate is PilotPending", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* updateOrg({ pilotOpen: false })
      const error = yield* Effect.flip(callerFor(demo.keys.test))
      expect(error._tag).toBe("PilotPending")
      expect(error.message).toContain("pilot")
      yield* updateOrg({ pilotOpen: true })
      expect((yield* callerFor(demo.keys.test)).mode).toBe("test")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a disconnected CRM account is OAuthRequired", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* setConnection({ state: "disconnected" })
      const error = yield* Effect.flip(callerFor(demo.keys.live))
      expect(error._tag).toBe("OAuthRequired")
      expect(error.message).toContain("CRM OAuth setup")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("a CRM account whose identity changed is IdentityChanged", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* setConnection({ state: "identity_changed", account: OTHER_ACCOUNT })
      const error = yield* Effect.flip(callerFor(demo.keys.live))
      expect(error._tag).toBe("IdentityChanged")
      expect(error.message).toContain("Reconnect")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("an inactive seat is SeatInactive", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* updateOrg({ seatActive: false })
      const error = yield* Effect.flip(callerFor(demo.keys.live))
      expect(error._tag).toBe("SeatInactive")
      expect(error.message).toContain("seat")
      yield* updateOrg({ seatActive: true })
      expect((yield* callerFor(demo.keys.live)).mode).toBe("live")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("the documented order: subscription, then pilot, then CRM connection, then seat", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* updateOrg({ subscriptionActive: false, pilotOpen: false, seatActive: false })
      yield* setConnection({ state: "disconnected" })
      const tags: Array<string> = []
      tags.push((yield* Effect.flip(callerFor(demo.keys.live)))._tag)
      yield* updateOrg({ subscriptionActive: true })
      tags.push((yield* Effect.flip(callerFor(demo.keys.live)))._tag)
      yield* updateOrg({ pilotOpen: true })
      tags.push((yield* Effect.flip(callerFor(demo.keys.live)))._tag)
      yield* setConnection({ state: "connected", account: OTHER_ACCOUNT })
      tags.push((yield* Effect.flip(callerFor(demo.keys.live)))._tag)
      expect(tags).toEqual(["SubscriptionInactive", "PilotPending", "OAuthRequired", "SeatInactive"])
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("reconnecting a different CRM account switches the executing account for every existing key", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const restricted = yield* Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
        keys.create({
          orgId: "org_demo",
          name: "restricted",
          mode: "live",
          scopes: ["messages:read"],
          numberSids: ["PN00000000000000000000000000000001"],
          botIds: [],
          expiresAt: null
        }))
      const tokens = [demo.keys.live, demo.keys.test, restricted.token]
      for (const token of tokens) expect((yield* callerFor(token)).account.id).toBe("crm_user_demo")
      yield* setConnection({ state: "connected", account: OTHER_ACCOUNT })
      for (const token of tokens) {
        const caller = yield* callerFor(token)
        expect(caller.account).toEqual(OTHER_ACCOUNT)
      }
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("actions created after a reconnect run as (and are owned by) the new account", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* setConnection({ state: "connected", account: OTHER_ACCOUNT })
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const { ack } = yield* actions.createMessage(caller, {
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        body: "hello",
        channel: "SMS"
      }, "after-reconnect")
      const record = yield* actions.get(caller, "message", ack.id)
      expect(record.owner).toEqual({ id: OTHER_ACCOUNT.id, name: OTHER_ACCOUNT.name })
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("requests run under the connected account's current permissions", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      yield* setConnection({
        state: "connected",
        account: { ...OTHER_ACCOUNT, permissions: { ...Crm.FULL_PERMISSIONS, actionsWrite: false } }
      })
      const caller = yield* callerFor(demo.keys.live)
      const actions = yield* Actions.Actions
      const error = yield* Effect.flip(actions.createMessage(caller, {
        to: "+14155550123",
        fromNumberSid: demo.numbers[0]!.sid,
        body: "hello",
        channel: "SMS"
      }, "read-only-account"))
      expect(error._tag).toBe("CrmPermissionDenied")
      expect(error.message).toContain(OTHER_ACCOUNT.name)
    }).pipe(Effect.provide(CoreTestLayer)))
})

describe("scopes", () => {
  const callerWithScopes = (scopes: ReadonlyArray<Scope>) =>
    Effect.gen(function*() {
      yield* seedDemo
      const { token } = yield* Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
        keys.create({
          orgId: "org_demo",
          name: "scoped",
          mode: "live",
          scopes,
          numberSids: [],
          botIds: [],
          expiresAt: null
        }))
      return yield* callerFor(token)
    })

  for (const missing of ALL_SCOPES) {
    it.effect(`a key without ${missing} fails requireScope("${missing}") with ScopeMissing, and passes the others`, () =>
      Effect.gen(function*() {
        const caller = yield* callerWithScopes(ALL_SCOPES.filter((s) => s !== missing))
        const error = yield* Effect.flip(Effect.provideService(Scopes.requireScope(missing), Caller, caller))
        expect(error._tag).toBe("ScopeMissing")
        expect(error.message).toContain(missing)
        for (const granted of ALL_SCOPES.filter((s) => s !== missing)) {
          yield* Effect.provideService(Scopes.requireScope(granted), Caller, caller)
        }
      }).pipe(Effect.provide(CoreTestLayer)))
  }

  it.effect("a key with no scopes fails every scope; a key with all scopes passes every scope", () =>
    Effect.gen(function*() {
      const none = yield* callerWithScopes([])
      for (const scope of ALL_SCOPES) {
        const exit = yield* Effect.exit(Effect.provideService(Scopes.requireScope(scope), Caller, none))
        expect(exit._tag).toBe("Failure")
      }
      const all = yield* callerWithScopes(ALL_SCOPES)
      for (const scope of ALL_SCOPES) {
        const exit = yield* Effect.exit(Effect.provideService(Scopes.requireScope(scope), Caller, all))
        expect(exit._tag).toBe("Success")
      }
    }).pipe(Effect.provide(CoreTestLayer)))
})
