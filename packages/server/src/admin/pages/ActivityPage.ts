/**
 * Activity: every message and call of the organisation, searched by kind, channel, status, our number, their
 * number, text, the key that sent it and the day it was created, 50 a page newest first with a keyset on the id
 * (`before`: the last id shown), so the oldest record is as reachable as the newest. Each opens its record (the
 * shape GET /messages/{id} and /ai-calls/{id} answer) and the events written for it, however old. Read through
 * the core's ActionStore and Actions as the organisation's administrator: every scope, no number or bot
 * restriction, every module and action visible.
 */
import {
  ActionRecords,
  Actions,
  ActionStore,
  ALL_SCOPES,
  ApiKeyStore,
  CallStatus,
  type CallerInfo,
  Conversations,
  Crm,
  MessageStatus,
  Organisations,
  type RecordStatus,
  type RecordType
} from "@parley/core/internal"
import { ActionId, E164 } from "@parley/core"
import { Effect, Either, Option, Schema } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page } from "../ConsoleHttp.js"
import { flag, Html, html, type Interpolation } from "../Html.js"
import { timeOf } from "../Times.js"
import { emptyRow, fieldError, type FieldErrors, layout, textField } from "../Layout.js"
import { recordEvents } from "../RecordEvents.js"
import { notFoundPage } from "./NotFound.js"

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

/** Records a page of the search shows; the next page continues after the last one shown (keyset on the id). */
export const ACTIVITY_PAGE_SIZE = 50
const MAX_TEXT = 200
const CHANNELS: ReadonlyArray<RecordType> = ["SMS", "WhatsApp"]
const DAY_MS = 24 * 60 * 60 * 1000
const isE164 = Schema.is(E164)

/** The search as the form sends it: every field a string, kept to fill the form again. */
interface SearchForm {
  readonly kind: ActionStore.ActionKind
  readonly channel: string
  readonly status: string
  readonly number: string
  readonly with: string
  readonly text: string
  readonly key: string
  readonly from: string
  readonly to: string
}

const SEARCH_FIELDS = ["kind", "channel", "status", "number", "with", "text", "key", "from", "to"] as const

const readSearch = (query: URLSearchParams): SearchForm => ({
  kind: kindOf(query.get("kind")),
  channel: query.get("channel") ?? "",
  status: query.get("status") ?? "",
  number: query.get("number") ?? "",
  with: (query.get("with") ?? "").replace(/[\s().-]/g, ""),
  text: (query.get("text") ?? "").trim(),
  key: query.get("key") ?? "",
  from: query.get("from") ?? "",
  to: query.get("to") ?? ""
})

/** A day of the form's date fields (YYYY-MM-DD, UTC) as epoch ms, or null when it is not one. */
const dayStart = (value: string): number | null => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return null
  const ms = Date.parse(`${value}T00:00:00.000Z`)
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value ? null : ms
}

/** The form's search as a query of the store, or the fields that are wrong (each with why). */
const toQuery = (
  form: SearchForm,
  choices: { readonly lines: ReadonlyArray<{ readonly sid: string; readonly phoneNumber: string }>; readonly keyIds: ReadonlyArray<string> }
): Either.Either<Omit<ActionStore.ActionQuery, "orgId" | "beforeId" | "limit">, FieldErrors> => {
  const errors: Record<string, string> = {}
  const status = STATUSES[form.kind].find((s) => s === form.status)
  if (form.status !== "" && status === undefined) errors["status"] = "Choose a status from the list."
  const channel = CHANNELS.find((c) => c === form.channel)
  if (form.kind === "message" && form.channel !== "" && channel === undefined) errors["channel"] = "Choose SMS or WhatsApp."
  const line = choices.lines.find((n) => n.sid === form.number)
  if (form.number !== "" && line === undefined) errors["number"] = "Choose one of the organisation's numbers."
  if (form.with !== "" && !isE164(form.with)) {
    errors["with"] = "Enter the number in international form: + and the country code, such as +14155550123."
  }
  if (form.text.length > MAX_TEXT) errors["text"] = `At most ${MAX_TEXT} characters.`
  if (form.key !== "" && !choices.keyIds.includes(form.key)) errors["key"] = "Choose one of the organisation's keys."
  const from = form.from === "" ? null : dayStart(form.from)
  if (form.from !== "" && from === null) errors["from"] = "Enter a date as YYYY-MM-DD."
  const to = form.to === "" ? null : dayStart(form.to)
  if (form.to !== "" && to === null) errors["to"] = "Enter a date as YYYY-MM-DD."
  if (from !== null && to !== null && to < from) errors["to"] = "The last day is before the first."
  if (Object.keys(errors).length > 0) return Either.left(errors)
  return Either.right({
    kinds: [form.kind],
    lines: line === undefined ? null : [line.phoneNumber],
    ownerId: null,
    conversation: null,
    ...(status === undefined ? {} : { statuses: [status] }),
    ...(form.kind === "message" && channel !== undefined ? { types: [channel] } : {}),
    ...(form.with === "" ? {} : { counterpart: form.with }),
    ...(form.text === "" ? {} : { text: form.text }),
    ...(form.key === "" ? {} : { apiKeyId: form.key }),
    ...(from === null ? {} : { createdFrom: new Date(from).toISOString() }),
    // The last day is included: records created before the next day begins.
    ...(to === null ? {} : { createdBefore: new Date(to + DAY_MS).toISOString() })
  })
}

/** The search's own address, with a page's starting point: every link of the page keeps the filters. */
const searchHref = (form: SearchForm, before: string | null): string => {
  const params = new URLSearchParams()
  for (const field of SEARCH_FIELDS) if (form[field] !== "") params.set(field, form[field])
  if (before !== null) params.set("before", before)
  return `/admin/activity?${params.toString()}`
}

export const activityPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const caller = yield* administrator(session)
    if (Option.isNone(caller)) return notFoundPage(session, "The organisation is gone.")
    const form = readSearch(request.query)
    const kind = form.kind
    const numbers = yield* (yield* Organisations.Organisations).listNumbers(session.orgId)
    const keys = yield* (yield* ApiKeyStore.ApiKeyStore).list(session.orgId)
    const beforeText = request.query.get("before")
    const before = beforeText !== null && isActionId(beforeText) ? beforeText : null
    const query = toQuery(form, { lines: numbers, keyIds: keys.map((k) => k.id) })
    const errors: FieldErrors = Either.isLeft(query) ? query.left : {}
    // The administrator sees every record of the organisation: no line, owner or bot restriction.
    const rows = Either.isLeft(query) ? [] : yield* (yield* ActionStore.ActionStore).queryActions({
      ...query.right,
      orgId: session.orgId,
      beforeId: before,
      limit: ACTIVITY_PAGE_SIZE + 1
    })
    const records = rows.slice(0, ACTIVITY_PAGE_SIZE).map((action) => ActionRecords.toActionRecord(action))
    const last = records.length === 0 ? undefined : rows[records.length - 1]
    const older = rows.length > ACTIVITY_PAGE_SIZE && last !== undefined ? searchHref(form, last.id) : null
    const keyNames = new Map(keys.map((k) => [k.id, k.name]))
    const conversations = yield* (yield* Conversations.Conversations).list(caller.value, undefined)
    const option = (value: string, label: string, selected: boolean) =>
      html`<option value="${value}"${flag("selected", selected)}>${label}</option>`
    const select = (name: string, label: string, options: Interpolation) => {
      const id = `field-${name}`
      const error = errors[name]
      return html`<div class="filter"><label for="${id}">${label}</label>
<select id="${id}" name="${name}"${new Html(error === undefined ? "" : ` aria-describedby="${id}-error" aria-invalid="true"`)}>${options}</select>
${fieldError(id, error)}</div>`
    }
    const input = (name: keyof SearchForm, label: string, type: "text" | "date", hint?: string) =>
      html`<div class="filter">${textField({ name, label, value: form[name], type, errors, ...(hint === undefined ? {} : { hint }) })}</div>`
    return page(layout({
      title: "Activity",
      session,
      current: "/admin/activity",
      alert: Object.keys(errors).length === 0 ? null : "The search was not run: see the fields marked below.",
      body: html`<form class="card filters" method="get" action="/admin/activity" role="search" aria-label="Search activity">
${select("kind", "Kind", [option("message", "Messages", kind === "message"), option("ai_call", "AI calls", kind === "ai_call")])}
${
        kind === "message"
          ? select("channel", "Channel", [option("", "Any", form.channel === ""), ...CHANNELS.map((c) => option(c, c, c === form.channel))])
          : ""
      }
${select("status", "Status", [option("", "Any", form.status === ""), ...STATUSES[kind].map((s) => option(s, s, s === form.status))])}
${
        select("number", "Our number", [
          option("", "Any", form.number === ""),
          ...numbers.map((n) => option(n.sid, `${n.friendlyName} ${n.phoneNumber}`, n.sid === form.number))
        ])
      }
${input("with", "Their number", "text", "The other party's number, such as +14155550123.")}
${input("text", "Text contains", "text")}
${
        select("key", "Sent with key", [
          option("", "Any", form.key === ""),
          ...keys.map((k) => option(k.id, `${k.name} (${k.prefix}…)`, k.id === form.key))
        ])
      }
${input("from", "Created from", "date", "First day, UTC.")}
${input("to", "Created until", "date", "Last day, UTC, included.")}
<div class="filter"><button type="submit">Search</button> <a href="/admin/activity?kind=${kind}">Clear</a></div>
</form>
<section aria-labelledby="a-list"><h2 id="a-list">${kind === "message" ? "Messages" : "AI calls"}, newest first</h2>
<table class="records"><thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Type</th><th scope="col">Direction</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Text</th><th scope="col">Key</th><th scope="col">Created</th></tr></thead>
<tbody>${
        records.length === 0 ? emptyRow(9, before === null ? "Nothing found." : "No older records.") : records.map((r, i) => {
          const keyId = rows[i]?.apiKeyId ?? null
          return html`<tr><td><a href="/admin/activity/record?kind=${kind}&amp;id=${r.id}">${r.id}</a></td><td>${r.status}</td><td>${r.type}</td><td>${r.direction}</td><td>${r.from}</td><td>${r.to}</td><td>${
            (r.body ?? "").length > 80 ? `${(r.body ?? "").slice(0, 80)}…` : r.body ?? ""
          }</td><td>${
            keyId === null ? "—" : html`<a href="/admin/keys/key?id=${encodeURIComponent(keyId)}">${keyNames.get(keyId) ?? keyId}</a>`
          }</td><td>${timeOf(r.at, session.timezone)}</td></tr>`
        })
      }</tbody></table>
<nav aria-label="Pages of records" class="pages">${before === null ? "" : html`<a href="${searchHref(form, null)}">Newest</a> `}${
        older === null ? "" : html`<a href="${older}">Older records</a>`
      }</nav>
</section>
<section aria-labelledby="a-conversations"><h2 id="a-conversations">Conversations</h2>
<table><thead><tr><th scope="col">With</th><th scope="col">Name</th><th scope="col">Last</th><th scope="col">At</th><th scope="col">Unread</th></tr></thead>
<tbody>${
        conversations.items.length === 0 ? emptyRow(5, "No conversations yet.") : conversations.items.map((c) =>
          html`<tr><td><a href="/admin/activity/conversation?id=${encodeURIComponent(c.id)}">${c.phone}</a></td><td>${c.name}</td><td>${
            c.preview ?? ""
          }</td><td>${timeOf(c.at, session.timezone, "")}</td><td>${String(c.unreadCount)}</td></tr>`
        )
      }</tbody></table></section>`
    }), { status: Object.keys(errors).length === 0 ? 200 : 400 })
  })

/** The organisation's key a record's `sentBy` names (`API key key_…`, as Actions writes it), to link to its page. */
const sentByKey = (session: Session, sentBy: string | undefined) =>
  Effect.gen(function*() {
    const id = /^API key (key_\w+)$/.exec(sentBy ?? "")?.[1]
    if (id === undefined) return Option.none<ApiKeyStore.ApiKeyRow>()
    return Option.filter(yield* (yield* ApiKeyStore.ApiKeyStore).get(id), (key) => key.orgId === session.orgId)
  })

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
    // By the id its events carry (the API's id: a hosted CRM's record id where there is one), however old.
    const events = yield* recordEvents(session.orgId, found.right.id)
    const sender = yield* sentByKey(session, found.right.sentBy)
    return page(layout({
      title: `${kind === "message" ? "Message" : "AI call"} ${id}`,
      session,
      current: "/admin/activity",
      body: html`<section aria-labelledby="r-record"><h2 id="r-record">Record</h2>
${
        Option.isNone(sender) ? "" : html`<p>Sent by: <a href="/admin/keys/key?id=${encodeURIComponent(sender.value.id)}">${sender.value.name} (${sender.value.prefix}…)</a></p>`
      }
<pre>${JSON.stringify(found.right, null, 2)}</pre></section>
<section aria-labelledby="r-events"><h2 id="r-events">Events</h2>
<table><thead><tr><th scope="col">Event</th><th scope="col">At</th></tr></thead>
<tbody>${
        events.length === 0 ? emptyRow(2, "No events.") : events.map((e) =>
          html`<tr><td><a href="/admin/events/event?id=${e.id}">${e.type}</a></td><td>${timeOf(e.timestamp, session.timezone)}</td></tr>`
        )
      }</tbody></table></section>
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
