/**
 * Activity: the organisation's recent messages and calls, filterable by kind, status and number, each
 * opening its record (the shape GET /messages/{id} and /ai-calls/{id} answer) and the events written for
 * it. Read through the core's RecordLists and Actions services, as the organisation's administrator: every
 * scope, no number or bot restriction, every module and action visible.
 */
import { SqlClient } from "@effect/sql"
import {
  Actions,
  type ActionStore,
  ALL_SCOPES,
  CallStatus,
  type CallerInfo,
  Conversations,
  Crm,
  MessageStatus,
  Organisations,
  RecordLists,
  type RecordStatus
} from "@parley/core/internal"
import { ActionId } from "@parley/core"
import { Effect, Option, Schema } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page } from "../ConsoleHttp.js"
import { flag, html } from "../Html.js"
import { emptyRow, layout } from "../Layout.js"
import { notFoundPage } from "./NotFound.js"

/** Events of one record are looked for among the organisation's latest ones: the console shows recent activity. */
const EVENTS_SCANNED = 1000

const administrator = (session: Session) =>
  Effect.gen(function*() {
    const organisation = yield* (yield* Organisations.Organisations).get(session.orgId)
    return Option.map(organisation, (org): CallerInfo => ({
      orgId: session.orgId,
      keyId: `console:${session.adminId}`,
      mode: "live",
      scopes: new Set(ALL_SCOPES),
      numberSids: [],
      botIds: [],
      organisation: org,
      account: { id: `console:${session.adminId}`, name: session.email, permissions: Crm.FULL_PERMISSIONS }
    }))
  })

/**
 * Whether a record id from the query is one Parley could have issued, checked before any query: the store
 * compares ids as numbers, and Postgres fails a query given `abc`, `1.5` or a number past BIGINT (a 500)
 * where SQLite finds nothing.
 */
const isActionId = (id: string): boolean => Schema.is(ActionId)(id) && BigInt(id) <= MAX_BIGINT
const MAX_BIGINT = 2n ** 63n - 1n

const kindOf = (value: string | null): ActionStore.ActionKind => (value === "ai_call" ? "ai_call" : "message")

const STATUSES: Readonly<Record<ActionStore.ActionKind, ReadonlyArray<RecordStatus>>> = {
  message: MessageStatus.literals,
  ai_call: CallStatus.literals
}

export const activityPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const caller = yield* administrator(session)
    if (Option.isNone(caller)) return notFoundPage(session, "The organisation is gone.")
    const kind = kindOf(request.query.get("kind"))
    const statusText = request.query.get("status") ?? ""
    const status = STATUSES[kind].find((s) => s === statusText)
    const number = request.query.get("number") ?? ""
    const numbers = yield* (yield* Organisations.Organisations).listNumbers(session.orgId)
    const chosenNumber = numbers.find((n) => n.sid === number)
    const records = yield* (yield* RecordLists.RecordLists).list(caller.value, kind, {
      ...(status === undefined ? {} : { status: [status] }),
      ...(chosenNumber === undefined ? {} : { number: chosenNumber.sid })
    })
    const conversations = yield* (yield* Conversations.Conversations).list(caller.value, undefined)
    const option = (value: string, label: string, selected: boolean) =>
      html`<option value="${value}"${flag("selected", selected)}>${label}</option>`
    return page(layout({
      title: "Activity",
      session,
      current: "/admin/activity",
      body: html`<form class="card" method="get" action="/admin/activity">
<label for="f-kind">Kind</label>
<select id="f-kind" name="kind">${option("message", "Messages", kind === "message")}${option("ai_call", "AI calls", kind === "ai_call")}</select>
<label for="f-status">Status</label>
<select id="f-status" name="status">${option("", "Any", status === undefined)}${STATUSES[kind].map((s) => option(s, s, s === status))}</select>
<label for="f-number">Number</label>
<select id="f-number" name="number">${option("", "Any", chosenNumber === undefined)}${
        numbers.map((n) => option(n.sid, `${n.friendlyName} ${n.phoneNumber}`, n.sid === chosenNumber?.sid))
      }</select>
<button type="submit">Filter</button>
</form>
<section aria-labelledby="a-list"><h2 id="a-list">${kind === "message" ? "Messages" : "AI calls"}, newest first</h2>
<table><thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Type</th><th scope="col">Direction</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Modified</th></tr></thead>
<tbody>${
        records.items.length === 0 ? emptyRow(7, "Nothing yet.") : records.items.map((r) =>
          html`<tr><td><a href="/admin/activity/record?kind=${kind}&amp;id=${r.id}">${r.id}</a></td><td>${r.status}</td><td>${r.type}</td><td>${r.direction}</td><td>${r.from}</td><td>${r.to}</td><td>${r.modified}</td></tr>`
        )
      }</tbody></table>
${records.nextCursor === null ? "" : html`<p class="hint">Showing the latest 50; narrow the filters to see others.</p>`}
</section>
<section aria-labelledby="a-conversations"><h2 id="a-conversations">Conversations</h2>
<table><thead><tr><th scope="col">With</th><th scope="col">Name</th><th scope="col">Last</th><th scope="col">At</th><th scope="col">Unread</th></tr></thead>
<tbody>${
        conversations.items.length === 0 ? emptyRow(5, "No conversations yet.") : conversations.items.map((c) =>
          html`<tr><td><a href="/admin/activity/conversation?id=${encodeURIComponent(c.id)}">${c.phone}</a></td><td>${c.name}</td><td>${
            c.preview ?? ""
          }</td><td>${c.at ?? ""}</td><td>${String(c.unreadCount)}</td></tr>`
        )
      }</tbody></table></section>`
    }))
  })

interface EventRow {
  readonly type: string
  readonly timestamp: string
  readonly payload: string
}

/** The id of the record an event carries (`data.id`); events are written by Parley, so they parse. */
const eventRecordId = (payload: string): string | undefined => {
  const parsed: unknown = JSON.parse(payload)
  if (typeof parsed !== "object" || parsed === null || !("data" in parsed)) return undefined
  const data: unknown = parsed.data
  return typeof data === "object" && data !== null && "id" in data && typeof data.id === "string" ? data.id : undefined
}

export const recordPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const caller = yield* administrator(session)
    if (Option.isNone(caller)) return notFoundPage(session, "The organisation is gone.")
    const kind = kindOf(request.query.get("kind"))
    const id = request.query.get("id") ?? ""
    if (!isActionId(id)) return notFoundPage(session, `No such ${kind === "message" ? "message" : "AI call"}.`)
    const found = yield* Effect.either((yield* Actions.Actions).get(caller.value, kind, id))
    if (found._tag === "Left") {
      if (found.left._tag === "NotFound") return notFoundPage(session, `No ${kind === "message" ? "message" : "AI call"} ${id}.`)
      return yield* Effect.fail(found.left)
    }
    const sql = yield* SqlClient.SqlClient
    const recent = yield* sql<EventRow>`SELECT type, timestamp, payload FROM events WHERE org_id = ${session.orgId}
      ORDER BY seq DESC LIMIT ${EVENTS_SCANNED}`
    const prefix = kind === "message" ? "message." : "ai_call."
    const events = recent.filter((e) => e.type.startsWith(prefix) && eventRecordId(e.payload) === id).reverse()
    return page(layout({
      title: `${kind === "message" ? "Message" : "AI call"} ${id}`,
      session,
      current: "/admin/activity",
      body: html`<section aria-labelledby="r-record"><h2 id="r-record">Record</h2>
<pre>${JSON.stringify(found.right, null, 2)}</pre></section>
<section aria-labelledby="r-events"><h2 id="r-events">Events</h2>
<table><thead><tr><th scope="col">Event</th><th scope="col">At</th></tr></thead>
<tbody>${events.length === 0 ? emptyRow(2, "No events.") : events.map((e) => html`<tr><td>${e.type}</td><td>${e.timestamp}</td></tr>`)}</tbody></table></section>
<p><a href="/admin/activity?kind=${kind}">Back to Activity</a></p>`
    }))
  })

export const conversationPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const caller = yield* administrator(session)
    if (Option.isNone(caller)) return notFoundPage(session, "The organisation is gone.")
    const id = request.query.get("id") ?? ""
    const found = yield* Effect.either((yield* Conversations.Conversations).messages(caller.value, id, undefined))
    if (found._tag === "Left") {
      if (found.left._tag === "NotFound") return notFoundPage(session, "No such conversation.")
      return yield* Effect.fail(found.left)
    }
    const messages = found.right.items
    return page(layout({
      title: "Conversation",
      session,
      current: "/admin/activity",
      body: html`<section aria-labelledby="c-messages"><h2 id="c-messages">Messages, newest first</h2>
<table><thead><tr><th scope="col">Id</th><th scope="col">Direction</th><th scope="col">Status</th><th scope="col">Text</th><th scope="col">Modified</th></tr></thead>
<tbody>${
        messages.length === 0 ? emptyRow(5, "No messages.") : messages.map((m) =>
          html`<tr><td><a href="/admin/activity/record?kind=${m.type === "Call" ? "ai_call" : "message"}&amp;id=${m.id}">${m.id}</a></td><td>${m.direction}</td><td>${m.status}</td><td>${
            m.body ?? ""
          }${
            // A media-only message has no text; its URLs are on the record's page.
            (m.mediaUrls ?? []).length === 0 ? "" : ` [${(m.mediaUrls ?? []).length} media]`
          }</td><td>${m.modified}</td></tr>`
        )
      }</tbody></table></section>
<p><a href="/admin/activity">Back to Activity</a></p>`
    }))
  })
