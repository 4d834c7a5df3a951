/**
 * Clean logs: a scripted session against a server logging at debug (keys
 * created, texts sent, a webhook endpoint with its signing secret, Twilio
 * connected with its auth token, callbacks and inbound texts, requests that
 * fail), then its whole output is searched for every secret and personal
 * value the session used. Every request line carries its request id; phone
 * numbers show only their last 4 digits. The logger itself adds the request
 * id to lines written inside a request and redacts what slips into a line.
 */
import { CurrentRequestId } from "@parley/core/internal"
import { Effect, FiberRef, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { redactingJsonLogger } from "../src/Logging.js"
import { maskPhone, redact } from "../src/observability/Redaction.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { Scrape } from "./support/prometheus.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const CARRIER_TOKEN = "carrier-token-0123456789abcdef"
const METRICS_TOKEN = "metrics-token-0123456789abcdef"
const TO = "+14155557788"
const INBOUND_FROM = "+447700900123"
const BODIES = ["Secret body: the door code is 4471", "Second secret body, sent over Twilio", "Inbound secret body"]

interface LogLine {
  readonly message: unknown
  readonly logLevel: string
  readonly annotations: Record<string, unknown>
}

describe("logs of a scripted session", () => {
  let server: TestServer
  let demo: DemoSummary
  let twilio: TwilioFake
  const secrets: Array<string> = []

  beforeAll(async () => {
    twilio = await TwilioFake.start()
    server = await TestServer.start({
      env: {
        LOG_LEVEL: "debug",
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_CARRIER_AUTH_TOKEN: CARRIER_TOKEN,
        PARLEY_METRICS_TOKEN: METRICS_TOKEN
      }
    })
    demo = await server.demo()
  })

  afterAll(async () => {
    await server.dispose()
    await twilio.stop()
  })

  it("holds no key, secret, full phone number or message body, and a request id on every request line", async () => {
    const created = await server.adminJson<{ key: string }>([
      "keys", "create", "--org", demo.orgId, "--name", "logs", "--scopes", "messages:write,messages:read", "--mode", "live"
    ])
    const webhook = await server.adminJson<{ secret: string }>([
      "webhooks", "add", "--org", demo.orgId, "--url", "http://127.0.0.1:9/unreachable"
    ])
    secrets.push(demo.keys.live, demo.keys.test, created.key, webhook.secret, twilio.authToken, CARRIER_TOKEN, METRICS_TOKEN)

    const send = (key: string, body: string, idempotencyKey: string) =>
      server.fetch("/api/v1/messages", {
        method: "POST",
        key,
        headers: { "idempotency-key": idempotencyKey },
        body: JSON.stringify({ to: TO, fromNumberSid: demo.numbers[0]!.sid, body })
      })
    expect((await send(created.key, BODIES[0]!, "logs-1")).status).toBe(202)
    expect((await send(demo.keys.test, BODIES[0]!, "logs-2")).status).toBe(202)
    // Failures a client causes: a wrong key, a malformed body, a phone number in an unknown path and in a query.
    expect((await send(`${demo.keys.live}x`, BODIES[0]!, "logs-3")).status).toBe(401)
    expect((await server.fetch("/api/v1/messages", {
      method: "POST",
      key: created.key,
      headers: { "idempotency-key": "logs-4" },
      body: `{"to":"${TO}","body":"${BODIES[0]}"`
    })).status).toBe(400)
    expect((await server.fetch(`/api/v1/nope/${TO}`, { key: created.key })).status).toBe(404)
    expect((await server.fetch(`/api/v1/messages?number=${encodeURIComponent(TO)}`, { key: created.key })).status).toBe(200)
    expect((await server.fetch("/metrics", { key: `${METRICS_TOKEN}x` })).status).toBe(401)

    // Twilio connected: a text goes out through the fake, which calls back with signed status reports.
    await server.admin([
      "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", twilio.authToken, "--api-base", twilio.url
    ])
    const viaTwilio = await send(created.key, BODIES[1]!, "logs-5")
    expect(viaTwilio.status).toBe(202)
    const { id } = (await viaTwilio.json()) as { id: string }
    await until(async () => {
      const record = (await (await server.fetch(`/api/v1/messages/${id}`, { key: created.key })).json()) as {
        status: string
      }
      return ["Sent", "Delivered", "Undelivered", "Failed"].includes(record.status) ? true : undefined
    }, { timeoutMs: 30_000, what: "the Twilio text to leave" })

    // An inbound text with a bad signature.
    const inbound = await fetch(`${server.baseUrl}/carrier/inbound`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "bm90IGEgc2lnbmF0dXJl" },
      body: new URLSearchParams({ From: INBOUND_FROM, To: "+14155550100", Body: BODIES[2]! }).toString()
    })
    expect(inbound.status).toBe(401)

    // The provider's series moved: Parley's request to the fake, and the text finished under Twilio's name.
    const scraped = Scrape.parse(await (await server.fetch("/metrics", { key: METRICS_TOKEN })).text())
    expect(scraped.value("parley_provider_requests_total", { provider: "twilio", outcome: "answered_2xx" })).toBeGreaterThanOrEqual(1)
    const finished = async () => {
      const now = Scrape.parse(await (await server.fetch("/metrics", { key: METRICS_TOKEN })).text())
      return now.value("parley_actions_finished_total", { kind: "message", provider: "twilio" })
    }
    await until(async () => ((await finished()) >= 1 ? true : undefined), { timeoutMs: 30_000 }).catch(async () => {
      // What to look at when it does not: the record, the fake's callbacks and how Parley answered them.
      const record = await (await server.fetch(`/api/v1/messages/${id}`, { key: created.key })).text()
      const answered = twilio.callbacks.map((c) => `${c.params.find(([k]) => k === "MessageStatus")?.[1]}→${c.answered}`)
      const warnings = server.output.split("\n").filter((line) => /"logLevel":"(WARN|ERROR|FATAL)"/.test(line))
      throw new Error(
        `the Twilio text was not counted as finished under twilio: ${record}; callbacks ${answered.join(", ")}; ` +
          `warnings: ${warnings.slice(-10).join("\n")}`
      )
    })
    // Counted once, whoever finished it.
    expect(await finished()).toBe(1)

    const output = server.output
    const lines = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as LogLine)
    expect(lines.length).toBeGreaterThan(5)
    for (const secret of secrets) expect(output).not.toContain(secret)
    for (const body of BODIES) expect(output).not.toContain(body)
    for (const phone of [TO, INBOUND_FROM, TO.slice(1), INBOUND_FROM.slice(1), encodeURIComponent(TO)]) {
      expect(output).not.toContain(phone)
    }
    // (Request lines name the route template, not the path, so the number in the unknown path is not in
    // them at all; the logger's masking of what does slip into a line is checked below.)
    const requests = lines.filter((line) => line.message === "request")
    expect(requests.length).toBeGreaterThanOrEqual(9)
    for (const line of requests) expect(line.annotations["requestId"]).toMatch(/^req_|^[A-Za-z0-9._:-]+$/)
  })
})

describe("the redacting logger", () => {
  it("adds the request's id to lines written while it is served, and redacts what slips into a line", () => {
    const written: Array<string> = []
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void written.push(String(line)))
    try {
      Effect.runSync(
        Effect.annotateLogs(Effect.logWarning("calling +14155550123 with Bearer parley_live_abcDEF123"), {
          to: "+447700900123",
          secret: "whsec_c2VjcmV0LXNpZ25pbmcta2V5",
          nested: { numbers: ["+14155550100"] }
        }).pipe(
          (logged) => Effect.zipRight(FiberRef.set(CurrentRequestId, "req_test1"), logged),
          Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(redactingJsonLogger)))
        )
      )
    } finally {
      spy.mockRestore()
    }
    expect(written).toHaveLength(1)
    const line = JSON.parse(written[0]!) as LogLine
    expect(line.annotations["requestId"]).toBe("req_test1")
    expect(line.message).toBe("calling +*******0123 with Bearer [redacted]")
    expect(line.annotations["to"]).toBe("+********0123")
    expect(line.annotations["secret"]).toBe("whsec_[redacted]")
    expect(line.annotations["nested"]).toEqual({ numbers: ["+*******0100"] })
  })

  it("masks E.164 numbers, percent-encoded too, and leaves ids, times and short codes alone", () => {
    expect(maskPhone("+14155550123")).toBe("+*******0123")
    expect(maskPhone("%2B14155550123")).toBe("%2B*******0123")
    expect(redact("parley_test_abc and parley_live_XYZ")).toBe("parley_test_[redacted] and parley_live_[redacted]")
    for (const kept of ["req_abc123", "2026-11-25T17:44:43.000+00:00", "action 1234567", "89898", "durationMs 12.5"]) {
      expect(redact(kept)).toBe(kept)
    }
  })
})
