/**
 * An organisation's provider settings as an attacker uses them (issue 35, item 16): an API base pointed at
 * an internal service on loopback, a metadata address or a private network. Parley's connections to
 * providers pass the webhook deliveries' address policy, decided on the address each connection reaches
 * (a name that resolves to loopback included); an error answer's body reaches a record only as a bounded,
 * provider-shaped message; the console accepts only the provider's own hosts as an API base.
 */
import { createServer, type Server } from "node:http"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkSettings } from "../src/providers/ProviderSettings.js"
import { PROVIDERS } from "../src/providers/Registry.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"
import { PN1 } from "./support/demo.js"

const SECRET = "INTERNAL-SERVICE-SECRET"
const ACCOUNT_SID = `AC${"0".repeat(32)}`

interface ActionRecord {
  readonly status?: string | null
  readonly errorMessage?: string | null
}

/** The "internal service": counts what reaches it, answers with its secrets. */
const startInternal = async () => {
  const hits: Array<string> = []
  const server: Server = createServer((request, response) => {
    hits.push(request.url ?? "")
    if ((request.url ?? "").startsWith("/html")) {
      response.writeHead(400, { "content-type": "text/html" })
      return response.end(`<html><body>${SECRET}: the admin panel</body></html>`)
    }
    response.writeHead(400, { "content-type": "application/json" })
    response.end(JSON.stringify({ code: 21211, message: `${SECRET} ${"x".repeat(5000)}`, more_info: SECRET }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return { hits, port, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

describe("provider API bases and the address policy", () => {
  let internal: Awaited<ReturnType<typeof startInternal>>
  let strict: TestServer
  let strictDemo: DemoSummary
  let allowing: TestServer
  let allowingDemo: DemoSummary

  beforeAll(async () => {
    // The two servers share nothing, so they start side by side.
    const [startedInternal, startedStrict, startedAllowing] = await Promise.all([
      startInternal(),
      // The operator has not allowed loopback or private networks for provider connections.
      TestServer.start({ env: { PARLEY_PROVIDER_ALLOWED_NETWORKS: "", PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } }),
      // The test support's default: loopback allowed (the providers' fakes listen there).
      TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    ])
    internal = startedInternal
    strict = startedStrict
    allowing = startedAllowing
    const demos = await Promise.all([strict.demo(), allowing.demo()])
    strictDemo = demos[0]
    allowingDemo = demos[1]
  }, 180_000)

  afterAll(async () => {
    await strict?.dispose()
    await allowing?.dispose()
    await internal?.stop()
  })

  const sendThrough = async (server: TestServer, demo: DemoSummary, apiBase: string): Promise<ActionRecord> => {
    const set = await server.admin([
      "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", ACCOUNT_SID,
      "--auth-token", "a-token-of-the-organisation", "--api-base", apiBase
    ])
    expect(set.code, set.stderr).toBe(0)
    const response = await server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": `ssrf-${Date.now()}-${Math.random()}` },
      body: JSON.stringify({ fromNumberSid: PN1, to: "+14155550123", body: "Hello" })
    })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    const id = (JSON.parse(text) as { id: string }).id
    return readUntil(
      () => server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }).then((r) => r.json() as Promise<ActionRecord>),
      (record) => record.status === "Failed" || (record.errorMessage ?? "") !== "",
      4_000
    )
  }

  it.each([
    ["a loopback address", () => `http://127.0.0.1:${internal.port}/internal#`],
    ["a name that resolves to loopback", () => `http://localhost:${internal.port}/internal#`],
    ["an IPv4-mapped IPv6 loopback", () => `http://[::ffff:127.0.0.1]:${internal.port}/internal#`],
    ["the metadata service", () => "http://169.254.169.254/latest/meta-data#"],
    ["a private network", () => "http://10.255.255.1/internal#"]
  ])("a tenant's API base at %s is never connected to unless the operator allows it", async (_, base) => {
    const before = internal.hits.length
    const record = await sendThrough(strict, strictDemo, base())
    expect(internal.hits.length).toBe(before)
    expect(JSON.stringify(record)).not.toContain(SECRET)
  }, 60_000)

  it("where the operator allows loopback, an error answer reaches the record bounded, and a non-JSON body not at all", async () => {
    const json = await sendThrough(allowing, allowingDemo, `http://127.0.0.1:${internal.port}/internal#`)
    expect(json.status).toBe("Failed")
    // The provider's message, cut to 300 characters (the client may name the provider and code around it).
    expect(json.errorMessage).toContain(SECRET)
    expect((json.errorMessage ?? "").length).toBeLessThan(400)
    const html = await sendThrough(allowing, allowingDemo, `http://127.0.0.1:${internal.port}/html#`)
    expect(html.status).toBe("Failed")
    expect(html.errorMessage ?? "").not.toContain(SECRET)
    expect(html.errorMessage).toBe("Twilio answered HTTP 400.")
  }, 60_000)

  it("the console (an organisation's administrator) may set an API base only on the provider's own hosts", () => {
    for (const provider of PROVIDERS) {
      const base = (apiBase: string) =>
        checkSettings(provider, { apiBase, accountSid: ACCOUNT_SID, authToken: "t", apiKey: "k" }, "organisation")
      for (const foreign of ["http://127.0.0.1:9/x", "https://169.254.169.254", "https://evil.example", `http://${new URL(provider.defaultApiBase).host}`]) {
        const refused = base(foreign)
        expect(Either.isLeft(refused), `${provider.name} ${foreign}`).toBe(true)
        if (Either.isLeft(refused)) expect(refused.left.field).toBe("apiBase")
      }
      const own = base(provider.defaultApiBase)
      expect(Either.isLeft(own) ? own.left.field : "accepted", provider.name).not.toBe("apiBase")
    }
  })
})
