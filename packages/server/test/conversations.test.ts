/**
 * Acceptance: conversations over real HTTP — pages of 50 CRM messages with
 * opaque, stable cursors that visit every message once, forged cursors (400),
 * unknown conversations (404), and unread state from inbound messages.
 *
 * The 120 texts are scheduled an hour ahead so that nothing about them changes
 * while the pages are read (dispatch would otherwise move their status on).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError, readJson } from "./support/wire.js"
import { CLI_HEAVY, PN1, PN1_PHONE, PN2, type CreatedKey, type Page } from "./support/demo.js"

interface CreationAck {
  readonly id: string
  readonly status: string
  readonly test: boolean
}
interface ActionRecord {
  readonly id: string
  readonly body: string
  readonly from?: string | null
  readonly to?: string | null
  readonly direction?: string | null
  readonly type?: string | null
  readonly status?: string | null
}
interface ConversationSummary {
  readonly id: string
  readonly phone: string
  readonly name: string
  readonly preview?: string
  readonly unread: boolean
  readonly unreadCount: number
  readonly direction?: string | null
  readonly line?: string
  readonly linkedRecords: ReadonlyArray<unknown>
}
interface Sent {
  readonly id: string
  readonly to: string
  readonly body: string
}

const PAGE = 50
const TOTAL = 120
/** Three counterparts: A gets 60 texts (two conversation pages), B 40, C 20. */
const A = "+15035550101"
const B = "+15035550102"
const C = "+15035550103"
const counterpartOf = (i: number) => [A, A, A, B, B, C][i % 6] ?? A

/** Newest first: action ids are numeric strings. */
const byIdDescending = (a: { readonly id: string }, b: { readonly id: string }) => {
  const x = BigInt(a.id)
  const y = BigInt(b.id)
  return x === y ? 0 : x > y ? -1 : 1
}

/** Changes one character of an opaque token so that it is no longer what the server issued. */
const tamper = (token: string, index: number) => {
  const at = index < 0 ? token.length + index : index
  const replacement = token[at] === "A" ? "B" : "A"
  return token.slice(0, at) + replacement + token.slice(at + 1)
}

describe("conversations", () => {
  let server: TestServer
  let demo: DemoSummary
  const sent: Array<Sent> = []
  const conversationIds = new Map<string, string>()

  const list = (cursor?: string, key: string = demo.keys.live) =>
    server.fetch(`/api/v1/conversations${cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`}`, { key })
  const messages = (id: string, cursor?: string, key: string = demo.keys.live) =>
    server.fetch(
      `/api/v1/conversations/${encodeURIComponent(id)}${cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`}`,
      { key }
    )
  const conversationId = (phone: string): string => {
    const id = conversationIds.get(phone)
    if (id === undefined) throw new Error(`no conversation id for ${phone} yet`)
    return id
  }

  /** Every page of GET /conversations, following nextCursor. */
  const allListPages = async (): Promise<ReadonlyArray<Page<ConversationSummary>>> => {
    const pages: Array<Page<ConversationSummary>> = []
    let cursor: string | undefined
    do {
      const page = await readJson<Page<ConversationSummary>>(await list(cursor), 200)
      pages.push(page)
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined && pages.length < 10)
    return pages
  }

  /** Every page of one conversation, following nextCursor. */
  const allMessagePages = async (id: string): Promise<ReadonlyArray<Page<ActionRecord>>> => {
    const pages: Array<Page<ActionRecord>> = []
    let cursor: string | undefined
    do {
      const page = await readJson<Page<ActionRecord>>(await messages(id, cursor), 200)
      pages.push(page)
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined && pages.length < 10)
    return pages
  }

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "10000" } })
    demo = await server.demo()
    const scheduledFor = new Date(Date.now() + 60 * 60_000).toISOString()
    for (let start = 0; start < TOTAL; start += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, TOTAL - start) }, async (_, j) => {
          const i = start + j
          const to = counterpartOf(i)
          const body = `Message ${String(i + 1).padStart(3, "0")} to ${to}`
          const response = await server.fetch("/api/v1/messages", {
            key: demo.keys.live,
            method: "POST",
            headers: { "idempotency-key": `conversations-${i}` },
            body: JSON.stringify({ to, fromNumberSid: PN1, body, scheduledFor })
          })
          const ack = await readJson<CreationAck>(response, 202)
          return { id: ack.id, to, body }
        })
      )
      sent.push(...batch)
    }
    expect(new Set(sent.map((s) => s.id)).size).toBe(TOTAL)
  }, CLI_HEAVY)
  afterAll(() => server?.dispose())

  it("pages GET /conversations by 50 CRM messages, newest first, until nextCursor is null", async () => {
    const pages = await allListPages()
    const newestFirst = [...sent].sort(byIdDescending)
    const chunks = [newestFirst.slice(0, PAGE), newestFirst.slice(PAGE, 2 * PAGE), newestFirst.slice(2 * PAGE)]
    expect(pages).toHaveLength(chunks.length)
    pages.forEach((page, n) => {
      expect(page.nextCursor === null, `page ${n + 1}`).toBe(n === pages.length - 1)
      // each page summarises exactly the conversations of its 50 messages, previewing the newest of each
      const chunk = chunks[n] ?? []
      const expected = new Map<string, string>()
      for (const message of chunk) if (!expected.has(message.to)) expected.set(message.to, message.body)
      expect(page.items.map((c) => c.phone).sort(), `page ${n + 1}`).toEqual([...expected.keys()].sort())
      for (const summary of page.items) {
        expect(summary.preview, `page ${n + 1}, ${summary.phone}`).toBe(expected.get(summary.phone))
        expect(summary.line).toBe(PN1_PHONE)
        expect(summary.unread).toBe(false)
        expect(summary.unreadCount).toBe(0)
        expect(Array.isArray(summary.linkedRecords)).toBe(true)
        // one id per conversation, whichever page it appears on
        const known = conversationIds.get(summary.phone)
        if (known === undefined) conversationIds.set(summary.phone, summary.id)
        else expect(summary.id).toBe(known)
      }
    })
    expect([...conversationIds.keys()].sort()).toEqual([A, B, C].sort())
  })

  it("answers the same cursor with the same page, every time", async () => {
    const first = await readJson<Page<ConversationSummary>>(await list(), 200)
    const cursor = first.nextCursor
    expect(cursor).not.toBeNull()
    const once = await list(cursor ?? "")
    const twice = await list(cursor ?? "")
    expect(once.status).toBe(200)
    const onceText = await once.text()
    expect(await twice.text()).toBe(onceText)
    // and the first page again is the same first page
    expect(await readJson<Page<ConversationSummary>>(await list(), 200)).toEqual(first)

    const conversation = await readJson<Page<ActionRecord>>(await messages(conversationId(A)), 200)
    expect(conversation.nextCursor).not.toBeNull()
    const a = await messages(conversationId(A), conversation.nextCursor ?? "")
    const b = await messages(conversationId(A), conversation.nextCursor ?? "")
    expect(a.status).toBe(200)
    expect(await b.text()).toBe(await a.text())
  })

  it("pages GET /conversations/{id} by 50 and visits every message exactly once", async () => {
    const seen: Array<string> = []
    for (const [phone, expectedPages] of [[A, [50, 10]], [B, [40]], [C, [20]]] as const) {
      const pages = await allMessagePages(conversationId(phone))
      expect(pages.map((p) => p.items.length), phone).toEqual(expectedPages)
      expect(pages.map((p) => p.nextCursor === null)).toEqual(expectedPages.map((_, i) => i === expectedPages.length - 1))
      const items = pages.flatMap((p) => p.items)
      const expected = sent.filter((s) => s.to === phone).sort(byIdDescending)
      expect(items.map((m) => m.id)).toEqual(expected.map((s) => s.id))
      expect(items.map((m) => m.body)).toEqual(expected.map((s) => s.body))
      for (const item of items) {
        expect(item).toMatchObject({ from: PN1_PHONE, to: phone, direction: "Outbound", type: "SMS", status: "Queued" })
      }
      seen.push(...items.map((m) => m.id))
    }
    expect(seen).toHaveLength(TOTAL)
    expect(new Set(seen)).toEqual(new Set(sent.map((s) => s.id)))
  })

  it("answers a forged or foreign cursor with 400 INVALID_REQUEST naming cursor", async () => {
    const first = await readJson<Page<ConversationSummary>>(await list(), 200)
    const listCursor = first.nextCursor ?? ""
    const conversation = await readJson<Page<ActionRecord>>(await messages(conversationId(A)), 200)
    const conversationCursor = conversation.nextCursor ?? ""
    expect(listCursor).not.toBe("")
    expect(conversationCursor).not.toBe("")

    const forgedList = [
      "garbage",
      "eyJrIjoibGlzdCIsImIiOiIxIn0", // a plausible payload without a signature
      tamper(listCursor, 0),
      tamper(listCursor, -1),
      conversationCursor // a conversation's cursor is not a list cursor
    ]
    for (const cursor of forgedList) {
      const error = await expectError(await list(cursor), 400, "INVALID_REQUEST")
      expect(error.message, cursor).toContain("cursor")
    }
    const forgedConversation = [
      "garbage",
      tamper(conversationCursor, 0),
      tamper(conversationCursor, -1),
      listCursor // the list's cursor is not this conversation's
    ]
    for (const cursor of forgedConversation) {
      const error = await expectError(await messages(conversationId(A), cursor), 400, "INVALID_REQUEST")
      expect(error.message, cursor).toContain("cursor")
    }
    // another conversation's cursor is not this one's either
    await expectError(await messages(conversationId(B), conversationCursor), 400, "INVALID_REQUEST")
  })

  it("answers an unknown conversation id with 404 NOT_FOUND", async () => {
    for (const id of ["nope", "conv_123", tamper(conversationId(A), 0), tamper(conversationId(A), -1)]) {
      await expectError(await messages(id), 404, "NOT_FOUND")
    }
  })

  it("shows a key restricted to other numbers none of these conversations", async () => {
    const restricted = await server.adminJson<CreatedKey>([
      "keys",
      "create",
      "--org",
      demo.orgId,
      "--name",
      "support line only",
      "--scopes",
      "all",
      "--mode",
      "live",
      "--numbers",
      PN2
    ])
    const page = await readJson<Page<ConversationSummary>>(await list(undefined, restricted.key), 200)
    expect(page.items).toEqual([])
    expect(page.nextCursor).toBeNull()
    await expectError(await messages(conversationId(A), undefined, restricted.key), 404, "NOT_FOUND")
  }, CLI_HEAVY)

  it("marks a conversation unread with its unread count when inbound messages arrive", async () => {
    const inbound = (body: string) =>
      server.adminJson<unknown>(["inbound", "--org", demo.orgId, "--from", C, "--to", PN1_PHONE, "--body", body])

    await inbound("Reply one from C")
    let page = await readJson<Page<ConversationSummary>>(await list(), 200)
    const find = (phone: string) => page.items.find((c) => c.phone === phone)
    expect(find(C)).toMatchObject({ unread: true, unreadCount: 1, direction: "Inbound", preview: "Reply one from C" })
    for (const other of page.items.filter((c) => c.phone !== C)) {
      expect(other.unread, other.phone).toBe(false)
      expect(other.unreadCount).toBe(0)
    }

    await inbound("Reply two from C")
    page = await readJson<Page<ConversationSummary>>(await list(), 200)
    expect(find(C)).toMatchObject({ unread: true, unreadCount: 2, preview: "Reply two from C" })

    const thread = await readJson<Page<ActionRecord>>(await messages(conversationId(C)), 200)
    expect(thread.items.slice(0, 2).map((m) => [m.body, m.direction, m.from, m.to])).toEqual([
      ["Reply two from C", "Inbound", C, PN1_PHONE],
      ["Reply one from C", "Inbound", C, PN1_PHONE]
    ])
    expect(thread.items).toHaveLength(22)
  }, CLI_HEAVY)
})
