/**
 * Developer access: the organisation's API keys. A key is minted by the same rules and service as
 * `parley keys create` (KeyIssuing); it is shown once, on the answer to the form, and never again.
 * Revoking asks for confirmation first; the API refuses the key (401) from its next request.
 */
import { ALL_SCOPES, ApiKeyStore, type KeyMode, Organisations } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { KeyUsage } from "../../store/KeyUsage.js"
import { html } from "../Html.js"
import { timeOf } from "../Times.js"
import { issueKey, type KeyField } from "../KeyIssuing.js"
import { actionButton, choices, csrfField, emptyRow, type FieldErrors, layout, secretOnce, textField } from "../Layout.js"
import { notFoundPage } from "./NotFound.js"

const stateOf = (key: ApiKeyStore.ApiKeyRow, now: number) =>
  key.revokedAt !== null ? "revoked" : key.expiresAt !== null && Date.parse(key.expiresAt) <= now ? "expired" : "active"

const restriction = (items: ReadonlyArray<string>) => (items.length === 0 ? "all" : items.join(", "))

const NOTICES: Readonly<Record<string, string>> = { revoked: "The key was revoked: the API refuses it from now on." }

export const keysPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const keys = yield* (yield* ApiKeyStore.ApiKeyStore).list(session.orgId)
    const now = yield* Clock.currentTimeMillis
    const lastUsed = yield* (yield* KeyUsage).lastUsed(keys.map((key) => key.id))
    return page(layout({
      title: "Developer access",
      session,
      current: "/admin/keys",
      notice: NOTICES[request.query.get("done") ?? ""],
      body: html`<p><a class="button" href="/admin/keys/new">Create key</a></p>
<section aria-labelledby="keys-heading"><h2 id="keys-heading">API keys</h2>
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Numbers</th><th scope="col">Bots</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col"><span class="skip">Actions</span></th></tr></thead>
<tbody>
${
        keys.length === 0 ? emptyRow(11, "No keys yet.") : [...keys].reverse().map((key) => {
          const state = stateOf(key, now)
          return html`<tr>
<td>${key.name}</td><td><code>${key.prefix}…</code></td><td>${key.mode === "live" ? "Live" : "Test"}</td>
<td>${key.scopes.join(", ")}</td><td>${restriction(key.numberSids)}</td><td>${restriction(key.botIds)}</td>
<td>${timeOf(key.createdAt, session.timezone)}</td><td>${timeOf(lastUsed.get(key.id), session.timezone, "never")}</td><td>${timeOf(key.expiresAt, session.timezone, "never")}</td><td>${state}</td>
<td>${
            state === "revoked"
              ? ""
              : html`<a class="button secondary" href="/admin/keys/revoke?id=${key.id}" aria-label="Revoke ${key.name}">Revoke</a>`
          }</td></tr>`
        })
      }
</tbody></table></section>`
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
${textField({ name: "name", label: "Name", value: form.name, errors, hint: "Tells the key apart, such as the integration that uses it." })}
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

export const createKey = (request: ConsoleRequest, session: Session) =>
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
    return page(layout({
      title: "Key created",
      session,
      current: "/admin/keys",
      body: html`${secretOnce("new-key", token, "key")}
<section><h2>${key.name}</h2><p>${key.mode === "live" ? "Live" : "Test"} key with ${key.scopes.join(", ")}. Store it on your server, never in browser code.</p>
<p><a href="/admin/keys">Back to Developer access</a></p></section>`
    }))
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
