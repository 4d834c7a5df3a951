/**
 * Events: the organisation's webhook endpoints and what was delivered to each. Adding one shows its signing
 * secret once; rotating shows the new one once (the previous keeps signing for a day); disable, enable and
 * delete (after confirmation). The same endpoints, rules and store as the API and `parley webhooks`.
 * Each endpoint's deliveries (state, status code, attempts, why the last attempt failed), all of them page by
 * page; an event's payload and its deliveries; "Resend" one delivery; "Send test event" to an endpoint.
 */
import { ALL_EVENTS, type EnabledEvent, Events } from "@parley/core/internal"
import { ServerConfig } from "../../config/ServerConfig.js"
import { Clock, Effect, Either, Option } from "effect"
import { Webhooks } from "../../store/SqlWebhooks.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { timeOf } from "../Times.js"
import { actionButton, choices, csrfField, emptyRow, type FieldErrors, layout, secretOnce, textField } from "../Layout.js"
import {
  addEndpoint,
  deliveriesPage,
  type DeliveryView,
  eventWithDeliveries,
  isSeq,
  resendDelivery,
  rotateSecret,
  sendTestEvent
} from "../WebhookManagement.js"
import { notFoundPage } from "./NotFound.js"

const DELIVERIES_SHOWN = 10
/** Deliveries on a page of one endpoint's list. */
export const DELIVERIES_PAGE_SIZE = 25

const NOTICES: Readonly<Record<string, string>> = {
  disabled: "The endpoint was disabled: no events are sent to it until it is enabled.",
  enabled: "The endpoint was enabled: events from now on are sent to it.",
  deleted: "The endpoint was deleted, with the deliveries still owed to it.",
  resent: "The event is due again: the delivery worker sends it within seconds, with a fresh retry schedule."
}

/** A table of deliveries, each event opening its payload, each delivery with its Resend button. */
const deliveriesTable = (
  session: Session,
  caption: string,
  deliveries: ReadonlyArray<DeliveryView>,
  first: { readonly heading: string; readonly cell: (d: DeliveryView) => string },
  back: string
) =>
  html`<table class="deliveries"><caption>${caption}</caption>
<thead><tr><th scope="col">${first.heading}</th><th scope="col">State</th><th scope="col">Status code</th><th scope="col">Attempts</th><th scope="col">Failure reason</th><th scope="col">Next retry</th><th scope="col">Updated</th><th scope="col"><span class="skip">Actions</span></th></tr></thead>
<tbody>${
    deliveries.length === 0 ? emptyRow(8, "Nothing delivered yet.") : deliveries.map((d) =>
      html`<tr><td><a href="/admin/events/event?id=${d.eventId}">${first.cell(d)}</a></td><td>${d.state}</td><td>${
        d.lastStatus === null ? "—" : String(d.lastStatus)
      }</td><td>${String(d.attempts)}</td><td>${d.lastError ?? "—"}</td><td>${timeOf(d.nextAttemptAt, session.timezone)}</td><td>${timeOf(d.updatedAt, session.timezone)}</td><td>${
        actionButton(
          session,
          "/admin/events/resend",
          { event: d.eventId, webhook: d.webhookId, back },
          "Resend",
          "secondary",
          `Resend ${d.type} ${d.eventId} to ${first.cell(d)}`
        )
      }</td></tr>`
    )
  }</tbody></table>`

interface AddForm {
  readonly url: string
  readonly description: string
  readonly events: ReadonlyArray<string>
}

const EVENT_CHOICES: ReadonlyArray<EnabledEvent> = [ALL_EVENTS, ...Events.EventType.literals]

const eventsPage = (session: Session, form: AddForm, errors: FieldErrors, notice: string | undefined) =>
  Effect.gen(function*() {
    const endpoints = yield* (yield* Webhooks).list(session.orgId)
    const sections = yield* Effect.forEach(endpoints, (endpoint) =>
      Effect.map(deliveriesPage(session.orgId, endpoint.id, null, DELIVERIES_SHOWN), (deliveries) =>
        html`<section aria-labelledby="h-${endpoint.id}"><h2 id="h-${endpoint.id}">${endpoint.url}</h2>
<p>${endpoint.description ?? ""} Events: ${endpoint.enabledEvents.join(", ")}. State: <strong>${
          endpoint.disabledAt === null ? "enabled" : "disabled"
        }</strong>${endpoint.disabledReason === null ? "" : ` (${endpoint.disabledReason})`}. Last success: ${
          timeOf(endpoint.lastSuccessAt, session.timezone, "none yet")
        }.</p>
<p>${actionButton(session, "/admin/events/rotate", { id: endpoint.id }, "Rotate secret", "secondary", `Rotate secret of ${endpoint.url}`)}
${
          endpoint.disabledAt === null
            ? actionButton(session, "/admin/events/disable", { id: endpoint.id }, "Disable", "secondary", `Disable ${endpoint.url}`)
            : actionButton(session, "/admin/events/enable", { id: endpoint.id }, "Enable", "secondary", `Enable ${endpoint.url}`)
        }
${actionButton(session, "/admin/events/test", { id: endpoint.id }, "Send test event", "secondary", `Send test event to ${endpoint.url}`)}
<a class="button secondary" href="/admin/events/delete?id=${endpoint.id}" aria-label="Delete ${endpoint.url}">Delete</a></p>
${deliveriesTable(session, "Recent deliveries", deliveries, { heading: "Event", cell: (d) => d.type }, "/admin/events")}
<p><a href="/admin/events/deliveries?id=${endpoint.id}">All deliveries to ${endpoint.url}</a></p></section>`))
    return page(
      layout({
        title: "Events",
        session,
        current: "/admin/events",
        notice,
        alert: Object.keys(errors).length === 0 ? null : "The endpoint was not added: see the fields marked below.",
        body: html`${sections.length === 0 ? html`<p>No webhook endpoints yet.</p>` : sections}
<form class="card" method="post" action="/admin/events/add" novalidate>
<h2>Add an endpoint</h2>
${csrfField(session)}
${textField({ name: "url", label: "Endpoint URL", type: "url", value: form.url, errors, hint: "http:// or https://; Parley posts signed events to it (Standard Webhooks)." })}
${textField({ name: "description", label: "Description (optional)", value: form.description, errors })}
${
          choices({
            name: "events",
            legend: "Event types",
            type: "checkbox",
            errors,
            hint: "* is every type, including ones added later.",
            items: EVENT_CHOICES.map((e) => ({ value: e, label: e, checked: form.events.includes(e) }))
          })
        }
<button type="submit">Add endpoint</button>
</form>`
      }),
      { status: Object.keys(errors).length === 0 ? 200 : 400 }
    )
  })

export const eventsOverview = (request: ConsoleRequest, session: Session) =>
  eventsPage(session, { url: "", description: "", events: [ALL_EVENTS] }, {}, NOTICES[request.query.get("done") ?? ""])

export const addWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const form: AddForm = {
      url: (request.form.get("url") ?? "").trim(),
      description: (request.form.get("description") ?? "").trim(),
      events: request.form.getAll("events")
    }
    const events = EVENT_CHOICES.filter((e) => form.events.includes(e))
    if (events.length === 0 || events.length !== form.events.length) {
      return yield* eventsPage(session, form, { events: "Choose at least one event type, or *." }, undefined)
    }
    if (events.includes(ALL_EVENTS) && events.length > 1) {
      return yield* eventsPage(session, form, { events: "* already means every event type; choose it alone." }, undefined)
    }
    const added = yield* addEndpoint(session.orgId, form.url, events, form.description === "" ? null : form.description)
    if (Either.isLeft(added)) return yield* eventsPage(session, form, { url: `The URL ${added.left}.` }, undefined)
    return page(layout({
      title: "Endpoint added",
      session,
      current: "/admin/events",
      body: html`${secretOnce("new-secret", added.right.secret, "signing secret")}
<section><h2>${added.right.url}</h2><p>Verify each delivery's <code>webhook-signature</code> header with this secret.</p>
<p><a href="/admin/events">Back to Events</a></p></section>`
    }))
  })

const ownEndpoint = (session: Session, id: string) => Effect.flatMap(Webhooks, (webhooks) => webhooks.find(session.orgId, id))

export const rotateWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    const { previousSecretValidUntil, secret } = yield* rotateSecret(found.value.id)
    return page(layout({
      title: "Secret rotated",
      session,
      current: "/admin/events",
      body: html`${secretOnce("new-secret", secret, "signing secret")}
<section><h2>${found.value.url}</h2><p>The previous secret also signs every event until ${previousSecretValidUntil}, so the receiver can switch without a gap.</p>
<p><a href="/admin/events">Back to Events</a></p></section>`
    }))
  })

export const disableWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    yield* (yield* Webhooks).disable(found.value.id, new Date(yield* Clock.currentTimeMillis).toISOString())
    return redirect("/admin/events?done=disabled")
  })

export const enableWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    yield* (yield* Webhooks).enable(found.value.id)
    return redirect("/admin/events?done=enabled")
  })

export const confirmDeleteWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.query.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    return page(layout({
      title: "Delete endpoint",
      session,
      current: "/admin/events",
      body: html`<section><h2>Delete ${found.value.url}?</h2><p>Events not yet delivered to it are dropped. This cannot be undone.</p>
${actionButton(session, "/admin/events/delete", { id: found.value.id }, "Delete endpoint", "danger")} <a href="/admin/events">Cancel</a></section>`
    }))
  })

export const deleteWebhook = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    if (!(yield* (yield* Webhooks).remove(session.orgId, request.form.get("id") ?? ""))) {
      return notFoundPage(session, "No such endpoint.")
    }
    return redirect("/admin/events?done=deleted")
  })

/** Every delivery to one endpoint, newest event first, a page at a time (`before`: the last event's sequence). */
export const endpointDeliveries = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.query.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    const endpoint = found.value
    const beforeText = request.query.get("before") ?? ""
    const before = isSeq(beforeText) ? beforeText : null
    const rows = yield* deliveriesPage(session.orgId, endpoint.id, before, DELIVERIES_PAGE_SIZE + 1)
    const shown = rows.slice(0, DELIVERIES_PAGE_SIZE)
    const last = shown[shown.length - 1]
    const here = `/admin/events/deliveries?id=${endpoint.id}`
    return page(layout({
      title: `Deliveries to ${endpoint.url}`,
      session,
      current: "/admin/events",
      notice: NOTICES[request.query.get("done") ?? ""],
      body: html`<section aria-labelledby="d-list"><h2 id="d-list">Newest first</h2>
${deliveriesTable(session, `Deliveries to ${endpoint.url}`, shown, { heading: "Event", cell: (d) => d.type }, `${here}${before === null ? "" : `&before=${before}`}`)}
<nav aria-label="Pages of deliveries" class="pages">${before === null ? "" : html`<a href="${here}">Newest</a>`}${
        rows.length > DELIVERIES_PAGE_SIZE && last !== undefined ? html`<a href="${here}&before=${last.seq}">Older deliveries</a>` : ""
      }</nav></section>
<p><a href="/admin/events">Back to Events</a></p>`
    }))
  })

/** One event: what was sent (the payload, as every endpoint received it) and how each delivery went. */
export const eventDetail = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const id = request.query.get("id") ?? ""
    const found = yield* eventWithDeliveries(session.orgId, id)
    if (Option.isNone(found)) return notFoundPage(session, "No such event.")
    const { deliveries, event } = found.value
    const urls = new Map((yield* (yield* Webhooks).list(session.orgId)).map((w) => [w.id, w.url]))
    const payload: unknown = JSON.parse(event.payload)
    return page(layout({
      title: `Event ${event.type}`,
      session,
      current: "/admin/events",
      notice: NOTICES[request.query.get("done") ?? ""],
      body: html`<section aria-labelledby="e-event"><h2 id="e-event">${event.id}</h2>
<p>Written ${timeOf(event.timestamp, session.timezone)}. Its <code>webhook-id</code> header is the id above.</p>
<h3>Payload</h3>
<pre>${JSON.stringify(payload, null, 2)}</pre></section>
<section aria-labelledby="e-deliveries"><h2 id="e-deliveries">Deliveries</h2>
${
        deliveriesTable(
          session,
          `Deliveries of ${event.id}`,
          deliveries,
          { heading: "Endpoint", cell: (d) => urls.get(d.webhookId) ?? d.webhookId },
          `/admin/events/event?id=${event.id}`
        )
      }</section>
<p><a href="/admin/events">Back to Events</a></p>`
    }))
  })

/** The pages a Resend may return to: the console's own Events pages only (the form's `back`). */
const backTo = (value: string): string =>
  /^\/admin\/events(\/(event|deliveries)\?[A-Za-z0-9_=&-]*)?$/.test(value) ? value : "/admin/events"

export const resendEvent = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const resent = yield* resendDelivery(session.orgId, request.form.get("event") ?? "", request.form.get("webhook") ?? "")
    if (!resent) return notFoundPage(session, "No such delivery, or it is being sent right now; try again in a minute.")
    const back = backTo(request.form.get("back") ?? "")
    return redirect(`${back}${back.includes("?") ? "&" : "?"}done=resent`)
  })

export const testEvent = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEndpoint(session, request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such endpoint.")
    const config = yield* ServerConfig
    const sent = yield* sendTestEvent(session.orgId, found.value, config.webhookAllowedNetworks)
    const answer = sent.result._tag === "Answered" ? `answered HTTP ${sent.result.status}` : `could not be reached: ${sent.result.reason}`
    const ok = sent.result._tag === "Answered" && sent.result.status >= 200 && sent.result.status < 300
    return page(layout({
      title: "Test event sent",
      session,
      current: "/admin/events",
      ...(ok ? { notice: `${found.value.url} ${answer}.` } : { alert: `${found.value.url} ${answer}.` }),
      body: html`<section aria-labelledby="t-payload"><h2 id="t-payload">What was sent</h2>
<p>A <code>${sent.type}</code> event about a made-up text (id <code>0</code>), signed with the endpoint's secret, <code>webhook-id</code> <code>${sent.eventId}</code>. It is sent once, now, and not kept: it is not in the deliveries.</p>
<pre>${JSON.stringify(JSON.parse(sent.payload), null, 2)}</pre></section>
<p><a href="/admin/events">Back to Events</a></p>`
    }))
  })
