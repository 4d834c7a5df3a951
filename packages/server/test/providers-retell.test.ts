/**
 * Real AI calls through Retell AI (issue 24), end to end without the internet,
 * held to the same guarantees as Vapi (providers-vapi.test.ts): a live key of
 * an organisation connected (`parley providers set --kind retell --api-base …`)
 * to a local fake of Retell's API (RetellFake, typed against `retell-sdk`).
 * Calls are created with the bot's agent (`override_agent_id`) from the
 * number itself (Retell numbers need no provider id), mode and purpose as
 * dynamic variables; Retell's webhooks, signed with the API key and sent to
 * the agent's webhook URL, move them to In Progress and Completed with the
 * transcript and recording, or to No Answer, Busy, Failed by the
 * disconnection reason. Unsigned, mis-signed, stale, duplicated, reordered
 * and forged webhooks change nothing they should not; an outage is waited
 * out, a lost answer reconciled and lost webhooks made up for by asking
 * Retell, without ever calling twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { symmetric } from "retell-sdk/lib/webhook_auth"
import { AiCallSuite, FINAL, LINE as FROM, PN1, RETELL, RETELL_AGENT as AGENT } from "./support/aiCallSuite.js"
import { RetellFake } from "./support/fakes/RetellFake.js"
import type { CliResult, DemoSummary, TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"

const HEAVY = 180_000
const FIVE_MINUTES = 5 * 60_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Retell counts any 2xx as delivered (its own example answers 204). */
const accepted = (answered: number | null) => answered !== null && answered >= 200 && answered < 300

describe("Retell", () => {
  let retell: RetellFake
  let server: TestServer
  let demo: DemoSummary
  const suite = new AiCallSuite(RETELL, { recheckMs: 5_000 })
  const { call, cliOk, connect: connectRetell, eventsOf, eventsUrl: events, idem, read, settle } = suite
  const placedTo = (to: string) => retell.calls.filter((c) => c.resource.to_number === to)
  const callIdFor = (to: string) => placedTo(to)[0]?.resource.call_id ?? ""
  const createsFor = (to: string) =>
    retell.requests.filter((r) =>
      r.method === "POST" && r.path === "/v2/create-phone-call" && JSON.stringify(r.body).includes(to)
    )
  /** A record that has Retell's call id but whose webhooks were all refused is still where the 201 left it. */
  const refusedAll = async (to: string, id: string) => {
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await retell.settled()
    const deliveries = retell.deliveriesFor(callIdFor(to))
    expect(deliveries.length).toBeGreaterThan(0)
    expect(deliveries.map((d) => d.delivery.answered)).toEqual(deliveries.map(() => 401))
    expect((await read(id)).status).toBe("Queued")
  }

  beforeAll(async () => {
    const started = await suite.start()
    retell = started.fake
    server = started.server
    demo = started.demo
  }, HEAVY)
  afterAll(suite.dispose)

  it("tells the administrator the webhook URL to paste into the Retell agent", async () => {
    const shown = await cliOk(["providers", "show", "--org", demo.orgId])
    expect(shown.stdout).toContain(`/providers/retell/events?org=${demo.orgId}`)
    expect(shown.stdout).not.toContain(retell.apiKey)
  }, HEAVY)

  it("places the call with the bot's agent from the number, and completes it with transcript and recording", async () => {
    const to = "+14155550301"
    const id = await call(to)
    const record = await settle(id)
    expect(record.status).toBe("Completed")
    const [created, ...more] = createsFor(to)
    expect(more).toHaveLength(0)
    expect(created?.authenticated).toBe(true)
    expect(created?.body).toMatchObject({
      from_number: FROM,
      to_number: to,
      override_agent_id: AGENT,
      retell_llm_dynamic_variables: { mode: "deliver_specific_message", purposeMessage: "Confirm tomorrow at 10" },
      metadata: { parleyActionId: id, parleyOrgId: demo.orgId }
    })
    const placed = placedTo(to)[0]?.resource
    expect(record.sid).toBe(placed?.call_id)
    expect(record.body).toContain("Confirm tomorrow at 10")
    expect(record.audioFileId).toBe(placed?.recording_url)
    expect(record.errorMessage ?? null).toBeNull()
    expect(await eventsOf(id)).toEqual(["ai_call.queued", "ai_call.started", "ai_call.completed"])
    await retell.settled()
    // Every webhook (call_started, call_ended, call_analyzed) was verified and accepted.
    const answered = retell.deliveriesFor(placed?.call_id ?? "").map((d) => [d.body.event, accepted(d.delivery.answered)])
    expect(answered).toEqual([["call_started", true], ["call_ended", true], ["call_analyzed", true]])
  }, HEAVY)

  it.each([
    [RetellFake.magic.agentHangsUp, "agent_hangup", "Completed"],
    [RetellFake.magic.noAnswer, "dial_no_answer", "No Answer"],
    [RetellFake.magic.voicemail, "voicemail_reached", "No Answer"],
    [RetellFake.magic.busy, "dial_busy", "Busy"],
    [RetellFake.magic.dialFails, "dial_failed", "Failed"]
  ] as const)("maps a call to %s, ended %s, onto %s", async (to, reason, status) => {
    const id = await call(to)
    const record = await settle(id)
    expect(placedTo(to)[0]?.resource.disconnection_reason).toBe(reason)
    expect(record.status).toBe(status)
    if (status === "Completed") {
      expect(record.errorMessage ?? null).toBeNull()
      expect((await eventsOf(id)).at(-1)).toBe("ai_call.completed")
    } else {
      expect(record.errorMessage).toBe(reason)
      expect((await eventsOf(id)).at(-1)).toBe("ai_call.failed")
    }
  }, HEAVY)

  it.each([
    ["error_llm_websocket_open", "+14155550311", "Failed"],
    ["no_concurrency_fallback", "+14155550312", "Failed"],
    ["ivr_reached", "+14155550313", "No Answer"],
    ["max_duration_reached", "+14155550314", "Completed"]
  ] as const)("maps the disconnection reason %s onto %s's status", async (reason, to, status) => {
    retell.endNextWith(reason)
    const id = await call(to)
    const record = await settle(id)
    expect(placedTo(to)[0]?.resource.disconnection_reason).toBe(reason)
    expect(record.status).toBe(status)
    expect(record.errorMessage ?? null).toBe(status === "Completed" ? null : reason)
  }, HEAVY)

  it.each([
    ["its webhooks", "+14155550321", false],
    ["asking Retell (its webhooks lost)", "+14155550322", true]
  ] as const)("places a call Retell ended concurrency_limit_reached again, told by %s", async (_by, to, lost) => {
    // Retell makes the call and ends it without dialling; its docs say to retry with backoff.
    retell.failNextWithConcurrencyLimit()
    if (lost) retell.tweakNextCallbacks({ signature: "none" })
    const id = await call(to)
    const record = await settle(id)
    expect(record.status).toBe("Completed")
    const [first, second, ...more] = placedTo(to)
    expect(more).toHaveLength(0)
    expect(first?.resource.disconnection_reason).toBe("concurrency_limit_reached")
    expect(second?.resource.disconnection_reason).toBe("user_hangup")
    expect(createsFor(to)).toHaveLength(2)
    expect(record.sid).toBe(second?.resource.call_id)
    expect(record.errorMessage ?? null).toBeNull()
    expect(await eventsOf(id)).toEqual(["ai_call.queued", "ai_call.started", "ai_call.completed"])
  }, HEAVY)

  it.each(["none", "wrong"] as const)("refuses webhooks with signature %s, changing nothing", async (signature) => {
    retell.tweakNextCallbacks({ signature })
    const to = signature === "none" ? "+14155550302" : "+14155550303"
    await refusedAll(to, await call(to))
  }, HEAVY)

  it("refuses webhooks signed more than 5 minutes ago, changing nothing", async () => {
    retell.signNextWebhooksAt(-(FIVE_MINUTES + 60_000))
    const to = "+14155550304"
    await refusedAll(to, await call(to))
  }, HEAVY)

  it("ignores duplicated and reordered webhooks: a completed call stays completed", async () => {
    retell.tweakNextCallbacks({ duplicate: true, reverse: true })
    const to = "+14155550305"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.status === "Completed")
    await retell.settled()
    const deliveries = retell.deliveriesFor(callIdFor(to))
    // Reversed and doubled: call_analyzed first, call_started last, each twice.
    expect(deliveries.map((d) => d.body.event)).toEqual([
      "call_analyzed", "call_analyzed", "call_ended", "call_ended", "call_started", "call_started"
    ])
    const record = await read(id)
    expect(record.status).toBe("Completed")
    expect(record.body).toContain("Confirm tomorrow at 10")
    expect(await eventsOf(id)).toEqual(["ai_call.queued", "ai_call.completed"])
  }, HEAVY)

  it("follows webhooks that arrive before Retell's answer to the create", async () => {
    retell.webhooksBeforeAnswerNext()
    const to = "+14155550306"
    const id = await call(to)
    const record = await settle(id)
    expect(record.status).toBe("Completed")
    expect(record.sid).toBe(callIdFor(to))
    expect(createsFor(to)).toHaveLength(1)
  }, HEAVY)

  it("waits out Retell being down and calls once when it is back", async () => {
    await retell.down()
    const to = "+14155550307"
    let id = ""
    try {
      id = await call(to)
      await sleep(1_500)
      expect((await read(id)).status).toBe("Queued")
    } finally {
      await retell.up()
    }
    expect((await settle(id)).status).toBe("Completed")
    expect(placedTo(to)).toHaveLength(1)
    expect(createsFor(to)).toHaveLength(1)
  }, HEAVY)

  it("completes a call whose webhooks were all lost, by asking Retell itself", async () => {
    retell.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550308"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    await server.restart("SIGKILL")
    const record = await readUntil(() => read(id), (r) => FINAL.has(r.status ?? ""), 60_000)
    expect(record.status).toBe("Completed")
    expect(record.body).toContain("Confirm tomorrow at 10")
    expect(record.audioFileId).toBe(placedTo(to)[0]?.resource.recording_url)
    expect(placedTo(to)).toHaveLength(1)
    // Completed by get-call, every webhook having been refused.
    expect(retell.requests.some((r) => r.method === "GET" && r.path === `/v2/get-call/${callIdFor(to)}`)).toBe(true)
    // Refused (401) or lost while Parley restarted: none taken.
    expect(retell.deliveriesFor(callIdFor(to)).some((d) => accepted(d.delivery.answered))).toBe(false)
  }, HEAVY)

  it("reconciles a creation whose answer was lost instead of calling twice", async () => {
    retell.dropNextAfterAccept()
    retell.tweakNextCallbacks({ signature: "none" })
    const to = "+14155550309"
    const id = await call(to)
    await readUntil(() => read(id), (r) => r.sid !== null && r.sid !== undefined)
    expect(placedTo(to)).toHaveLength(1)
    expect(createsFor(to)).toHaveLength(1)
    expect(retell.requests.some((r) => r.method === "POST" && r.path === "/v3/list-calls")).toBe(true)
    expect((await read(id)).sid).toBe(callIdFor(to))
  }, HEAVY)

  it("fails a call whose bot has no Retell agent id, saying how to add it", async () => {
    const to = "+14155550310"
    const response = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify({ to, fromNumberSid: PN1, botId: "bot_support", mode: "follow_script" })
    })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }
    const record = await settle(id)
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toContain("--provider-id")
    expect(createsFor(to)).toHaveLength(0)
  }, HEAVY)

  it("finds the organisation in the call's metadata when the webhook URL names none", async () => {
    retell.setWebhook(`${server.baseUrl}/providers/retell/events`, AGENT)
    try {
      const to = "+14155550315"
      const id = await call(to)
      expect((await settle(id)).status).toBe("Completed")
      await retell.settled()
      // Completed by the webhooks themselves, not by Parley asking Retell later.
      expect(retell.deliveriesFor(callIdFor(to)).map((d) => accepted(d.delivery.answered))).toEqual([true, true, true])
    } finally {
      retell.setWebhook(events(), AGENT)
    }
  }, HEAVY)

  describe("forged webhooks", () => {
    /** A webhook signed with `apiKey` at `at` by the official SDK's signer, as Retell signs it. */
    const post = async (body: unknown, url = events(), apiKey = retell.apiKey, at = Date.now()) => {
      const raw = JSON.stringify(body)
      return fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-retell-signature": await symmetric.sign(raw, apiKey, at) },
        body: raw
      })
    }
    const ended = (actionId: string, callId: string) => ({
      event: "call_ended",
      call: {
        call_id: callId,
        call_type: "phone_call",
        call_status: "ended",
        agent_id: AGENT,
        from_number: FROM,
        to_number: "+14155550399",
        disconnection_reason: "user_hangup",
        transcript: "Agent: forged",
        recording_url: "https://forged.invalid/recording.wav",
        metadata: { parleyActionId: actionId, parleyOrgId: demo.orgId }
      }
    })

    it("a signed webhook moves no call Retell never got, nor one under another call id", async () => {
      const scheduled = await call("+14155550321", { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() })
      const first = await post(ended(scheduled, "call_forged0000000000000000000"))
      expect(accepted(first.status), `answered ${first.status}`).toBe(true)
      expect((await read(scheduled)).status).toBe("Queued")
      retell.tweakNextCallbacks({ signature: "none" })
      const to = "+14155550322"
      const placed = await call(to)
      await readUntil(() => read(placed), (r) => r.sid !== null && r.sid !== undefined)
      const second = await post(ended(placed, "call_another000000000000000000"))
      expect(accepted(second.status), `answered ${second.status}`).toBe(true)
      const record = await read(placed)
      expect(record.status).toBe("Queued")
      expect(record.body).not.toContain("forged")
    }, HEAVY)

    it("answers the same 401 as other callbacks for an unknown organisation, a wrong key, a stale or missing signature", async () => {
      const body = ended("1", "call_some00000000000000000000")
      const raw = JSON.stringify(body)
      const answers = await Promise.all([
        post(body, events("org_does_not_exist")),
        post(body, events(), "not-the-key"),
        post(body, events(), retell.apiKey, Date.now() - FIVE_MINUTES - 60_000),
        post(body, events(), retell.apiKey, Date.now() + FIVE_MINUTES + 60_000),
        post(body, events(), retell.apiKey, Date.parse("2001-09-09T01:46:40Z")),
        fetch(events(), { method: "POST", headers: { "content-type": "application/json" }, body: raw }),
        // Another provider's callback route, for an organisation it cannot verify.
        fetch(`${server.baseUrl}/providers/vapi/events?org=org_does_not_exist`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ message: { type: "status-update", status: "ringing", call: { id: "x" } } })
        })
      ])
      const bodies = await Promise.all(answers.map(async (a) => {
        const json = await a.json() as { error: { code: string; message: string } }
        return [a.status, json.error.code, json.error.message]
      }))
      expect(bodies).toEqual(bodies.map(() => bodies[0]))
      expect(bodies[0]?.[0]).toBe(401)
    }, HEAVY)
  })

  describe("Vapi or Retell, one at a time", () => {
    /** What a `providers set` said, on either stream. */
    const said = (result: CliResult) => `${result.stdout}\n${result.stderr}`

    it("replaces Retell by Vapi and Vapi by Retell for the organisation's calls, saying so", async () => {
      const toVapi = await cliOk([
        "providers", "set", "--org", demo.orgId, "--kind", "vapi", "--api-key", "vapi-key-for-tests",
        "--webhook-secret", "vapi-secret-for-tests", "--api-base", "http://127.0.0.1:9"
      ])
      expect(said(toVapi)).toMatch(/replac/i)
      expect(said(toVapi)).toMatch(/retell/i)
      expect(said(toVapi)).not.toContain(retell.apiKey)
      const withVapi = await server.adminJson<{ aiCalls: string }>(["providers", "show", "--org", demo.orgId])
      expect(withVapi.aiCalls).toBe("vapi")

      const toRetell = await connectRetell()
      expect(said(toRetell)).toMatch(/replac/i)
      expect(said(toRetell)).toMatch(/vapi/i)
      expect(said(toRetell)).not.toContain(retell.apiKey)
      const withRetell = await server.adminJson<{ aiCalls: string }>(["providers", "show", "--org", demo.orgId])
      expect(withRetell.aiCalls).toBe("retell")

      // Calls go to Retell again, and Retell's webhooks verify with the key just set.
      await sleep(1_100) // verification keys are cached for up to a second (CallbackGate.KEY_CACHE_MS)
      const to = "+14155550331"
      const id = await call(to)
      expect((await settle(id)).status).toBe("Completed")
      expect(createsFor(to)).toHaveLength(1)
      await retell.settled()
      expect(retell.deliveriesFor(callIdFor(to)).map((d) => accepted(d.delivery.answered))).toEqual([true, true, true])
    }, HEAVY)
  })
})
