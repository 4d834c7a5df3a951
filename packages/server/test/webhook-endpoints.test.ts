/**
 * Webhook endpoint management over real HTTP (issue 13): the secret shown
 * once, lists without secrets, validation, organisation scoping (404), the
 * webhooks:read / webhooks:write scopes, restricted keys, endpoints shared
 * with the CLI, and real signed deliveries filtered by each endpoint's event
 * types, verified with the `standardwebhooks` package as receivers do.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, type CreatedKey } from "./support/demo.js"

interface Endpoint {
  readonly id: string
  readonly url: string
  readonly enabledEvents: ReadonlyArray<string>
  readonly description: string | null
  readonly status: string
  readonly disabledReason: string | null
  readonly createdAt: string
  readonly lastSuccessAt: string | null
}
interface Created extends Endpoint {
  readonly secret: string
}
interface Received {
  readonly headers: Record<string, string>
  readonly body: string
  readonly type: string
  readonly dataId: string
}

const flatten = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])))

/** A webhook receiver on 127.0.0.1 that answers 200 and keeps what it was sent. */
class Receiver {
  private constructor(private readonly server: Server, readonly url: string, readonly requests: Array<Received>) {}

  static async start(path: string): Promise<Receiver> {
    const requests: Array<Received> = []
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const payload = JSON.parse(body) as { readonly type: string; readonly data: { readonly id: string } }
        requests.push({ headers: flatten(req.headers), body, type: payload.type, dataId: payload.data.id })
        res.writeHead(200).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return new Receiver(server, `http://127.0.0.1:${port}${path}`, requests)
  }

  of(id: string) {
    return this.requests.filter((r) => r.dataId === id)
  }

  close() {
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

describe("webhook endpoints", () => {
  let server: TestServer
  let demo: DemoSummary
  let n = 0

  const createKey = (org: string, scopes: string, ...extra: ReadonlyArray<string>) =>
    server.adminJson<CreatedKey>([
      "keys", "create", "--org", org, "--name", `key ${++n}`, "--scopes", scopes, "--mode", "live", ...extra
    ])
  const create = (body: unknown, key: string = demo.keys.live) =>
    server.fetch("/api/v1/webhook-endpoints", { method: "POST", key, body: JSON.stringify(body) })
  const list = (key: string = demo.keys.live) => server.fetch("/api/v1/webhook-endpoints", { key })
  const get = (id: string, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/webhook-endpoints/${encodeURIComponent(id)}`, { key })
  const remove = (id: string, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/webhook-endpoints/${encodeURIComponent(id)}`, { method: "DELETE", key })
  const send = async () => {
    const response = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `endpoints-${++n}-${Date.now()}` },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: "filtered" })
    })
    return (await readJson<{ readonly id: string }>(response, 202)).id
  }

  beforeAll(async () => {
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_DISPATCH_POLL_MS: "20" }
    })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  it("answers the whsec_ secret once, at creation; the list and the read never show it", async () => {
    const created = await readJson<Created>(
      await create({ url: "https://hooks.example.com/parley", enabledEvents: ["message.delivered"], description: "n8n" }),
      201
    )
    expect(created.id).toMatch(/^wh_/)
    expect(created.secret).toMatch(/^whsec_/)
    expect(created).toMatchObject({
      url: "https://hooks.example.com/parley",
      enabledEvents: ["message.delivered"],
      description: "n8n",
      status: "enabled",
      disabledReason: null,
      lastSuccessAt: null
    })
    const listText = await (await list()).text()
    const readText = await (await get(created.id)).text()
    for (const text of [listText, readText]) {
      expect(text).toContain(created.id)
      expect(text).not.toContain(created.secret)
      expect(text).not.toContain("secret")
    }
    const { secret: _secret, ...shown } = created
    expect(JSON.parse(readText)).toEqual(shown)
    expect((JSON.parse(listText) as { items: ReadonlyArray<Endpoint> }).items).toContainEqual(shown)
  })

  it("refuses bad URLs and unknown or contradictory event types with 400 INVALID_REQUEST", async () => {
    const cases: ReadonlyArray<[unknown, string]> = [
      [{ url: "ftp://example.com/x", enabledEvents: ["*"] }, "url"],
      [{ url: "not a url", enabledEvents: ["*"] }, "url"],
      [{ url: "https://user:pw@example.com/x", enabledEvents: ["*"] }, "url"],
      [{ url: "http://169.254.169.254/latest", enabledEvents: ["*"] }, "url"],
      // The forms of the metadata address a regex on the host text let through (issue 22), and its names.
      [{ url: "http://[::ffff:169.254.169.254]/", enabledEvents: ["*"] }, "url"],
      [{ url: "http://[::169.254.169.254]/", enabledEvents: ["*"] }, "url"],
      [{ url: "http://[::ffff:a9fe:a9fe]/", enabledEvents: ["*"] }, "url"],
      [{ url: "http://metadata.google.internal/computeMetadata/v1/", enabledEvents: ["*"] }, "url"],
      [{ url: "http://[fd00:ec2::254]/latest", enabledEvents: ["*"] }, "url"],
      [{ url: "https://example.com/x", enabledEvents: ["message.exploded"] }, "enabledEvents"],
      [{ url: "https://example.com/x", enabledEvents: [] }, "enabledEvents"],
      [{ url: "https://example.com/x", enabledEvents: ["*", "message.sent"] }, "enabledEvents"],
      [{ url: "https://example.com/x" }, "enabledEvents"]
    ]
    for (const [body, field] of cases) {
      const error = await expectError(await create(body), 400, "INVALID_REQUEST")
      expect(error.message, JSON.stringify(body)).toContain(field)
    }
    // Nothing was made by the refused requests.
    const items = (await readJson<{ items: ReadonlyArray<Endpoint> }>(await list(), 200)).items
    expect(items.filter((e) => e.url.includes("example.com/x"))).toEqual([])
  })

  it("enforces webhooks:write and webhooks:read; keys made before keep what they had; all includes both", async () => {
    const before = await createKey(demo.orgId, "resources:read,messages:read,messages:write,calls:read,calls:write")
    await expectError(await create({ url: "https://a.example.com/", enabledEvents: ["*"] }, before.key), 403, "SCOPE_MISSING")
    await expectError(await list(before.key), 403, "SCOPE_MISSING")
    expect((await server.fetch("/api/v1/numbers", { key: before.key })).status).toBe(200)
    expect((await server.fetch("/api/v1/messages", { key: before.key })).status).toBe(200)

    const reader = await createKey(demo.orgId, "webhooks:read")
    expect((await list(reader.key)).status).toBe(200)
    await expectError(await create({ url: "https://a.example.com/", enabledEvents: ["*"] }, reader.key), 403, "SCOPE_MISSING")
    const writer = await createKey(demo.orgId, "webhooks:write")
    const made = await readJson<Created>(await create({ url: "https://a.example.com/", enabledEvents: ["*"] }, writer.key), 201)
    await expectError(await get(made.id, writer.key), 403, "SCOPE_MISSING")
    await expectError(await remove(made.id, reader.key), 403, "SCOPE_MISSING")
    expect((await remove(made.id, writer.key)).status).toBe(200)

    const all = await createKey(demo.orgId, "all")
    expect((await create({ url: "https://b.example.com/", enabledEvents: ["*"] }, all.key)).status).toBe(201)
    expect((await list(all.key)).status).toBe(200)
  }, CLI_HEAVY)

  it("refuses keys restricted to numbers or bots (an endpoint hears the whole organisation)", async () => {
    const byNumber = await createKey(demo.orgId, "all", "--numbers", demo.numbers[0]!.sid)
    const byBot = await createKey(demo.orgId, "all", "--bots", "bot_sales")
    for (const key of [byNumber.key, byBot.key]) {
      await expectError(await create({ url: "https://c.example.com/", enabledEvents: ["*"] }, key), 403, "RESOURCE_DENIED")
      await expectError(await list(key), 403, "RESOURCE_DENIED")
    }
  }, CLI_HEAVY)

  it("hides another organisation's endpoints: 404 on read and delete, absent from its list", async () => {
    const mine = await readJson<Created>(await create({ url: "https://mine.example.com/", enabledEvents: ["*"] }), 201)
    const other = await server.adminJson<{ id?: string; orgId?: string }>(["orgs", "create", "--name", "Other Org"])
    const otherOrg = other.id ?? other.orgId ?? ""
    await server.adminJson(["crm", "connect", otherOrg, "--account", "Olive Other", "--account-id", "crm_user_other"])
    const otherKey = await createKey(otherOrg, "all")
    await expectError(await get(mine.id, otherKey.key), 404, "NOT_FOUND")
    await expectError(await remove(mine.id, otherKey.key), 404, "NOT_FOUND")
    expect((await readJson<{ items: ReadonlyArray<Endpoint> }>(await list(otherKey.key), 200)).items).toEqual([])
    // Still there for its own organisation.
    expect((await get(mine.id)).status).toBe(200)
    await expectError(await get("wh_doesnotexist"), 404, "NOT_FOUND")
  }, CLI_HEAVY)

  it("shares endpoints with the CLI: each sees what the other made, with the same event filters", async () => {
    const fromCli = await server.cliJson<Created>([
      "webhooks", "add", "--org", demo.orgId, "--url", "https://cli.example.com/hook", "--events", "message.received,message.failed"
    ])
    expect(fromCli.enabledEvents).toEqual(["message.failed", "message.received"])
    const viaApi = await readJson<Endpoint>(await get(fromCli.id), 200)
    expect(viaApi).toMatchObject({ url: "https://cli.example.com/hook", enabledEvents: ["message.failed", "message.received"] })
    const fromApi = await readJson<Created>(await create({ url: "https://api.example.com/hook", enabledEvents: ["ai_call.completed"] }), 201)
    const listed = await server.cliJson<{ items: ReadonlyArray<Endpoint> }>(["webhooks", "list", "--org", demo.orgId])
    expect(listed.items.find((e) => e.id === fromApi.id)?.enabledEvents).toEqual(["ai_call.completed"])
    expect(JSON.stringify(listed)).not.toContain(fromApi.secret)
    const deleted = await server.cliJson<{ deleted: boolean }>(["webhooks", "delete", "--webhook", fromApi.id])
    expect(deleted.deleted).toBe(true)
    await expectError(await get(fromApi.id), 404, "NOT_FOUND")
    expect((await remove(fromCli.id)).status).toBe(200)
  }, CLI_HEAVY)

  describe("delivery", () => {
    let everything: Receiver
    let deliveredOnly: Receiver
    let all: Created
    let filtered: Created

    beforeAll(async () => {
      everything = await Receiver.start("/all")
      deliveredOnly = await Receiver.start("/delivered")
      all = await readJson<Created>(await create({ url: everything.url, enabledEvents: ["*"] }), 201)
      filtered = await readJson<Created>(
        await create({ url: deliveredOnly.url, enabledEvents: ["message.delivered", "ai_call.completed"] }),
        201
      )
    })
    afterAll(async () => {
      await everything?.close()
      await deliveredOnly?.close()
    })

    it("posts each endpoint only the event types it asked for, signed with its own secret", async () => {
      const id = await send()
      await until(async () => {
        const types = new Set(everything.of(id).map((r) => r.type))
        return types.has("message.queued") && types.has("message.sent") && types.has("message.delivered") &&
            deliveredOnly.of(id).length > 0
          ? true
          : undefined
      }, { what: "the message's events at both endpoints" })
      const got = deliveredOnly.of(id)
      expect(got.map((r) => r.type)).toEqual(["message.delivered"])
      expect(() => new Webhook(filtered.secret).verify(got[0]!.body, got[0]!.headers)).not.toThrow()
      expect(() => new Webhook(all.secret).verify(got[0]!.body, got[0]!.headers)).toThrow()
      for (const r of everything.of(id)) expect(() => new Webhook(all.secret).verify(r.body, r.headers)).not.toThrow()
      // The endpoint's record says when it last took a delivery (written once the receiver's answer is back,
      // which can be just after the receiver saw the request).
      const read = await until(async () => {
        const endpoint = await readJson<Endpoint>(await get(filtered.id), 200)
        return endpoint.lastSuccessAt === null ? undefined : endpoint
      }, { timeoutMs: 10_000, what: "the endpoint's lastSuccessAt" })
      expect(read.lastSuccessAt).not.toBeNull()
    })

    it("stops posting to a deleted endpoint", async () => {
      const deleted = await readJson<{ id: string; deleted: boolean }>(await remove(filtered.id), 200)
      expect(deleted).toEqual({ id: filtered.id, deleted: true })
      await expectError(await get(filtered.id), 404, "NOT_FOUND")
      await expectError(await remove(filtered.id), 404, "NOT_FOUND")
      const before = deliveredOnly.requests.length
      const id = await send()
      // The other endpoint hears the delivery, so the deleted one would have by then too.
      await until(async () => (everything.of(id).some((r) => r.type === "message.delivered") ? true : undefined))
      expect(deliveredOnly.requests.length).toBe(before)
    })
  })
})

describe("webhook endpoints on private addresses, with no allow-list", () => {
  let server: TestServer
  let demo: DemoSummary
  let receiver: Receiver

  beforeAll(async () => {
    receiver = await Receiver.start("/hook")
    server = await TestServer.start({
      env: {
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_DISPATCH_POLL_MS: "20",
        PARLEY_RATE_LIMIT_PER_MINUTE: "100000",
        PARLEY_WEBHOOK_ALLOWED_NETWORKS: ""
      }
    })
    demo = await server.demo()
  }, CLI_HEAVY)
  afterAll(async () => {
    await server?.dispose()
    await receiver?.close()
  })

  it("never posts to loopback through an IPv4-mapped IPv6 literal, and disables the endpoint saying why", async () => {
    const port = new URL(receiver.url).port
    const created = await readJson<Created>(
      await server.fetch("/api/v1/webhook-endpoints", {
        method: "POST",
        key: demo.keys.live,
        body: JSON.stringify({ url: `http://[::ffff:127.0.0.1]:${port}/hook`, enabledEvents: ["*"] })
      }),
      201
    )
    const sent = await server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": "private-1" },
      body: JSON.stringify({ to: "+14155550123", fromNumberSid: demo.numbers[0]!.sid, body: "to nobody" })
    })
    expect(sent.status).toBe(202)
    const disabled = await until(async () => {
      const endpoint = await readJson<Endpoint>(
        await server.fetch(`/api/v1/webhook-endpoints/${created.id}`, { key: demo.keys.live }),
        200
      )
      return endpoint.status === "disabled" ? endpoint : undefined
    }, { what: "the endpoint to be disabled" })
    expect(disabled.disabledReason).toMatch(/127\.0\.0\.1.*loopback.*PARLEY_WEBHOOK_ALLOWED_NETWORKS/)
    expect(receiver.requests).toEqual([])
  })
})
