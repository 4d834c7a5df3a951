/**
 * Events: the organisation's webhook endpoints and what was delivered to each. Adding one shows its signing
 * secret once; rotating shows the new one once (the previous keeps signing for a day); disable, enable and
 * delete (after confirmation). The same endpoints, rules and store as the API and `parley webhooks`.
 */
import { ALL_EVENTS, type EnabledEvent, Events } from "@parley/core/internal"
import { Clock, Effect, Either, Option } from "effect"
import { Webhooks } from "../../store/SqlWebhooks.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { actionButton, choices, csrfField, emptyRow, type FieldErrors, layout, secretOnce, textField } from "../Layout.js"
import { addEndpoint, recentDeliveries, rotateSecret } from "../WebhookManagement.js"
import { notFoundPage } from "./NotFound.js"

const DELIVERIES_SHOWN = 10

const NOTICES: Readonly<Record<string, string>> = {
  disabled: "The endpoint was disabled: no events are sent to it until it is enabled.",
  enabled: "The endpoint was enabled: events from now on are sent to it.",
  deleted: "The endpoint was deleted, with the deliveries still owed to it."
}

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
      Effect.map(recentDeliveries(session.orgId, endpoint.id, DELIVERIES_SHOWN), (deliveries) =>
        html`<section aria-labelledby="h-${endpoint.id}"><h2 id="h-${endpoint.id}">${endpoint.url}</h2>
<p>${endpoint.description ?? ""} Events: ${endpoint.enabledEvents.join(", ")}. State: <strong>${
          endpoint.disabledAt === null ? "enabled" : "disabled"
        }</strong>${endpoint.disabledReason === null ? "" : ` (${endpoint.disabledReason})`}. Last success: ${
          endpoint.lastSuccessAt ?? "none yet"
        }.</p>
<p>${actionButton(session, "/admin/events/rotate", { id: endpoint.id }, "Rotate secret")}
${
          endpoint.disabledAt === null
            ? actionButton(session, "/admin/events/disable", { id: endpoint.id }, "Disable")
            : actionButton(session, "/admin/events/enable", { id: endpoint.id }, "Enable")
        }
<a class="button secondary" href="/admin/events/delete?id=${endpoint.id}">Delete</a></p>
<table><caption>Recent deliveries</caption>
<thead><tr><th scope="col">Event</th><th scope="col">State</th><th scope="col">Status code</th><th scope="col">Attempts</th><th scope="col">Next retry</th><th scope="col">Updated</th></tr></thead>
<tbody>${
          deliveries.length === 0 ? emptyRow(6, "Nothing delivered yet.") : deliveries.map((d) =>
            html`<tr><td>${d.type}</td><td>${d.state}</td><td>${d.lastStatus === null ? "—" : String(d.lastStatus)}</td><td>${
              String(d.attempts)
            }</td><td>${d.nextAttemptAt ?? "—"}</td><td>${d.updatedAt}</td></tr>`
          )
        }</tbody></table></section>`))
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
