/**
 * kill -9 right after HubSpot answers a create (issue 34), on both stores, with a real server process: the
 * HubSpot fake answers a communication's or call's create with 201 and the test kills Parley (SIGKILL) 0–40 ms
 * later — before, while or after it commits — then starts it again on the same store, and the client asks
 * again with the same Idempotency-Key. HubSpot has no upsert for engagements: the retry must find the object by
 * its `parley_key` (the search before create), so each key ends with exactly one HubSpot object, whose id the
 * API answers, and one action in Parley, whose later statuses still reach HubSpot (nothing lost). Write-backs
 * owed while HubSpot is down survive a kill -9 too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crashEnv } from "./support/crashes.js"
import { HubSpotFake, type HubSpotObjectType } from "./support/fakes/HubSpotFake.js"
import { until } from "./support/poll.js"
import { type DemoSummary, TestServer } from "./support/server.js"

const HEAVY = 600_000
const ROUNDS = 3
const PN1 = "PN00000000000000000000000000000001"
const PHONE = "+14155550123"
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("kill -9 right after HubSpot answers a create", () => {
  let hubspot: HubSpotFake
  let server: TestServer
  let demo: DemoSummary

  const admin = async (args: ReadonlyArray<string>) => {
    const result = await server.admin(args)
    if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
    return result
  }
  const post = (path: string, key: string, body: Record<string, unknown>) =>
    server.fetch(path, {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": key },
      body: JSON.stringify({ to: PHONE, fromNumberSid: PN1, ...body })
    })
  /** Asks until Parley answers 202 (a connection the kill cut, 502 while it restarts, 409 until the reservation lapses: 5 s here). */
  const createRetrying = async (path: string, key: string, body: Record<string, unknown>) => {
    for (let attempt = 0;; attempt++) {
      try {
        const response = await post(path, key, body)
        if (response.status === 202) return ((await response.json()) as { id: string }).id
        if (attempt > 300) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
      } catch (error) {
        if (attempt > 300) throw error
      }
      await sleep(400)
    }
  }

  /** One round: the next create HubSpot answers kills Parley; the client asks until it gets its id. */
  const killedCreate = async (type: HubSpotObjectType, path: string, key: string, body: Record<string, unknown>) => {
    let restarted: Promise<void> | undefined
    hubspot.onCreateAnswered = (answered) => {
      if (answered !== type || restarted !== undefined) return
      hubspot.onCreateAnswered = undefined
      restarted = (async () => {
        await sleep(Math.random() * 40)
        await server.restart("SIGKILL")
      })()
    }
    const first = post(path, key, body).catch(() => undefined)
    await until(async () => (restarted === undefined ? undefined : true), { timeoutMs: 60_000, what: "HubSpot's answer to the create" })
    await restarted
    await first
    return createRetrying(path, key, body)
  }

  beforeAll(async () => {
    hubspot = await HubSpotFake.start()
    server = await TestServer.start({
      env: {
        // A killed create's key is asked again after the kill: on Postgres it is free once the short
        // reservation lapses, and the actions the killed process held are taken over after the short lease.
        ...crashEnv,
        PARLEY_HUBSPOT_CLIENT_ID: hubspot.clientId,
        PARLEY_HUBSPOT_CLIENT_SECRET: hubspot.clientSecret,
        PARLEY_HUBSPOT_AUTH_URL: hubspot.url,
        PARLEY_HUBSPOT_API_URL: hubspot.url,
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_RATE_LIMIT_PER_MINUTE: "10000"
      }
    })
    demo = await server.demo()
    hubspot.addObject("contacts", { firstname: "Grace", lastname: "Hopper", phone: PHONE })
    const started = JSON.parse((await admin(["crm", "connect", demo.orgId, "--provider", "hubspot", "--json"])).stdout) as { url: string }
    const install = await fetch(started.url, { redirect: "manual" })
    expect((await fetch(install.headers.get("location") ?? "")).status).toBe(200)
    await admin(["crm", "setup", demo.orgId])
  }, HEAVY)

  afterAll(async () => {
    hubspot.onCreateAnswered = undefined
    await server?.dispose()
    await hubspot?.stop()
  })

  it(`texts and AI calls through ${ROUNDS} kills each: one HubSpot object per Idempotency-Key, the one the API answers, its statuses written back`, async () => {
    const made: Array<{ readonly type: HubSpotObjectType; readonly id: string }> = []
    const once = async (type: HubSpotObjectType, path: string, key: string, body: Record<string, unknown>) => {
      const before = hubspot.all(type).length
      const id = await killedCreate(type, path, key, body)
      // One HubSpot object per key, and it is the one the API answered.
      expect(hubspot.all(type).length - before, `${type} created for ${key}`).toBe(1)
      expect(hubspot.all(type).at(-1)?.id).toBe(id)
      made.push({ type, id })
    }
    for (let round = 0; round < ROUNDS; round++) {
      await once("communications", "/api/v1/messages", `kill-text-${Date.now()}-${round}`, { body: `killed text ${round}` })
      await once("calls", "/api/v1/ai-calls", `kill-call-${Date.now()}-${round}`, {
        botId: "bot_sales",
        mode: "deliver_specific_message",
        purposeMessage: `killed call ${round}`
      })
    }
    for (const { id, type } of made) {
      // One action in Parley, under that id.
      const read = await server.fetch(`/api/v1/${type === "communications" ? "messages" : "ai-calls"}/${id}`, { key: demo.keys.live })
      expect(read.status, id).toBe(200)
    }
    const keys = [...hubspot.all("communications"), ...hubspot.all("calls")].map((o) => o.properties["parley_key"])
    expect(new Set(keys).size, "no two HubSpot objects share a key").toBe(keys.length)
    // Nothing lost: every one's final status reaches HubSpot after the kills.
    await until(async () =>
      made.every(({ id, type }) =>
        type === "communications"
          ? hubspot.object(type, id)?.properties["parley_status"] === "Delivered"
          : hubspot.object(type, id)?.properties["hs_call_status"] === "COMPLETED")
        ? true
        : undefined, { timeoutMs: 120_000, what: "every final status in HubSpot" })
  }, HEAVY)

  it("write-backs owed while HubSpot is down survive kill -9 and reach HubSpot once it is back", async () => {
    const id = await createRetrying("/api/v1/messages", `owed-${Date.now()}`, { body: "owed while down" })
    await hubspot.down()
    try {
      await until(async () => {
        const r = (await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }).then((x) => x.json())) as { status: string }
        return r.status === "Delivered" ? true : undefined
      }, { timeoutMs: 30_000, what: "Delivered in Parley" })
      expect(hubspot.object("communications", id)?.properties["parley_status"]).not.toBe("Delivered")
      await server.restart("SIGKILL")
    } finally {
      await hubspot.up()
    }
    await until(async () => (hubspot.object("communications", id)?.properties["parley_status"] === "Delivered" ? true : undefined), {
      timeoutMs: 60_000,
      what: "the owed write-back after the kill"
    })
  }, HEAVY)
})
