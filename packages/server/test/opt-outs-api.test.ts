/**
 * /api/v1/opt-outs on a real server, on both stores: PUT opts a number out (idempotent, source `api` with the
 * key), POST /messages to it is then 403 RECIPIENT_OPTED_OUT, GET reads it back (404 when the number may be
 * texted), the list pages newest first with a cursor and takes an unrestricted key, DELETE opts back in
 * (204), the scopes are optouts:read / optouts:write, and Twilio's "unsubscribed" refusal records a carrier
 * opt-out that a key cannot lift (409).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TwilioFake } from "./support/fakes/TwilioFake.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson, readUntil } from "./support/wire.js"

interface OptOut {
  readonly phone: string
  readonly channels: ReadonlyArray<string>
  readonly source: string
  readonly reason: string | null
  readonly cause: string | null
  readonly createdAt: string
}

describe("/api/v1/opt-outs", () => {
  let server: TestServer
  let demo: DemoSummary
  let n = 0

  beforeAll(async () => {
    // The list test makes 52 opt-outs through the API; the per-key limit is not under test here.
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  })
  afterAll(async () => {
    await server.dispose()
  })

  const put = (phone: string, body: Record<string, unknown> = {}, key = demo.keys.live) =>
    server.fetch(`/api/v1/opt-outs/${encodeURIComponent(phone)}`, { method: "PUT", key, body: JSON.stringify(body) })
  const get = (phone: string, key = demo.keys.live) => server.fetch(`/api/v1/opt-outs/${phone}`, { key })
  const remove = (phone: string, key = demo.keys.live) => server.fetch(`/api/v1/opt-outs/${phone}`, { method: "DELETE", key })
  const text = (to: string) =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `optouts-api-${++n}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]!.sid, body: "Hello" })
    })
  const keyWith = async (scopes: string, extra: ReadonlyArray<string> = []) =>
    (await server.adminJson<{ key: string }>(["keys", "create", "--org", demo.orgId, "--name", `k${++n}`, "--scopes", scopes, "--mode", "live", ...extra])).key

  it("PUT opts a number out (all channels by default), idempotently; the next text is refused; GET reads it; DELETE lifts it", async () => {
    const phone = "+14155550141"
    await expectError(await get(phone), 404, "NOT_FOUND")
    const first = await readJson<OptOut>(await put(phone, { reason: "asked by email" }), 200)
    expect(first).toMatchObject({ phone, channels: ["SMS", "WhatsApp", "Call"], source: "api", reason: "asked by email" })
    expect(first.cause).toMatch(/^API key key_/)
    const again = await readJson<OptOut>(await put(phone, { reason: "asked by email" }), 200)
    expect(again.createdAt).toBe(first.createdAt)
    await expectError(await text(phone), 403, "RECIPIENT_OPTED_OUT")
    expect(await readJson<OptOut>(await get(phone), 200)).toEqual(first)
    const deleted = await remove(phone)
    expect(deleted.status).toBe(204)
    expect(await deleted.text()).toBe("")
    await readJson(await text(phone), 202)
    await expectError(await remove(phone), 404, "NOT_FOUND")
  })

  it("PUT with channels stops only those; unknown channels and fields are 400", async () => {
    const phone = "+14155550142"
    expect(await readJson<OptOut>(await put(phone, { channels: ["Call"] }), 200)).toMatchObject({ channels: ["Call"] })
    await readJson(await text(phone), 202)
    await expectError(await put(phone, { channels: ["Fax"] }), 400, "INVALID_REQUEST")
    await expectError(await put(phone, { channels: [] }), 400, "INVALID_REQUEST")
    await expectError(await put(phone, { channel: ["SMS"] }), 400, "INVALID_REQUEST")
    await expectError(await put("not-a-number"), 400, "INVALID_REQUEST")
  })

  it("lists newest first, 50 a page with a cursor bound to its filter, and only for unrestricted keys", async () => {
    for (let i = 0; i < 52; i++) await readJson(await put(`+1415556${String(i).padStart(4, "0")}`), 200)
    const first = await readJson<{ items: ReadonlyArray<OptOut>; nextCursor: string | null }>(
      await server.fetch("/api/v1/opt-outs", { key: demo.keys.live }), 200)
    expect(first.items.length).toBe(50)
    expect(first.nextCursor).not.toBeNull()
    const second = await readJson<{ items: ReadonlyArray<OptOut>; nextCursor: string | null }>(
      await server.fetch(`/api/v1/opt-outs?cursor=${first.nextCursor}`, { key: demo.keys.live }), 200)
    const all = [...first.items, ...second.items]
    expect(new Set(all.map((o) => o.phone)).size).toBe(all.length)
    expect(all.map((o) => o.createdAt)).toEqual([...all.map((o) => o.createdAt)].sort().reverse())
    await expectError(await server.fetch(`/api/v1/opt-outs?phone=%2B14155550142&cursor=${first.nextCursor}`, { key: demo.keys.live }), 400, "INVALID_REQUEST")
    const one = await readJson<{ items: ReadonlyArray<OptOut> }>(await server.fetch("/api/v1/opt-outs?phone=%2B14155550142", { key: demo.keys.live }), 200)
    expect(one.items.map((o) => o.phone)).toEqual(["+14155550142"])
    const restricted = await keyWith("optouts:read", ["--numbers", demo.numbers[0]!.sid])
    await expectError(await server.fetch("/api/v1/opt-outs", { key: restricted }), 403, "RESOURCE_DENIED")
    await readJson(await get("+14155550142", restricted), 200)
  })

  it("takes optouts:read to read and optouts:write to change", async () => {
    const reader = await keyWith("optouts:read")
    const writer = await keyWith("optouts:write")
    await expectError(await put("+14155550144", {}, reader), 403, "SCOPE_MISSING")
    await readJson(await put("+14155550144", {}, writer), 200)
    await expectError(await get("+14155550144", writer), 403, "SCOPE_MISSING")
    await readJson(await get("+14155550144", reader), 200)
  })

  it("Twilio's 21610 (unsubscribed) fails the text and records a carrier opt-out that a key cannot lift (409); an administrator can", async () => {
    const twilio = await TwilioFake.start({ stepMs: 30 })
    try {
      const set = await server.admin([
        "providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", twilio.accountSid,
        "--auth-token", twilio.authToken, "--api-base", twilio.url
      ])
      expect(set.code, set.stderr).toBe(0)
      const phone = TwilioFake.magic.unsubscribedTo
      const { id } = await readJson<{ id: string }>(await text(phone), 202)
      const failed = await readUntil(
        async () => readJson<{ status: string; errorMessage: string | null }>(await server.fetch(`/api/v1/messages/${id}`, { key: demo.keys.live }), 200),
        (r) => r.status === "Failed"
      )
      expect(failed.errorMessage).toContain("21610")
      const entry = await readJson<OptOut>(await get(phone), 200)
      expect(entry).toMatchObject({ phone, channels: ["SMS"], source: "carrier", cause: `action ${id}` })
      await expectError(await text(phone), 403, "RECIPIENT_OPTED_OUT")
      const refused = await expectError(await remove(phone), 409, "OPT_OUT_NOT_REMOVABLE")
      expect(refused.message).toContain("START")
      await server.adminJson(["optouts", "remove", "--org", demo.orgId, "--phone", phone])
      await expectError(await get(phone), 404, "NOT_FOUND")
    } finally {
      await server.admin(["providers", "clear", "--org", demo.orgId, "--kind", "twilio"])
      await twilio.stop()
    }
  })
})
