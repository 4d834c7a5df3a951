/**
 * The authorization matrix, generated from the contract: every endpoint of
 * ParleyApi (read back with HttpApi.reflect, with the scope it declares) ×
 * every scope × test and live keys, then number- and bot-restricted keys and
 * another organisation's key against the demo organisation's ids. A new
 * endpoint fails the completeness check below until it has a probe here, so
 * none can ship without its authorization being tested.
 */
import { HttpApi } from "@effect/platform"
import { ALL_SCOPES, endpointScopes, ParleyApi, type Scope } from "@parley/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

const CLI_HEAVY = 300_000
const PN1 = "PN00000000000000000000000000000001"
const PN2 = "PN00000000000000000000000000000002"

type Mode = "test" | "live"

/** Every endpoint of the contract as `group.endpoint`, with its method and path. */
const contractEndpoints: ReadonlyArray<{ readonly name: string; readonly method: string; readonly path: string }> = (() => {
  const found: Array<{ name: string; method: string; path: string }> = []
  HttpApi.reflect(ParleyApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, group }) =>
      found.push({ name: `${group.identifier}.${endpoint.name}`, method: endpoint.method, path: endpoint.path })
  })
  return found
})()

interface Probe {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly body?: Record<string, unknown>
}

interface Fixtures {
  /** Live actions of the demo organisation, scheduled an hour ahead (still cancellable). */
  readonly messagePn1: string
  readonly messagePn2: string
  readonly callSalesPn1: string
  readonly callSupportPn1: string
  readonly callSalesPn2: string
  readonly conversationPn1: string
  readonly conversationPn2: string
  readonly webhook: string
  /** A number the demo organisation opted out. */
  readonly optOut: string
}

let counter = 0
const idem = () => `matrix-${Date.now()}-${++counter}`
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()

describe("authorization matrix (generated from the contract)", () => {
  let server: TestServer
  let demo: DemoSummary
  let fixtures: Fixtures
  const keys = new Map<string, string>()

  const call = (key: string, probe: Probe) =>
    server.fetch(probe.path, {
      key,
      method: probe.method,
      headers: probe.method === "POST" ? { "idempotency-key": idem() } : {},
      ...(probe.body === undefined ? {} : { body: JSON.stringify(probe.body) })
    })

  const created = async (key: string, path: string, body: Record<string, unknown>): Promise<string> => {
    const response = await call(key, { method: "POST", path, body })
    const text = await response.text()
    expect(response.status, text).toBeLessThan(300)
    return (JSON.parse(text) as { id: string }).id
  }

  const scheduledMessage = (from: string) =>
    created(demo.keys.live, "/api/v1/messages", { to: "+14155550123", fromNumberSid: from, body: "matrix", scheduledFor: inAnHour() })
  const scheduledCall = (from: string, botId: string) =>
    created(demo.keys.live, "/api/v1/ai-calls", {
      to: "+14155550123",
      fromNumberSid: from,
      botId,
      mode: "follow_script",
      scheduledFor: inAnHour()
    })
  const webhookEndpoint = () =>
    created(demo.keys.live, "/api/v1/webhook-endpoints", { url: "http://127.0.0.1:9/matrix", enabledEvents: ["*"] })
  let optOuts = 0
  /** A fresh number of the demo organisation's opt-out list. */
  const optedOut = async () => {
    const phone = `+1415557${String(++optOuts).padStart(4, "0")}`
    await server.adminJson(["optouts", "add", "--org", demo.orgId, "--phone", phone])
    return phone
  }

  /**
   * A request each endpoint answers with 2xx for a key with its scope and no restriction. Probes that change
   * what they touch (cancel, delete) make a fresh target each time.
   */
  const probes: Readonly<Record<string, () => Promise<Probe>>> = {
    "resources.listNumbers": async () => ({ method: "GET", path: "/api/v1/numbers" }),
    "resources.listBots": async () => ({ method: "GET", path: "/api/v1/bots" }),
    "resources.listTemplates": async () => ({ method: "GET", path: "/api/v1/templates" }),
    "conversations.listConversations": async () => ({ method: "GET", path: "/api/v1/conversations" }),
    "conversations.getConversation": async () => ({
      method: "GET",
      path: `/api/v1/conversations/${encodeURIComponent(fixtures.conversationPn1)}`
    }),
    "messages.createMessage": async () => ({
      method: "POST",
      path: "/api/v1/messages",
      body: { to: "+14155550123", fromNumberSid: PN1, body: "matrix" }
    }),
    "messages.listMessages": async () => ({ method: "GET", path: "/api/v1/messages" }),
    "messages.getMessage": async () => ({ method: "GET", path: `/api/v1/messages/${fixtures.messagePn1}` }),
    "messages.cancelMessage": async () => ({ method: "POST", path: `/api/v1/messages/${await scheduledMessage(PN1)}/cancel` }),
    "aiCalls.createAiCall": async () => ({
      method: "POST",
      path: "/api/v1/ai-calls",
      body: { to: "+14155550123", fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" }
    }),
    "aiCalls.listAiCalls": async () => ({ method: "GET", path: "/api/v1/ai-calls" }),
    "aiCalls.getAiCall": async () => ({ method: "GET", path: `/api/v1/ai-calls/${fixtures.callSalesPn1}` }),
    "aiCalls.cancelAiCall": async () => ({
      method: "POST",
      path: `/api/v1/ai-calls/${await scheduledCall(PN1, "bot_sales")}/cancel`
    }),
    "webhookEndpoints.createWebhookEndpoint": async () => ({
      method: "POST",
      path: "/api/v1/webhook-endpoints",
      body: { url: "http://127.0.0.1:9/matrix", enabledEvents: ["message.delivered"] }
    }),
    "webhookEndpoints.listWebhookEndpoints": async () => ({ method: "GET", path: "/api/v1/webhook-endpoints" }),
    "webhookEndpoints.getWebhookEndpoint": async () => ({ method: "GET", path: `/api/v1/webhook-endpoints/${fixtures.webhook}` }),
    "webhookEndpoints.deleteWebhookEndpoint": async () => ({
      method: "DELETE",
      path: `/api/v1/webhook-endpoints/${await webhookEndpoint()}`
    }),
    "optOuts.listOptOuts": async () => ({ method: "GET", path: "/api/v1/opt-outs" }),
    "optOuts.getOptOut": async () => ({ method: "GET", path: `/api/v1/opt-outs/${fixtures.optOut}` }),
    "optOuts.putOptOut": async () => ({ method: "PUT", path: "/api/v1/opt-outs/+14155558888", body: { channels: ["Call"] } }),
    "optOuts.deleteOptOut": async () => ({ method: "DELETE", path: `/api/v1/opt-outs/${await optedOut()}` })
  }

  const keyFor = (name: string) => {
    const key = keys.get(name)
    if (key === undefined) throw new Error(`no key ${name}`)
    return key
  }

  const mint = async (org: string, name: string, scopes: string, mode: Mode, extra: ReadonlyArray<string> = []) => {
    const made = await server.adminJson<{ key: string }>([
      "keys", "create", "--org", org, "--name", name, "--scopes", scopes, "--mode", mode, ...extra
    ])
    keys.set(name, made.key)
  }

  /** Runs at most `limit` tasks at once: every CLI call is a process start. */
  const inBatches = async (tasks: ReadonlyArray<() => Promise<void>>, limit = 3) => {
    for (let i = 0; i < tasks.length; i += limit) await Promise.all(tasks.slice(i, i + limit).map((task) => task()))
  }

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
    const tasks: Array<() => Promise<void>> = []
    for (const scope of ALL_SCOPES) {
      for (const mode of ["test", "live"] as const) {
        tasks.push(() => mint(demo.orgId, `only ${scope} ${mode}`, scope, mode))
        const others = ALL_SCOPES.filter((s) => s !== scope)
        tasks.push(() => mint(demo.orgId, `without ${scope} ${mode}`, others.join(","), mode))
      }
    }
    for (const mode of ["test", "live"] as const) {
      tasks.push(() => mint(demo.orgId, `numbers ${mode}`, "all", mode, ["--numbers", PN1]))
      tasks.push(() => mint(demo.orgId, `bots ${mode}`, "all", mode, ["--bots", "bot_sales"]))
    }
    await inBatches(tasks)

    const other = await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Matrix Other"])
    await server.adminJson(["crm", "connect", other.id, "--account", "Otto"])
    await inBatches((["test", "live"] as const).map((mode) => () => mint(other.id, `other ${mode}`, "all", mode)))

    const messagePn1 = await scheduledMessage(PN1)
    const messagePn2 = await scheduledMessage(PN2)
    const callSalesPn1 = await scheduledCall(PN1, "bot_sales")
    const callSupportPn1 = await scheduledCall(PN1, "bot_support")
    const callSalesPn2 = await scheduledCall(PN2, "bot_sales")
    const conversations = (await (await server.fetch("/api/v1/conversations", { key: demo.keys.live })).json()) as {
      items: ReadonlyArray<{ id: string; line?: string; phone: string }>
    }
    const conversationOn = (line: string) => {
      const found = conversations.items.find((c) => c.line === line && c.phone === "+14155550123")
      if (found === undefined) throw new Error(`no conversation on ${line}`)
      return found.id
    }
    fixtures = {
      messagePn1,
      messagePn2,
      callSalesPn1,
      callSupportPn1,
      callSalesPn2,
      conversationPn1: conversationOn("+14155550100"),
      conversationPn2: conversationOn("+14155550101"),
      webhook: await webhookEndpoint(),
      optOut: await optedOut()
    }
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  it("has a probe for every endpoint of the contract, and every endpoint declares a scope", () => {
    expect(contractEndpoints.length).toBeGreaterThan(10)
    for (const endpoint of contractEndpoints) {
      expect(Object.keys(probes), `${endpoint.name} (${endpoint.method} ${endpoint.path}) has no probe`).toContain(endpoint.name)
      expect(endpointScopes.get(endpoint.name), `${endpoint.name} declares no scope`).toBeDefined()
    }
  })

  describe.each(contractEndpoints.map((e) => [e.name, e] as const))("%s", (name) => {
    const scope = (): Scope => {
      const found = endpointScopes.get(name)
      if (found === undefined) throw new Error(`${name} declares no scope`)
      return found
    }
    const probe = () => {
      const make = probes[name]
      if (make === undefined) throw new Error(`${name} has no probe`)
      return make()
    }

    it.each(["test", "live"] as const)("%s keys: 403 SCOPE_MISSING without its scope, 2xx with only its scope", async (mode) => {
      const denied = await call(keyFor(`without ${scope()} ${mode}`), await probe())
      const deniedText = await denied.text()
      expect(denied.status, deniedText).toBe(403)
      expect((JSON.parse(deniedText) as { error: { code: string } }).error.code).toBe("SCOPE_MISSING")
      expect(JSON.parse(deniedText).error.requestId).toBe(denied.headers.get("x-request-id"))

      const allowed = await call(keyFor(`only ${scope()} ${mode}`), await probe())
      const allowedText = await allowed.text()
      expect(allowed.status, allowedText).toBeGreaterThanOrEqual(200)
      expect(allowed.status, allowedText).toBeLessThan(300)
    })

    it.each(["test", "live"] as const)("%s keys of another organisation never reach the demo organisation's data", async (mode) => {
      const response = await call(keyFor(`other ${mode}`), await probe())
      const text = await response.text()
      const demoIds = [fixtures.messagePn1, fixtures.callSalesPn1, fixtures.webhook]
      const target = await probe()
      if (/\/(messages|ai-calls|conversations|webhook-endpoints|opt-outs)\/[^/]+/.test(target.path) && target.method !== "PUT") {
        // a demo id, read, cancelled or deleted from elsewhere: as missing as an id that never existed
        expect(response.status, text).toBe(404)
        expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe("NOT_FOUND")
      } else if (name === "messages.createMessage" || name === "aiCalls.createAiCall") {
        // the demo organisation's number is not theirs
        expect(response.status, text).toBe(400)
        expect(text).toContain("fromNumberSid")
      } else {
        expect(response.status, text).toBeLessThan(300)
        for (const id of demoIds) expect(text).not.toContain(`"id":"${id}"`)
        expect(text).not.toContain(PN1)
        expect(text).not.toContain(fixtures.optOut)
      }
    })
  })

  describe("number-restricted keys (PN1 only)", () => {
    describe.each(["test", "live"] as const)("%s", (mode) => {
      const key = () => keyFor(`numbers ${mode}`)
      it("cannot read or cancel actions on another number, nor open its conversation (404)", async () => {
        for (const probe of [
          { method: "GET", path: `/api/v1/messages/${fixtures.messagePn2}` },
          { method: "POST", path: `/api/v1/messages/${fixtures.messagePn2}/cancel` },
          { method: "GET", path: `/api/v1/ai-calls/${fixtures.callSalesPn2}` },
          { method: "POST", path: `/api/v1/ai-calls/${fixtures.callSalesPn2}/cancel` },
          { method: "GET", path: `/api/v1/conversations/${encodeURIComponent(fixtures.conversationPn2)}` }
        ] as const) {
          const response = await call(key(), probe)
          expect(response.status, `${probe.method} ${probe.path}`).toBe(404)
        }
        expect((await call(key(), { method: "GET", path: `/api/v1/messages/${fixtures.messagePn1}` })).status).toBe(200)
      })
      it("cannot create from another number (403 RESOURCE_DENIED)", async () => {
        for (const probe of [
          { method: "POST", path: "/api/v1/messages", body: { to: "+14155550123", fromNumberSid: PN2, body: "x" } },
          {
            method: "POST",
            path: "/api/v1/ai-calls",
            body: { to: "+14155550123", fromNumberSid: PN2, botId: "bot_sales", mode: "follow_script" }
          }
        ] as const) {
          const response = await call(key(), probe)
          const text = await response.text()
          expect(response.status, text).toBe(403)
          expect(text).toContain("RESOURCE_DENIED")
        }
      })
      it("lists only what is on its number", async () => {
        const read = async (path: string) => {
          const response = await call(key(), { method: "GET", path })
          expect(response.status).toBe(200)
          return response.text()
        }
        expect(await read("/api/v1/numbers")).not.toContain(PN2)
        const conversations = await read("/api/v1/conversations")
        expect(conversations).not.toContain(fixtures.conversationPn2)
        expect(conversations).toContain(fixtures.conversationPn1)
        const messages = await read("/api/v1/messages")
        expect(messages).not.toContain(`"id":"${fixtures.messagePn2}"`)
        expect(messages).toContain(`"id":"${fixtures.messagePn1}"`)
        const calls = await read("/api/v1/ai-calls")
        expect(calls).not.toContain(`"id":"${fixtures.callSalesPn2}"`)
        expect(calls).toContain(`"id":"${fixtures.callSalesPn1}"`)
      })
    })
  })

  describe("bot-restricted keys (bot_sales only)", () => {
    describe.each(["test", "live"] as const)("%s", (mode) => {
      const key = () => keyFor(`bots ${mode}`)
      it("cannot read or cancel another bot's AI calls (404), nor start one (403)", async () => {
        for (const probe of [
          { method: "GET", path: `/api/v1/ai-calls/${fixtures.callSupportPn1}` },
          { method: "POST", path: `/api/v1/ai-calls/${fixtures.callSupportPn1}/cancel` }
        ] as const) {
          expect((await call(key(), probe)).status, `${probe.method} ${probe.path}`).toBe(404)
        }
        const start = await call(key(), {
          method: "POST",
          path: "/api/v1/ai-calls",
          body: { to: "+14155550123", fromNumberSid: PN1, botId: "bot_support", mode: "follow_script" }
        })
        expect(start.status).toBe(403)
        expect((await call(key(), { method: "GET", path: `/api/v1/ai-calls/${fixtures.callSalesPn1}` })).status).toBe(200)
        // texts have no bot
        expect((await call(key(), { method: "GET", path: `/api/v1/messages/${fixtures.messagePn2}` })).status).toBe(200)
      })
      it("lists only its bots and their calls", async () => {
        const bots = await (await call(key(), { method: "GET", path: "/api/v1/bots" })).text()
        expect(bots).toContain("bot_sales")
        expect(bots).not.toContain("bot_support")
        const calls = await (await call(key(), { method: "GET", path: "/api/v1/ai-calls" })).text()
        expect(calls).not.toContain(`"id":"${fixtures.callSupportPn1}"`)
        expect(calls).toContain(`"id":"${fixtures.callSalesPn1}"`)
      })
    })
  })
})
