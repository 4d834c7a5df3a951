// Webhook endpoint management in the domain, over the memory ports: URL rules, event lists, the secret
// answered once, organisation scoping, and the restrictions that keep an endpoint from hearing more than
// its key could read.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import {
  ALL_SCOPES,
  ApiKeys,
  CreateWebhookEndpointRequest,
  Crm,
  Demo,
  WebhookEndpoints,
  WebhookEndpointStore
} from "../src/internal.js"
import { callerFor, CoreTestLayer, failureOf, seedDemo } from "./harness.js"

const decodeRequest = Schema.decodeUnknownEither(CreateWebhookEndpointRequest)

const keyFor = (orgId: string, restrictions: { numberSids?: ReadonlyArray<string>; botIds?: ReadonlyArray<string> }) =>
  Effect.map(
    Effect.flatMap(ApiKeys.ApiKeys, (keys) =>
      keys.create({
        orgId,
        name: "k",
        mode: "live",
        scopes: ALL_SCOPES,
        numberSids: restrictions.numberSids ?? [],
        botIds: restrictions.botIds ?? [],
        expiresAt: null
      })),
    (created) => created.token
  )

describe("endpointUrl", () => {
  it("keeps http(s) URLs, normalised", () => {
    expect(WebhookEndpoints.endpointUrl(" https://Example.com/hook ")).toEqual(Either.right("https://example.com/hook"))
    expect(WebhookEndpoints.endpointUrl("http://127.0.0.1:5678/webhook/x")).toEqual(
      Either.right("http://127.0.0.1:5678/webhook/x")
    )
  })
  it("refuses other schemes, credentials in the URL, link-local hosts and non-URLs", () => {
    for (const bad of ["ftp://example.com/", "javascript:alert(1)", "https://u:p@example.com/", "https://u@example.com/",
      "http://169.254.169.254/latest/meta-data", "http://[fe80::1]/x", "example.com/hook", "",
      "http://[::ffff:169.254.169.254]/", "http://[::169.254.169.254]/", "http://metadata.google.internal/"]) {
      expect(Either.isLeft(WebhookEndpoints.endpointUrl(bad)), bad).toBe(true)
    }
  })
})

describe("event lists", () => {
  it("accepts event types or [\"*\"], refuses unknown types, empty lists and * beside types", () => {
    expect(Either.isRight(decodeRequest({ url: "https://x.example/", enabledEvents: ["message.sent"] }))).toBe(true)
    expect(Either.isRight(decodeRequest({ url: "https://x.example/", enabledEvents: ["*"] }))).toBe(true)
    for (const enabledEvents of [[], ["message.nope"], ["*", "message.sent"], "message.sent"]) {
      expect(Either.isLeft(decodeRequest({ url: "https://x.example/", enabledEvents })), JSON.stringify(enabledEvents))
        .toBe(true)
    }
  })
  it("merges repeats and orders by the contract, * first", () => {
    expect(WebhookEndpoints.normalisedEvents(["message.failed", "message.sent", "message.failed"])).toEqual([
      "message.sent",
      "message.failed"
    ])
  })
  it("an endpoint wants the types it names, or every type for *", () => {
    expect(WebhookEndpoints.wants(["message.delivered"], "message.delivered")).toBe(true)
    expect(WebhookEndpoints.wants(["message.delivered"], "message.sent")).toBe(false)
    expect(WebhookEndpoints.wants(["*"], "ai_call.completed")).toBe(true)
  })
})

describe("WebhookEndpoints", () => {
  it.effect("answers the secret at creation only; reads and lists carry none", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const caller = yield* callerFor(demo.keys.live)
      const service = yield* WebhookEndpoints.WebhookEndpoints
      const created = yield* service.create(caller, {
        url: "https://hooks.example.com/p",
        enabledEvents: ["message.delivered", "message.delivered"]
      })
      expect(created.secret).toMatch(/^whsec_/)
      expect(created.enabledEvents).toEqual(["message.delivered"])
      expect(created.createdAt).toBe("2026-03-02T10:00:00.000Z")
      const read = yield* service.get(caller, created.id)
      expect("secret" in read).toBe(false)
      expect(JSON.stringify(yield* service.list(caller))).not.toContain(created.secret)
      // The store keeps it: the server signs with it.
      const stored = yield* Effect.flatMap(WebhookEndpointStore.WebhookEndpointStore, (s) => s.find(demo.orgId, created.id))
      expect(stored._tag === "Some" && stored.value.secret).toBe(created.secret)
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("finds nothing of another organisation: 404 on read and delete, absent from its list", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const other = yield* Demo.seedDemo("org_other")
      const service = yield* WebhookEndpoints.WebhookEndpoints
      const mine = yield* service.create(yield* callerFor(demo.keys.live), { url: "https://a.example/", enabledEvents: ["*"] })
      const theirs = yield* callerFor(other.keys.live)
      expect((yield* failureOf(service.get(theirs, mine.id)))._tag).toBe("NotFound")
      expect((yield* failureOf(service.remove(theirs, mine.id)))._tag).toBe("NotFound")
      expect(yield* service.list(theirs)).toEqual([])
      const removed = yield* service.remove(yield* callerFor(demo.keys.live), mine.id)
      expect(removed).toMatchObject({ id: mine.id, deleted: true })
      expect((yield* failureOf(service.get(yield* callerFor(demo.keys.live), mine.id)))._tag).toBe("NotFound")
    }).pipe(Effect.provide(CoreTestLayer)))

  it.effect("refuses keys restricted to numbers or bots, and accounts that do not see every action", () =>
    Effect.gen(function*() {
      const demo = yield* seedDemo
      const service = yield* WebhookEndpoints.WebhookEndpoints
      const request = { url: "https://a.example/", enabledEvents: ["*" as const] }
      for (const restriction of [{ numberSids: [demo.numbers[0]!.sid] }, { botIds: ["bot_sales"] }]) {
        const caller = yield* callerFor(yield* keyFor(demo.orgId, restriction))
        expect((yield* failureOf(service.create(caller, request)))._tag).toBe("ResourceDenied")
        expect((yield* failureOf(service.list(caller)))._tag).toBe("ResourceDenied")
      }
      expect((yield* failureOf(service.create(yield* callerFor(demo.keys.live), { ...request, url: "ftp://x/" })))._tag)
        .toBe("InvalidRequest")
      yield* Effect.flatMap(Crm.Crm, (crm) =>
        crm.setConnection(demo.orgId, {
          state: "connected",
          account: { id: "crm_user_own", name: "Own Only", permissions: { ...Crm.FULL_PERMISSIONS, actionsView: "own" } }
        }))
      const ownOnly = yield* callerFor(demo.keys.live)
      expect((yield* failureOf(service.create(ownOnly, request)))._tag).toBe("CrmPermissionDenied")
    }).pipe(Effect.provide(CoreTestLayer)))
})
