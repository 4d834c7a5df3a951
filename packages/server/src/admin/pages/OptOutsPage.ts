/**
 * Opt-outs: the organisation's list of numbers that may not be texted or called, newest first and paged;
 * search by number (with its history), add with channels and a reason, remove after a confirmation. The
 * same list and rules as the API and `parley optouts` (the core's Consent): recorded with source `console`
 * and the administrator's email as the cause; an administrator may lift any opt-out, a carrier's included.
 */
import { ALL_OPT_OUT_CHANNELS, Consent, type OptOutChannel, OptOutReason, OptOuts, PhoneOrShortCode } from "@parley/core/internal"
import { Clock, Effect, Option, Schema } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { timeOf } from "../Times.js"
import { actionButton, choices, csrfField, emptyRow, type FieldErrors, layout, textField } from "../Layout.js"
import { notFoundPage } from "./NotFound.js"

/** As the API's pages. */
const PAGE_SIZE = 50

const isPhone = Schema.is(PhoneOrShortCode)
const isReason = Schema.is(OptOutReason)

const PHONE_PROBLEM = "Enter a number in E.164, such as +14155550100 (or a short code such as 89898)."

const NOTICES: Readonly<Record<string, string>> = {
  added: "The number was opted out: nothing is sent to it on those channels from now on.",
  unchanged: "The number was already opted out of exactly those channels: nothing changed.",
  removed: "The opt-out was lifted: the number may be texted and called again."
}

interface AddForm {
  readonly phone: string
  readonly channels: ReadonlyArray<string>
  readonly reason: string
}

const emptyForm: AddForm = { phone: "", channels: ALL_OPT_OUT_CHANNELS, reason: "" }

const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

const orDash = (value: string | null) => value ?? "—"

/** The next page starts strictly after the last entry shown (its time, then its number). */
const nextPageLink = (phone: string | undefined, last: OptOuts.OptOutEntry) => {
  const query = new URLSearchParams({ beforeAt: last.createdAt, beforePhone: last.phone })
  if (phone !== undefined) query.set("search", phone)
  return `/admin/opt-outs?${query.toString()}`
}

const listPage = (
  session: Session,
  request: { readonly search: string; readonly before: OptOuts.OptOutPageRequest["before"] },
  form: AddForm,
  errors: FieldErrors,
  notice: string | undefined
) =>
  Effect.gen(function*() {
    const optOuts = yield* OptOuts.OptOuts
    const search = request.search.trim()
    const searchError = search !== "" && !isPhone(search) ? PHONE_PROBLEM : undefined
    const phone = search !== "" && searchError === undefined ? search : undefined
    const entries = searchError !== undefined
      ? []
      : yield* optOuts.page({ orgId: session.orgId, phone, before: request.before, limit: PAGE_SIZE + 1 })
    const shown = entries.slice(0, PAGE_SIZE)
    const last = shown[shown.length - 1]
    const history = phone === undefined ? [] : yield* optOuts.history(session.orgId, phone)
    const allErrors: FieldErrors = searchError === undefined ? errors : { ...errors, search: searchError }
    return page(
      layout({
        title: "Opt-outs",
        session,
        current: "/admin/opt-outs",
        notice,
        alert: Object.keys(errors).length === 0 ? null : "Nothing was changed: see the fields marked below.",
        body: html`<form class="card" method="get" action="/admin/opt-outs" role="search" novalidate>
${textField({ name: "search", label: "Number", value: request.search, errors: allErrors, hint: "Search by number in E.164; empty for the whole list." })}
<button type="submit" class="secondary">Search</button>
</form>
<table><caption>${phone === undefined ? "Opted-out numbers, newest first" : `Opt-out of ${phone}`}</caption>
<thead><tr><th scope="col">Number</th><th scope="col">Channels</th><th scope="col">Source</th><th scope="col">Since</th><th scope="col">Reason</th><th scope="col">Cause</th><th scope="col">Action</th></tr></thead>
<tbody>${
          shown.length === 0
            ? emptyRow(7, phone === undefined ? "No opt-outs." : `${phone} has not opted out: it may be texted and called.`)
            : shown.map((e) =>
              html`<tr><td><a href="/admin/opt-outs?${new URLSearchParams({ search: e.phone }).toString()}">${e.phone}</a></td><td>${
                e.channels.join(", ")
              }</td><td>${e.source}</td><td>${timeOf(e.createdAt, session.timezone)}</td><td>${orDash(e.reason)}</td><td>${orDash(e.cause)}</td><td><a class="button secondary" href="/admin/opt-outs/remove?${
                new URLSearchParams({ phone: e.phone }).toString()
              }" aria-label="Remove the opt-out of ${e.phone}">Remove</a></td></tr>`
            )
        }</tbody></table>
${entries.length > PAGE_SIZE && last !== undefined ? html`<p><a href="${nextPageLink(phone, last)}">Older opt-outs</a></p>` : ""}
${
          phone === undefined ? "" : html`<table><caption>History of ${phone}, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Change</th><th scope="col">Channels</th><th scope="col">Source</th><th scope="col">Reason</th><th scope="col">Cause</th></tr></thead>
<tbody>${
            history.length === 0 ? emptyRow(6, "No changes recorded.") : history.map((c) =>
              html`<tr><td>${timeOf(c.at, session.timezone)}</td><td>${c.change}</td><td>${c.channels.join(", ")}</td><td>${c.source}</td><td>${
                orDash(c.reason)
              }</td><td>${orDash(c.cause)}</td></tr>`
            )
          }</tbody></table>`
        }
<form class="card" method="post" action="/admin/opt-outs/add" novalidate>
<h2>Opt a number out</h2>
${csrfField(session)}
${textField({ name: "phone", label: "Number to opt out", value: form.phone, errors, hint: "E.164, such as +14155550100." })}
${
          choices({
            name: "channels",
            legend: "Channels",
            type: "checkbox",
            errors,
            hint: "Nothing is sent to the number on these channels until the opt-out is lifted.",
            items: ALL_OPT_OUT_CHANNELS.map((c) => ({ value: c, label: c === "Call" ? "Call (AI calls)" : c, checked: form.channels.includes(c) }))
          })
        }
${textField({ name: "reason", label: "Reason (optional)", value: form.reason, errors, hint: "Kept in the number's history; at most 500 characters." })}
<button type="submit">Opt out</button>
</form>`
      }),
      { status: Object.keys(errors).length === 0 && searchError === undefined ? 200 : 400 }
    )
  })

export const optOutsPage = (request: ConsoleRequest, session: Session) => {
  const beforeAt = request.query.get("beforeAt")
  const beforePhone = request.query.get("beforePhone")
  return listPage(session, {
    search: request.query.get("search") ?? "",
    before: beforeAt !== null && beforePhone !== null ? { createdAt: beforeAt, phone: beforePhone } : undefined
  }, emptyForm, {}, NOTICES[request.query.get("done") ?? ""])
}

export const addOptOut = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const form: AddForm = {
      phone: (request.form.get("phone") ?? "").trim(),
      channels: request.form.getAll("channels"),
      reason: (request.form.get("reason") ?? "").trim()
    }
    const channels: ReadonlyArray<OptOutChannel> = ALL_OPT_OUT_CHANNELS.filter((c) => form.channels.includes(c))
    const errors: Record<string, string> = {}
    if (!isPhone(form.phone)) errors["phone"] = PHONE_PROBLEM
    if (channels.length === 0 || channels.length !== form.channels.length) errors["channels"] = "Choose at least one channel."
    if (!isReason(form.reason)) errors["reason"] = "The reason may be at most 500 characters."
    if (Object.keys(errors).length > 0) return yield* listPage(session, { search: "", before: undefined }, form, errors, undefined)
    const { changed } = yield* (yield* Consent.Consent).optOut(
      session.orgId,
      form.phone,
      { channels, reason: form.reason === "" ? null : form.reason },
      { source: "console", cause: session.email, at: yield* nowIso }
    )
    return redirect(`/admin/opt-outs?${new URLSearchParams({ search: form.phone, done: changed ? "added" : "unchanged" }).toString()}`)
  })

const ownEntry = (session: Session, phone: string) =>
  isPhone(phone) ? Effect.flatMap(OptOuts.OptOuts, (optOuts) => optOuts.find(session.orgId, phone)) : Effect.succeed(Option.none())

export const confirmRemoveOptOut = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownEntry(session, (request.query.get("phone") ?? "").trim())
    if (Option.isNone(found)) return notFoundPage(session, "That number has not opted out.")
    const entry = found.value
    return page(layout({
      title: "Remove opt-out",
      session,
      current: "/admin/opt-outs",
      body: html`<section><h2>Let ${entry.phone} be texted and called again?</h2>
<p>It opted out of ${entry.channels.join(", ")} on ${timeOf(entry.createdAt, session.timezone)} (source ${entry.source}${
        entry.cause === null ? "" : `, ${entry.cause}`
      }).${
        entry.source === "keyword" || entry.source === "carrier"
          ? " The recipient asked for this themselves: lift it only with their consent, given since."
          : ""
      }</p>
${actionButton(session, "/admin/opt-outs/remove", { phone: entry.phone }, "Remove opt-out", "danger")} <a href="/admin/opt-outs">Cancel</a></section>`
    }))
  })

export const removeOptOut = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const phone = (request.form.get("phone") ?? "").trim()
    if (!isPhone(phone)) return notFoundPage(session, "That number has not opted out.")
    const notOptedOut = () => Effect.succeed(notFoundPage(session, "That number has not opted out."))
    return yield* (yield* Consent.Consent).optIn(session.orgId, phone, {
      source: "console",
      cause: session.email,
      at: yield* nowIso
    }).pipe(
      Effect.as(redirect(`/admin/opt-outs?${new URLSearchParams({ search: phone, done: "removed" }).toString()}`)),
      // An administrator may lift any opt-out: Consent refuses a carrier's to keys only, never to the console.
      Effect.catchTags({ NotOptedOut: notOptedOut, CarrierOptOut: notOptedOut })
    )
  })
