/**
 * The callback gate before the body (issue 22, item 8), over raw sockets on
 * both stores: while one address floods the provider callback routes past its
 * bucket, a further callback from it is refused with 429 RATE_LIMITED and
 * `Retry-After: 1` as soon as its headers arrive, without waiting for a body
 * it never sends: a refused callback costs no body reading, decoding or
 * database work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rawRequest } from "./support/rawHttp.js"
import { TestServer } from "./support/server.js"

const HEAVY = 120_000
const PROBES = 10
/** Far below the body timeout: an answer this fast was given without the body. */
const ANSWER_WITHIN_MS = 1_500

const ROUTES = [
  { path: "/providers/twilio/status?org=org_demo&action=1", type: "application/x-www-form-urlencoded", body: "MessageSid=SMforged&MessageStatus=delivered" },
  { path: "/providers/vapi/events?org=org_demo", type: "application/json", body: JSON.stringify({ message: { type: "status-update" } }) },
  { path: "/providers/retell/events?org=org_demo", type: "application/json", body: JSON.stringify({ event: "call_started" }) },
  { path: "/providers/twilio/inbound", type: "application/x-www-form-urlencoded", body: "From=%2B14155550123&To=%2B14155550100&Body=hi" }
]

describe("callback gate before the body", () => {
  let server: TestServer

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    await server.demo()
  }, HEAVY)
  afterAll(() => server?.dispose())

  it.each(ROUTES)("refuses a callback to $path past its address's bucket before reading its body", async (route) => {
    let flooding = true
    const refusedByFlood: Array<number> = []
    // Keeps this address's bucket empty: it refills at 50 a second, the loops ask far faster.
    const flood = Array.from({ length: 6 }, async () => {
      while (flooding) {
        const response = await fetch(`${server.baseUrl}${route.path}`, {
          method: "POST",
          headers: { "content-type": route.type, "x-twilio-signature": "Zm9yZ2Vk" },
          body: route.body
        })
        await response.arrayBuffer()
        refusedByFlood.push(response.status)
      }
    })
    try {
      const floodDeadline = Date.now() + 20_000
      while (!refusedByFlood.includes(429) && Date.now() < floodDeadline) await new Promise((r) => setTimeout(r, 10))
      expect(refusedByFlood, "the flood is refused with 429").toContain(429)
      const answers = []
      for (let i = 0; i < PROBES; i++) {
        // The headers announce a body that is never sent.
        const outcome = await rawRequest(server.port, {
          head: `POST ${route.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${route.type}\r\n` +
            `Content-Length: ${Buffer.byteLength(route.body)}\r\n\r\n`,
          timeoutMs: ANSWER_WITHIN_MS
        })
        answers.push(outcome)
      }
      const refused = answers.flatMap((a) => a._tag === "Answered" && a.answer.status === 429 ? [a.answer] : [])
      // One may land just after a token came back (admitted, it then waits for its body); most cannot.
      expect(refused.length, JSON.stringify(answers.map((a) => a._tag))).toBeGreaterThanOrEqual(PROBES - 2)
      for (const answer of refused) {
        expect(answer.headers["retry-after"]).toBe("1")
        expect(answer.headers["x-request-id"]).toMatch(/^req_/)
        expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "RATE_LIMITED" } })
      }
    } finally {
      flooding = false
      await Promise.all(flood)
    }
  }, HEAVY)

})
