/**
 * Developer access: the organisation's API keys, 25 a page newest first (a keyset on creation time and id, so
 * every key is reachable however many there are), searched by name or prefix. A key is minted by the same
 * rules and service as `parley keys create` (KeyIssuing); its secret is shown once, on the page the form
 * redirects to (POST-redirect-GET through ShownOnce: a reload shows it no more and never makes a second key).
 * Each key's page renames it, rolls it (a new secret, the old one working for a chosen overlap, as Stripe
 * does) and leads to revoking it, which asks for confirmation first; the API refuses a revoked or expired key
 * (401) from its next request.
 */
import { ALL_SCOPES, ApiKeyStore, type KeyMode, Organisations } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { KeyUsage } from "../../store/KeyUsage.js"
import { html } from "../Html.js"
import { issueKey, type KeyField, MAX_KEY_NAME, renameKey, ROLL_OVERLAPS, rollKey } from "../KeyIssuing.js"
import { timeOf } from "../Times.js"
import { actionButton, choices, csrfField, emptyRow, type FieldErrors, layout, secretOnce, textField } from "../Layout.js"
import type { ShownOnce } from "../ShownOnce.js"
import { notFoundPage } from "./NotFound.js"

/** Keys a page of Developer access lists. */
export const KEYS_PAGE_SIZE = 25
/** Longest search kept: a name is at most MAX_KEY_NAME. */
const MAX_SEARCH = MAX_KEY_NAME

const stateOf = (key: ApiKeyStore.ApiKeyRow, now: number) =>
  key.revokedAt !== null ? "revoked" : key.expiresAt !== null && Date.parse(key.expiresAt) <= now ? "expired" : "active"

/** Names for the sids and ids a key is restricted to: the numbers as numbers, the bots by name. */
const restrictionNames = (session: Session) =>
  Effect.gen(function*() {
    const organisations = yield* Organisations.Organisations
    const numbers = new Map((yield* organisations.listNumbers(session.orgId)).map((n) => [n.sid, `${n.phoneNumber} (${n.friendlyName})`]))
    const bots = new Map((yield* organisations.listBots(session.orgId)).map((b) => [b.id, b.name]))
    // A sid or id no longer in the organisation still shows, as itself.
    const named = (items: ReadonlyArray<string>, names: ReadonlyMap<string, string>) =>
      items.length === 0 ? "all" : items.map((i) => names.get(i) ?? i).join(", ")
    return {
      numbers: (key: ApiKeyStore.ApiKeyRow) => named(key.numberSids, numbers),
      bots: (key: ApiKeyStore.ApiKeyRow) => named(key.botIds, bots)
    }
  })

const keyHref = (key: ApiKeyStore.ApiKeyRow) => `/admin/keys/key?id=${encodeURIComponent(key.id)}`

/** The accessible name of a key's link or button: its name and prefix (a rolled key shares its name with its successor). */
const keyLabel = (key: ApiKeyStore.ApiKeyRow) => `${key.name} (${key.prefix}…)`

const NOTICES: Readonly<Record<string, string>> = {
  revoked: "The key was revoked: the API refuses it from now on.",
  renamed: "The key was renamed."
}

const listHref = (search: string, after: string | null) => {
  const params = new URLSearchParams()
  if (search !== "") params.set("q", search)
  if (after !== null) params.set("after", after)
  const query = params.toString()
  return query === "" ? "/admin/keys" : `/admin/keys?${query}`
}

export const keysPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const search = (request.query.get("q") ?? "").trim().slice(0, MAX_SEARCH)
    const after = request.query.get("after")
    const { keys, next } = yield* (yield* ApiKeyStore.ApiKeyStore).page(session.orgId, { search, after, limit: KEYS_PAGE_SIZE })
    const now = yield* Clock.currentTimeMillis
    const lastUsed = yield* (yield* KeyUsage).lastUsed(keys.map((key) => key.id))
    const names = yield* restrictionNames(session)
    return page(layout({
      title: "Developer access",
      session,
      current: "/admin/keys",
      notice: NOTICES[request.query.get("done") ?? ""],
      body: html`<p><a class="button" href="/admin/keys/new">Create key</a></p>
<form class="card filters" method="get" action="/admin/keys" role="search" aria-label="Search keys">
<div class="filter">${textField({ name: "q", label: "Name or prefix contains", value: search })}</div>
<div class="filter"><button type="submit">Search keys</button> <a href="/admin/keys">Clear</a></div>
</form>
<section aria-labelledby="keys-heading"><h2 id="keys-heading">API keys${search === "" ? "" : html` matching “${search}”`}, newest first</h2>
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Numbers</th><th scope="col">Bots</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col"><span class="skip">Actions</span></th></tr></thead>
<tbody>
${
        keys.length === 0 ? emptyRow(11, search === "" && after === null ? "No keys yet." : "No keys found.") : keys.map((key) => {
          const state = stateOf(key, now)
          return html`<tr>
<td><a href="${keyHref(key)}" aria-label="${keyLabel(key)}">${key.name}</a></td><td><code>${key.prefix}…</code></td><td>${key.mode === "live" ? "Live" : "Test"}</td>
<td>${key.scopes.join(", ")}</td><td>${names.numbers(key)}</td><td>${names.bots(key)}</td>
<td>${timeOf(key.createdAt, session.timezone)}</td><td>${timeOf(lastUsed.get(key.id), session.timezone, "never")}</td><td>${timeOf(key.expiresAt, session.timezone, "never")}</td><td>${state}</td>
<td>${
            state === "revoked"
              ? ""
              : html`<a class="button secondary" href="/admin/keys/revoke?id=${key.id}" aria-label="Revoke ${keyLabel(key)}">Revoke</a>`
          }</td></tr>`
        })
      }
</tbody></table>
<nav aria-label="Pages of keys" class="pages">${after === null ? "" : html`<a href="${listHref(search, null)}">Newest keys</a> `}${
        next === null ? "" : html`<a href="${listHref(search, next)}">Older keys</a>`
      }</nav></section>`
    }))
  })

interface KeyForm {
  readonly name: string
  readonly mode: KeyMode
  readonly scopes: ReadonlyArray<string>
  readonly numbers: ReadonlyArray<string>
  readonly bots: ReadonlyArray<string>
  readonly expiresAt: string
}

const EMPTY_FORM: KeyForm = { name: "", mode: "live", scopes: [], numbers: [], bots: [], expiresAt: "" }

const keyForm = (session: Session, form: KeyForm, errors: FieldErrors, alert: string | null) =>
  Effect.gen(function*() {
    const organisations = yield* Organisations.Organisations
    const numbers = yield* organisations.listNumbers(session.orgId)
    const bots = yield* organisations.listBots(session.orgId)
    return page(
      layout({
        title: "Create key",
        session,
        current: "/admin/keys",
        alert,
        body: html`<form class="card" method="post" action="/admin/keys/new" novalidate>
${csrfField(session)}
${
          textField({
            name: "name",
            label: "Name",
            value: form.name,
            errors,
            hint: `Tells the key apart, such as the integration that uses it; at most ${MAX_KEY_NAME} characters.`
          })
        }
${
          choices({
            name: "scopes",
            legend: "Scopes",
            type: "checkbox",
            errors,
            items: ALL_SCOPES.map((scope) => ({ value: scope, label: scope, checked: form.scopes.includes(scope) }))
          })
        }
${
          choices({
            name: "mode",
            legend: "Mode",
            type: "radio",
            errors,
            hint: "Live keys act; test keys simulate creation and cancellation.",
            items: [
              { value: "live", label: "Live", checked: form.mode === "live" },
              { value: "test", label: "Test", checked: form.mode === "test" }
            ]
          })
        }
${
          choices({
            name: "numbers",
            legend: "Numbers (optional)",
            type: "checkbox",
            errors,
            hint: "None chosen: the key may use every number.",
            items: numbers.map((n) => ({
              value: n.sid,
              label: `${n.friendlyName} ${n.phoneNumber}`,
              checked: form.numbers.includes(n.sid)
            }))
          })
        }
${
          choices({
            name: "bots",
            legend: "Bots (optional)",
            type: "checkbox",
            errors,
            hint: "None chosen: the key may use every bot.",
            items: bots.map((b) => ({ value: b.id, label: b.name, checked: form.bots.includes(b.id) }))
          })
        }
${
          textField({
            name: "expiresAt",
            label: "Expires at (optional)",
            value: form.expiresAt,
            errors,
            hint: "ISO 8601 with a time zone offset, such as 2030-01-31T09:30:00Z. Empty: the key does not expire."
          })
        }
<button type="submit">Create key</button> <a href="/admin/keys">Cancel</a>
</form>`
      }),
      { status: alert === null && Object.keys(errors).length === 0 ? 200 : 400 }
    )
  })

export const newKeyPage = (_request: ConsoleRequest, session: Session) => keyForm(session, EMPTY_FORM, {}, null)

export const createKey = (shown: ShownOnce) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const f = request.form
    const form: KeyForm = {
      name: f.get("name") ?? "",
      mode: f.get("mode") === "test" ? "test" : "live",
      scopes: f.getAll("scopes"),
      numbers: f.getAll("numbers"),
      bots: f.getAll("bots"),
      expiresAt: (f.get("expiresAt") ?? "").trim()
    }
    const result = yield* Effect.either(issueKey({
      orgId: session.orgId,
      name: form.name,
      mode: form.mode,
      scopes: form.scopes,
      numberSids: form.numbers,
      botIds: form.bots,
      expiresAt: form.expiresAt === "" ? null : form.expiresAt
    }))
    if (result._tag === "Left") {
      const refusal = result.left
      if (refusal._tag !== "KeyRefused") return yield* Effect.fail(refusal)
      const field: KeyField = refusal.field
      return yield* field === "crm"
        ? keyForm(session, form, {}, `${refusal.message} See the CRM page.`)
        : keyForm(session, form, { [field]: refusal.message }, "The key was not created: see the field marked below.")
    }
    const { key, token } = result.right
    // Answered with a redirect: reloading the page that shows the secret never posts the form again.
    return redirect(`/admin/keys/created?ticket=${shown.put(session.adminId, { keyId: key.id, token })}`)
  })

/** The key, if it is this organisation's; another's is as missing as one that does not exist. */
const ownKey = (session: Session, id: string) =>
  Effect.map(
    Effect.flatMap(ApiKeyStore.ApiKeyStore, (store) => store.get(id)),
    Option.filter((key) => key.orgId === session.orgId)
  )

export const confirmRevokePage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownKey(session, request.query.get("id") ?? "")
    if (Option.isNone(found) || found.value.revokedAt !== null) return notFoundPage(session, "No such active key.")
    const key = found.value
    return page(layout({
      title: "Revoke key",
      session,
      current: "/admin/keys",
      body: html`<section><h2>Revoke “${key.name}” (<code>${key.prefix}…</code>)?</h2>
<p>Every request made with it will be refused with 401 from now on. This cannot be undone.</p>
${actionButton(session, "/admin/keys/revoke", { id: key.id }, "Revoke key", "danger")} <a href="/admin/keys">Cancel</a></section>`
    }))
  })

export const revokeKey = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const found = yield* ownKey(session, request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such key.")
    const at = new Date(yield* Clock.currentTimeMillis).toISOString()
    yield* (yield* ApiKeyStore.ApiKeyStore).revoke(found.value.id, at)
    return redirect("/admin/keys?done=revoked")
  })

/** The page a create or a roll redirects to: the new secret, once; a reload (or a stale link) says it was shown. */
export const createdKeyPage = (shown: ShownOnce) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const held = shown.take(session.adminId, request.query.get("ticket") ?? "")
    const found = held === undefined ? Option.none() : yield* ownKey(session, held.keyId)
    if (held === undefined || Option.isNone(found)) {
      return page(layout({
        title: "Key already shown",
        session,
        current: "/admin/keys",
        body: html`<p>A key's secret is shown once, on the page right after it is made, and this one was shown already (or was not picked up within a few minutes). Parley does not keep it: if it was not copied, roll the key for a new secret.</p>
<p><a href="/admin/keys">Back to Developer access</a></p>`
      }))
    }
    const key = found.value
    const replaced = held.replaced
    return page(layout({
      title: replaced === undefined ? "Key created" : "Key rolled",
      session,
      current: "/admin/keys",
      body: html`${secretOnce("new-key", held.token, "key")}
<section><h2>${key.name}</h2><p>${key.mode === "live" ? "Live" : "Test"} key with ${key.scopes.join(", ")}. Store it on your server, never in browser code.</p>
${
        replaced === undefined ? "" : html`<p>The old secret ${
          replaced.expiresAt === null ? "keeps working." : html`works until <time datetime="${replaced.expiresAt}">${replaced.expiresAt}</time>, then the API refuses it (401).`
        }</p>`
      }
<p><a href="${keyHref(key)}">Open the key</a> · <a href="/admin/keys">Back to Developer access</a></p></section>`
    }))
  })

/** One key: everything about it, its name to edit, a roll with a chosen overlap, and the way to revoke it. */
export const keyPage = (request: ConsoleRequest, session: Session, errors: FieldErrors = {}, nameValue?: string) =>
  Effect.gen(function*() {
    const found = yield* ownKey(session, request.query.get("id") ?? request.form.get("id") ?? "")
    if (Option.isNone(found)) return notFoundPage(session, "No such key.")
    const key = found.value
    const now = yield* Clock.currentTimeMillis
    const state = stateOf(key, now)
    const lastUsed = (yield* (yield* KeyUsage).lastUsed([key.id])).get(key.id) ?? "never"
    const names = yield* restrictionNames(session)
    const usable = state === "active"
    const row = (label: string, value: ReturnType<typeof html> | string) => html`<tr><th scope="row">${label}</th><td>${value}</td></tr>`
    return page(layout({
      title: `Key ${key.name}`,
      session,
      current: "/admin/keys",
      notice: NOTICES[request.query.get("done") ?? ""],
      alert: Object.keys(errors).length === 0 ? null : "Nothing was changed: see the field marked below.",
      body: html`<section aria-labelledby="k-details"><h2 id="k-details">Details</h2>
<table>
${row("Id", html`<code>${key.id}</code>`)}
${row("Prefix", html`<code>${key.prefix}…</code>`)}
${row("Mode", key.mode === "live" ? "Live" : "Test")}
${row("Scopes", key.scopes.join(", "))}
${row("Numbers", names.numbers(key))}
${row("Bots", names.bots(key))}
${row("Created", key.createdAt)}
${row("Last used", lastUsed)}
${row("Expires", key.expiresAt ?? "never")}
${row("State", key.revokedAt === null ? state : `revoked at ${key.revokedAt}`)}
</table>
<p><a href="/admin/activity?key=${encodeURIComponent(key.id)}">Messages sent with this key</a></p></section>
${
        !usable ? html`<p>A ${state} key cannot be renamed or rolled.</p>` : html`<section aria-labelledby="k-name"><h2 id="k-name">Rename</h2>
<form class="card" method="post" action="/admin/keys/edit" novalidate>
${csrfField(session)}<input type="hidden" name="id" value="${key.id}">
${textField({ name: "name", label: "Name", value: nameValue ?? key.name, errors, hint: `At most ${MAX_KEY_NAME} characters.` })}
<button type="submit">Save name</button>
</form></section>
<section aria-labelledby="k-roll"><h2 id="k-roll">Roll key</h2>
<form class="card" method="post" action="/admin/keys/roll">
${csrfField(session)}<input type="hidden" name="id" value="${key.id}">
<p>Rolling makes a new secret with the same name, scopes and restrictions, and shows it once. Keep the old one working long enough to deploy the new one everywhere it is used.</p>
${
          choices({
            name: "overlap",
            legend: "The old secret stops working",
            type: "radio",
            errors,
            items: ROLL_OVERLAPS.map((o) => ({ value: o.name, label: o.label, checked: o.name === "24h" }))
          })
        }
<button type="submit">Roll key</button>
</form></section>
<section aria-labelledby="k-revoke"><h2 id="k-revoke">Revoke</h2>
<p><a class="button danger" href="/admin/keys/revoke?id=${key.id}">Revoke this key…</a></p></section>`
      }
<p><a href="/admin/keys">Back to Developer access</a></p>`
    }), { status: Object.keys(errors).length === 0 ? 200 : 400 })
  })

export const keyDetailPage = (request: ConsoleRequest, session: Session) => keyPage(request, session)

export const renameKeyAction = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const id = request.form.get("id") ?? ""
    const result = yield* Effect.either(renameKey(session.orgId, id, request.form.get("name") ?? ""))
    if (result._tag === "Right") return redirect(`/admin/keys/key?id=${encodeURIComponent(id)}&done=renamed`)
    const refusal = result.left
    if (refusal._tag !== "KeyRefused") return yield* Effect.fail(refusal)
    if (refusal.field === "key") return notFoundPage(session, refusal.message)
    return yield* keyPage(request, session, { [refusal.field]: refusal.message }, request.form.get("name") ?? "")
  })

export const rollKeyAction = (shown: ShownOnce) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const result = yield* Effect.either(rollKey(session.orgId, request.form.get("id") ?? "", request.form.get("overlap") ?? ""))
    if (result._tag === "Left") {
      const refusal = result.left
      if (refusal._tag !== "KeyRefused") return yield* Effect.fail(refusal)
      if (refusal.field === "key") return notFoundPage(session, refusal.message)
      return yield* keyPage(request, session, { [refusal.field]: refusal.message })
    }
    const { key, old, token } = result.right
    const ticket = shown.put(session.adminId, { keyId: key.id, token, replaced: { keyId: old.id, expiresAt: old.expiresAt } })
    return redirect(`/admin/keys/created?ticket=${ticket}`)
  })
