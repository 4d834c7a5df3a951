/**
 * Providers: which real providers the organisation sends through (one per kind of action: the registered
 * providers, providers/Registry.ts; the simulator otherwise), with secrets shown only as "set", and its
 * numbers and bots with their provider ids. Each provider's form is derived from its settings fields and
 * checked with the same rules as `parley providers set` (ProviderSettings); credentials are write-only:
 * the forms never show a stored secret, and an account's secrets are entered whole. Saving a provider for
 * a kind another one serves replaces it, and the page says so.
 */
import { Organisations } from "@parley/core/internal"
import { Clock, Effect, Either } from "effect"
import type { Provider } from "../../providers/Provider.js"
import { checkSettings } from "../../providers/ProviderSettings.js"
import { PROVIDERS, providerNamed, providersFor } from "../../providers/Registry.js"
import { ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { timeOf } from "../Times.js"
import { actionButton, csrfField, emptyRow, type FieldErrors, layout, textField } from "../Layout.js"

const capitalised = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

/** The notice after a save (`done=<name>`, `replaced=<names>`) or a clear. */
const noticeOf = (query: URLSearchParams): string | undefined => {
  const done = query.get("done") ?? ""
  if (done === "cleared") return "Back to the simulator for that provider."
  const provider = providerNamed(done)
  if (provider === undefined) return undefined
  const replaced = (query.get("replaced") ?? "").split(",").flatMap((name) => providerNamed(name)?.label ?? [])
  return `${provider.label} is set: the organisation's ${provider.serves} go through it.` +
    (replaced.length === 0 ? "" : ` It replaces ${replaced.join(", ")}, whose settings were removed.`)
}

/** How many providers' forms show each field: a field several show is named after its provider in each. */
const formsShowing = (field: string) =>
  PROVIDERS.filter((p) => p.fields.some((f) => f.inConsole && f.name === field)).length

/** Form field names (and so element ids): the settings' own, prefixed by the provider where forms share one (`vapiApiBase`). */
const formName = (provider: Provider, field: string): string =>
  formsShowing(field) > 1 ? `${provider.name}${capitalised(field)}` : field

const providersView = (session: Session, errors: FieldErrors, values: Readonly<Record<string, string>>, notice: string | undefined) =>
  Effect.gen(function*() {
    const accounts = yield* (yield* ProviderAccounts).list(session.orgId)
    const organisations = yield* Organisations.Organisations
    const numbers = yield* organisations.listNumbers(session.orgId)
    const bots = yield* organisations.listBots(session.orgId)
    const form = (provider: Provider) => {
      const others = providersFor(provider.kind).filter((p) => p.name !== provider.name).map((p) => p.label)
      return html`<form class="card" method="post" action="/admin/providers/set" novalidate>
<h2>Set ${provider.label} (${provider.serves})</h2>
${csrfField(session)}<input type="hidden" name="kind" value="${provider.name}">
${
        provider.fields.filter((f) => f.inConsole).map((field) => {
          const name = formName(provider, field.name)
          const hint = field.name === "apiBase" ? `Empty: ${provider.label}'s public API.` : capitalised(field.description) + "."
          return field.secret
            ? textField({ name, label: field.label, type: "password", errors, autocomplete: "off", hint })
            : textField({ name, label: field.label, value: values[name] ?? "", errors, hint })
        })
      }
${others.length === 0 ? "" : html`<p class="hint">Saving replaces ${others.join(" or ")} for ${provider.serves}.</p>`}
<button type="submit">Save ${provider.label}</button>
</form>`
    }
    return page(layout({
      title: "Providers",
      session,
      current: "/admin/providers",
      notice,
      alert: Object.keys(errors).length === 0 ? null : "Nothing was saved: see the field marked below.",
      body: html`<section aria-labelledby="p-accounts"><h2 id="p-accounts">Accounts</h2>
<table><thead><tr><th scope="col">Provider</th><th scope="col">Used for</th><th scope="col">Account</th><th scope="col">API base</th><th scope="col">Secrets</th><th scope="col">Updated</th></tr></thead>
<tbody>${
        PROVIDERS.map((provider) => {
          const account = accounts.find((a) => a.kind === provider.name)
          return account === undefined
            ? html`<tr><td>${provider.label}</td><td>${capitalised(provider.serves)}</td><td colspan="4">${
              accounts.some((a) => providersFor(provider.kind).some((p) => p.name === a.kind))
                ? "Not set."
                : "Not set: the simulator is used."
            }</td></tr>`
            : html`<tr><td>${provider.label}</td><td>${capitalised(provider.serves)}</td><td>${account.accountId ?? "—"}</td><td>${account.apiBase}</td><td>set</td><td>${timeOf(account.updatedAt, session.timezone)}</td></tr>`
        })
      }</tbody></table>
<p class="hint">Secrets are write-only: they are stored sealed and never shown again, here or anywhere.</p>
${
        accounts.map((a) =>
          html`<a class="button secondary" href="/admin/providers/clear?kind=${encodeURIComponent(a.kind)}">Use the simulator instead of ${
            providerNamed(a.kind)?.label ?? a.kind
          }</a> `
        )
      }
</section>
${PROVIDERS.map(form)}
<section aria-labelledby="p-numbers"><h2 id="p-numbers">Numbers</h2>
<table><thead><tr><th scope="col">Name</th><th scope="col">Phone</th><th scope="col">Sid</th><th scope="col">Channels</th><th scope="col">Provider ids</th></tr></thead>
<tbody>${
        numbers.length === 0 ? emptyRow(5, "No numbers.") : numbers.map((n) =>
          html`<tr><td>${n.friendlyName}</td><td>${n.phoneNumber}</td><td><code>${n.sid}</code></td><td>${
            [n.sms ? "SMS" : "", n.voice ? "voice" : "", n.whatsApp ? "WhatsApp" : ""].filter((c) => c !== "").join(", ")
          }</td><td>${(n.providerIds ?? []).join(", ") || "—"}</td></tr>`
        )
      }</tbody></table></section>
<section aria-labelledby="p-bots"><h2 id="p-bots">Bots</h2>
<table><thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Direction</th><th scope="col">Active</th><th scope="col">Provider id</th></tr></thead>
<tbody>${
        bots.length === 0 ? emptyRow(5, "No bots.") : bots.map((b) =>
          html`<tr><td>${b.name}</td><td><code>${b.id}</code></td><td>${b.direction}</td><td>${b.active ? "yes" : "no"}</td><td>${
            b.providerId ?? "—"
          }</td></tr>`
        )
      }</tbody></table></section>`
    }), { status: Object.keys(errors).length === 0 ? 200 : 400 })
  })

export const providersPage = (request: ConsoleRequest, session: Session) =>
  providersView(session, {}, {}, noticeOf(request.query))

export const setProvider = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const f = request.form
    const provider = providerNamed(f.get("kind") ?? "") ?? PROVIDERS[0]
    const checked = checkSettings(
      provider,
      Object.fromEntries(provider.fields.map((field) => [field.name, f.get(formName(provider, field.name)) ?? undefined])),
      "organisation"
    )
    if (Either.isLeft(checked)) {
      const name = formName(provider, checked.left.field)
      // Only what is not secret is given back to the form.
      const values = Object.fromEntries(
        provider.fields.filter((field) => !field.secret).map((field) => {
          const formField = formName(provider, field.name)
          return [formField, f.get(formField) ?? ""]
        })
      )
      const message = checked.left.message
      return yield* providersView(session, { [name]: `${capitalised(message)}.` }, values, undefined)
    }
    const replaced = yield* (yield* ProviderAccounts).set(
      { orgId: session.orgId, provider: provider.name, ...checked.right },
      new Date(yield* Clock.currentTimeMillis).toISOString(),
      providersFor(provider.kind).map((p) => p.name)
    )
    const also = replaced.length === 0 ? "" : `&replaced=${encodeURIComponent(replaced.join(","))}`
    return redirect(`/admin/providers?done=${encodeURIComponent(provider.name)}${also}`)
  })

/** Going back to the simulator deletes the stored credentials: a page of its own asks first. */
export const confirmClearProvider = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const provider = providerNamed(request.query.get("kind") ?? "")
    const accounts = yield* (yield* ProviderAccounts).list(session.orgId)
    if (provider === undefined || !accounts.some((a) => a.kind === provider.name)) return redirect("/admin/providers")
    return page(layout({
      title: "Use the simulator",
      session,
      current: "/admin/providers",
      body: html`<section aria-labelledby="confirm-title"><h2 id="confirm-title">Use the simulator instead of ${provider.label}?</h2>
<p>The ${provider.label} credentials stored for this organisation are deleted. From now on ${provider.serves} go to the simulator: nothing reaches a real phone until the account is set again, secrets included.</p>
${actionButton(session, "/admin/providers/clear", { kind: provider.name }, `Delete the ${provider.label} account`, "danger")} <a href="/admin/providers">Cancel</a></section>`
    }))
  })

export const clearProvider = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const provider = providerNamed(request.form.get("kind") ?? "")
    if (provider !== undefined) yield* (yield* ProviderAccounts).clear(session.orgId, provider.name)
    return redirect("/admin/providers?done=cleared")
  })
