/**
 * Acceptance: durability. Everything the server acknowledged before a restart
 * — texts, scheduled texts and AI calls, cancellations, idempotency records,
 * keys and revocations, conversation ids and cursors — reads and behaves the
 * same afterwards, after a graceful stop (SIGTERM) and after a crash (SIGKILL).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, PN1, type CreatedKey, type Page } from "./support/demo.js"

interface CreationAck {
  readonly id: string
  readonly status: string
  readonly test: boolean
}
interface CancellationAck {
  readonly id: string
  readonly status: string
}
interface ActionRecord {
  readonly id: string
  readonly body: string
  readonly status?: string | null
  readonly from?: string | null
  readonly to?: string | null
  readonly direction?: string | null
  readonly type?: string | null
  readonly botId: string | null
  readonly at?: string | null
  readonly scheduledFor?: string | null
}
interface ConversationSummary {
  readonly id: string
  readonly phone: string
  readonly preview?: string
}

const PAGE_FILL = 55

let phoneCounter = 0
const freshPhone = () => `+1606555${String(1000 + ++phoneCounter).padStart(4, "0")}`
let idemCounter = 0
const idem = () => `restart-${Date.now()}-${++idemCounter}`
const later = () => new Date(Date.now() + 30 * 60_000).toISOString()

/**
 * The fields of a record that never change once it has been sent, whatever dispatch does to its status
 * afterwards (a text's `at` becomes its send time when the carrier takes it).
 */
const stable = (r: ActionRecord) => ({
  id: r.id,
  body: r.body,
  from: r.from,
  to: r.to,
  direction: r.direction,
  type: r.type,
  botId: r.botId,
  at: r.at,
  scheduledFor: r.scheduledFor
})

describe("restarts", () => {
  let server: TestServer
  let demo: DemoSummary
  let kept: CreatedKey
  let revoked: CreatedKey

  const sendMessage = (payload: Record<string, unknown>, idempotencyKey: string = idem()) =>
    server.fetch("/api/v1/messages", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify(payload)
    })
  const startCall = (payload: Record<string, unknown>) =>
    server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": idem() },
      body: JSON.stringify(payload)
    })
  const get = (path: string, key: string = demo.keys.live) => server.fetch(path, { key })

  /** A text once the dispatcher has handed it to the carrier (no longer Queued), so its `at` is final. */
  const sentText = async (id: string): Promise<ActionRecord> => {
    const deadline = Date.now() + 20_000
    while (true) {
      const record = await readJson<ActionRecord>(await get(`/api/v1/messages/${id}`), 200)
      // Sending is a moment between commit and the carrier's answer, which sets the text's time (`at`).
      if ((record.status !== "Queued" && record.status !== "Sending") || Date.now() > deadline) return record
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** A live text, accepted or scheduled, with the idempotency key and payload it was created with. */
  const createText = async (scheduled: boolean) => {
    const payload = {
      to: freshPhone(),
      fromNumberSid: PN1,
      body: `Durable ${++idemCounter}`,
      ...(scheduled ? { scheduledFor: later() } : {})
    }
    const key = idem()
    const ack = await readJson<CreationAck>(await sendMessage(payload, key), 202)
    expect(ack.status).toBe(scheduled ? "scheduled" : "accepted")
    return { id: ack.id, payload, key }
  }

  const expectKeys = async () => {
    expect((await get("/api/v1/numbers", kept.key)).status).toBe(200)
    expect((await get("/api/v1/numbers", demo.keys.live)).status).toBe(200)
    expect((await get("/api/v1/numbers", demo.keys.test)).status).toBe(200)
    await expectError(await get("/api/v1/numbers", revoked.key), 401, "UNAUTHORIZED")
  }

  const expectReplay = async (text: { readonly id: string; readonly payload: Record<string, unknown>; readonly key: string }) => {
    const replay = await sendMessage(text.payload, text.key)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect((await readJson<CreationAck>(replay, 202)).id).toBe(text.id)
    await expectError(await sendMessage({ ...text.payload, body: "changed" }, text.key), 400, "IDEMPOTENCY_KEY_REUSED")
  }

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "10000" } })
    demo = await server.demo()
    const createKey = (name: string) =>
      server.adminJson<CreatedKey>(["keys", "create", "--org", demo.orgId, "--name", name, "--scopes", "all", "--mode", "live"])
    kept = await createKey("kept")
    revoked = await createKey("revoked")
    const revoke = await server.admin(["keys", "revoke", revoked.id])
    expect(revoke.code, revoke.stderr).toBe(0)
    // enough scheduled texts (to two counterparts) for GET /conversations to have a second page
    const scheduledFor = later()
    for (let i = 0; i < PAGE_FILL; i++) {
      await readJson<CreationAck>(
        await sendMessage({ to: i % 2 === 0 ? "+16065559001" : "+16065559002", fromNumberSid: PN1, body: `Fill ${i}`, scheduledFor }),
        202
      )
    }
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`keeps everything acknowledged before a restart (${signal})`, async () => {
      // acknowledged before the restart
      const accepted = await createText(false)
      const scheduled = await createText(true)
      const toCancelLater = await createText(true)
      const cancelledBefore = await createText(true)
      expect(await readJson<CancellationAck>(
        await server.fetch(`/api/v1/messages/${cancelledBefore.id}/cancel`, { key: demo.keys.live, method: "POST" }),
        200
      )).toEqual({ id: cancelledBefore.id, status: "cancelled" })
      const call = await readJson<CreationAck>(
        await startCall({ to: freshPhone(), fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script", scheduledFor: later() }),
        202
      )
      await expectKeys()

      const before = {
        accepted: await sentText(accepted.id),
        scheduled: await readJson<ActionRecord>(await get(`/api/v1/messages/${scheduled.id}`), 200),
        cancelled: await readJson<ActionRecord>(await get(`/api/v1/messages/${cancelledBefore.id}`), 200),
        call: await readJson<ActionRecord>(await get(`/api/v1/ai-calls/${call.id}`), 200),
        list: await readJson<Page<ConversationSummary>>(await get("/api/v1/conversations"), 200)
      }
      expect(before.accepted.status).not.toBe("Queued")
      expect(before.scheduled.status).toBe("Queued")
      expect(before.cancelled.status).toBe("Cancelled")
      expect(before.list.nextCursor).not.toBeNull()
      const secondPage = await readJson<Page<ConversationSummary>>(
        await get(`/api/v1/conversations?cursor=${encodeURIComponent(before.list.nextCursor ?? "")}`),
        200
      )

      await server.restart(signal)

      // records
      expect(stable(await readJson<ActionRecord>(await get(`/api/v1/messages/${accepted.id}`), 200))).toEqual(
        stable(before.accepted)
      )
      expect(await readJson<ActionRecord>(await get(`/api/v1/messages/${scheduled.id}`), 200)).toEqual(before.scheduled)
      expect(await readJson<ActionRecord>(await get(`/api/v1/messages/${cancelledBefore.id}`), 200)).toEqual(before.cancelled)
      expect(await readJson<ActionRecord>(await get(`/api/v1/ai-calls/${call.id}`), 200)).toEqual(before.call)

      // conversations: the same ids, and a cursor issued before the restart still works
      const after = await readJson<Page<ConversationSummary>>(await get("/api/v1/conversations"), 200)
      expect(after.items.map((c) => [c.id, c.phone])).toEqual(before.list.items.map((c) => [c.id, c.phone]))
      const secondAfter = await readJson<Page<ConversationSummary>>(
        await get(`/api/v1/conversations?cursor=${encodeURIComponent(before.list.nextCursor ?? "")}`),
        200
      )
      const summary = (c: ConversationSummary) => ({ id: c.id, phone: c.phone, preview: c.preview })
      expect(secondAfter.items.map(summary)).toEqual(secondPage.items.map(summary))
      expect(secondAfter.nextCursor).toBe(secondPage.nextCursor)
      const conversation = before.list.items[0]
      expect(conversation).toBeDefined()
      expect((await get(`/api/v1/conversations/${encodeURIComponent(conversation?.id ?? "")}`)).status).toBe(200)

      // keys and revocations
      await expectKeys()

      // idempotency records: replays give the same id, a changed payload is still a reused key
      await expectReplay(accepted)
      await expectReplay(scheduled)

      // cancellation rules still apply to what was scheduled before
      expect(await readJson<CancellationAck>(
        await server.fetch(`/api/v1/messages/${toCancelLater.id}/cancel`, { key: demo.keys.live, method: "POST" }),
        200
      )).toEqual({ id: toCancelLater.id, status: "cancelled" })
      expect((await readJson<ActionRecord>(await get(`/api/v1/messages/${toCancelLater.id}`), 200)).status).toBe("Cancelled")
      await expectError(
        await server.fetch(`/api/v1/messages/${cancelledBefore.id}/cancel`, { key: demo.keys.live, method: "POST" }),
        409,
        "ACTION_NOT_CANCELLABLE"
      )

      // and new work gets new ids
      const next = await createText(false)
      expect(BigInt(next.id)).toBeGreaterThan(BigInt(call.id))
    })
  }
})
