/**
 * The callback gate before the body (issue 22, item 8), over a raw socket on
 * both stores: callbacks pipelined from one address past its bucket (burst
 * 200) are refused, and the last one, whose headers announce a body that is
 * never sent, is still answered 429 RATE_LIMITED with `Retry-After: 1`: a
 * refused callback costs no body reading, decoding or database work. The
 * requests arrive in one write, so the bucket cannot refill in between,
 * however slow the machine.
 *
 * A forger's debt refuses only what cannot be genuine (issue 35, item 20):
 * while forged signed callbacks from 127.0.0.1 keep that address past its
 * budget, the callbacks Twilio (the fake, signing with the official package)
 * posts from the same address are all taken, and the forgeries still 429.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SOURCE_LIMIT, UNVERIFIED_COST } from "../src/providers/CallbackGate.js"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { until } from "./support/poll.js"
import { TestServer } from "./support/server.js"

const HEAVY = 120_000
/** Well past one address's burst. */
const FLOOD = SOURCE_LIMIT.burst + 300

const ROUTES = [
  { path: "/providers/twilio/status?org=org_demo&action=1", type: "application/x-www-form-urlencoded", body: "MessageSid=SMforged&MessageStatus=delivered" },
  { path: "/providers/vapi/events?org=org_demo", type: "application/json", body: JSON.stringify({ message: { type: "status-update" } }) },
  { path: "/providers/retell/events?org=org_demo", type: "application/json", body: JSON.stringify({ event: "call_started" }) },
  { path: "/providers/twilio/inbound", type: "application/x-www-form-urlencoded", body: "From=%2B14155550123&To=%2B14155550100&Body=hi" }
]

const STATUS_LINE = /HTTP\/1\.1 (\d{3}) /g

/** Writes `requests` in one go and collects the answers until `expected` status lines arrived or time ran out. */
const exchange = (port: number, requests: string, expected: number, timeoutMs: number) =>
  new Promise<string>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    let received = ""
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(received)
    }
    const timer = setTimeout(done, timeoutMs)
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1")
      if ((received.match(STATUS_LINE) ?? []).length >= expected && received.endsWith("}")) done()
    })
    socket.on("close", done)
    socket.on("error", done)
    socket.write(requests)
  })

describe("callback gate before the body", () => {
  let server: TestServer

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    await server.demo()
  }, HEAVY)
  afterAll(() => server?.dispose())

  it.each(ROUTES)("refuses a callback to $path past its address's bucket before reading its body", async (route) => {
    const head = `POST ${route.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${route.type}\r\n` +
      `Content-Length: ${Buffer.byteLength(route.body)}\r\n\r\n`
    // The last request's body is never sent. The wait ends as soon as every answer is in; 30 s was too short
    // for 501 pipelined requests at a load average of 30 on two cores (500 answers by then).
    const received = await exchange(server.port, `${head}${route.body}`.repeat(FLOOD) + head, FLOOD + 1, 90_000)
    const statuses = [...received.matchAll(STATUS_LINE)].map((m) => Number(m[1]))
    expect(statuses.length, `answers to ${FLOOD + 1} requests`).toBe(FLOOD + 1)
    expect(statuses).toContain(429)
    const last = received.slice(received.lastIndexOf("HTTP/1.1 "))
    expect(last).toMatch(/^HTTP\/1\.1 429 /)
    expect(last).toMatch(/\r\nretry-after: 1\r\n/i)
    expect(last).toMatch(/\r\nx-request-id: req_/i)
    expect(JSON.parse(last.slice(last.indexOf("\r\n\r\n") + 4))).toMatchObject({ error: { code: "RATE_LIMITED" } })
  }, HEAVY)
})

describe("callbacks that cannot be verified", () => {
  let server: TestServer

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    await server.demo()
  }, HEAVY)
  afterAll(() => server?.dispose())

  it("cost their address more: a forger gets a fifth of a genuine provider's callbacks looked at", async () => {
    const sent = 150
    const started = Date.now()
    const statuses: Array<number> = []
    // One after the other, so each refusal is charged before the next callback is admitted.
    for (let i = 0; i < sent; i++) {
      const answer = await fetch(`${server.baseUrl}/providers/twilio/status?org=org_demo&action=1`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "Zm9yZ2Vk" },
        body: "MessageSid=SMforged&MessageStatus=delivered"
      })
      await answer.body?.cancel()
      statuses.push(answer.status)
    }
    const seconds = (Date.now() - started) / 1000
    const looked = statuses.filter((s) => s === 401).length
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([])
    // The burst and what refilled meanwhile, each unverifiable callback taking UNVERIFIED_COST tokens.
    const allowed = (SOURCE_LIMIT.burst + SOURCE_LIMIT.perSecond * seconds) / UNVERIFIED_COST + 1
    expect(looked).toBeGreaterThan(0)
    expect(looked, `${looked} of ${sent} looked at in ${seconds.toFixed(2)} s`).toBeLessThanOrEqual(Math.ceil(allowed))
  }, HEAVY)
})

describe("genuine callbacks from an address a forger put in debt", () => {
  let server: TestServer
  let twilio: TwilioFake
  let orgId: string
  let key: string

  beforeAll(async () => {
    twilio = await TwilioFake.start({ stepMs: 30 })
    // Rechecks far off: a text reaches Delivered only through the callbacks under test.
    server = await TestServer.start({
      env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "600000" }
    })
    const demo = await server.demo()
    orgId = demo.orgId
    key = demo.keys.live
    const connected = await server.admin([
      "providers", "set", "--org", orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
      "--auth-token", twilio.authToken, "--api-base", twilio.url
    ])
    expect(connected.code, connected.stderr).toBe(0)
  }, HEAVY)
  afterAll(async () => {
    await server?.dispose()
    await twilio?.stop()
  })

  it("are all taken while the forgeries are refused 429", async () => {
    const forged: Array<number> = []
    let flooding = true
    const forger = async () => {
      while (flooding) {
        const answer = await fetch(`${server.baseUrl}/providers/twilio/status?org=${orgId}&action=1`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "Zm9yZ2Vk" },
          body: "MessageSid=SMforged&MessageStatus=delivered"
        })
        await answer.body?.cancel()
        forged.push(answer.status)
      }
    }
    const forgers = [forger(), forger(), forger()]
    try {
      await until(async () => forged.includes(429) ? true : undefined, { what: "the forger's address in debt" })
      const ids: Array<string> = []
      for (let i = 0; i < 8; i++) {
        const response = await server.fetch("/api/v1/messages", {
          key,
          method: "POST",
          headers: { "idempotency-key": `genuine-${i}-${Date.now()}` },
          body: JSON.stringify({ fromNumberSid: "PN00000000000000000000000000000001", to: `+1415555013${i}`, body: "hi" })
        })
        const text = await response.text()
        expect(response.status, text).toBe(202)
        ids.push((JSON.parse(text) as { id: string }).id)
      }
      // Every text's three callbacks (sending, sent, delivered) posted by the fake, each answered.
      await until(async () => twilio.messages.length === ids.length &&
          twilio.messages.every((m) => twilio.callbacksFor(m.sid).length >= 3) ? true : undefined,
        { what: "the fake's callbacks", timeoutMs: 30_000 })
    } finally {
      flooding = false
      await Promise.all(forgers)
    }
    const genuine = twilio.callbacks.map((callback) => callback.answered)
    expect(genuine.length).toBeGreaterThanOrEqual(24)
    expect(genuine.filter((status) => status !== 204), "genuine callbacks not taken").toEqual([])
    expect(forged.filter((status) => status !== 401 && status !== 429)).toEqual([])
    expect(forged.filter((status) => status === 429).length).toBeGreaterThan(forged.filter((s) => s === 401).length)
  }, HEAVY)
})
