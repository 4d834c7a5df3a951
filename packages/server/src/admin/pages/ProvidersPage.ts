/**
 * Providers: which real providers the organisation sends through (Twilio for texts and WhatsApp, Vapi for
 * AI calls; the simulator otherwise), with secrets shown only as "set", and its numbers and bots with
 * their provider ids. Credentials are set with the same rules as `parley providers set` (ProviderSettings)
 * and are write-only: the forms never show a stored secret, and an account's secrets are entered whole.
 */
import { Organisations } from "@parley/core/internal"
import { Clock, Effect, Either } from "effect"
import { PROVIDER_KINDS, ProviderAccounts, type ProviderKind } from "../../store/SqlProviderAccounts.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { actionButton, csrfField, emptyRow, type FieldErrors, layout, textField } from "../Layout.js"
import { providerAccount, type ProviderField } from "../ProviderSettings.js"

const USES: Readonly<Record<string, string>> = { twilio: "Texts and WhatsApp", vapi: "AI calls" }

const NOTICES: Readonly<Record<string, string>> = {
  twilio: "Twilio is set: the organisation's texts and WhatsApp go through it.",
  vapi: "Vapi is set: the organisation's AI calls go through it.",
  cleared: "Back to the simulator for that provider."
}

/** Form field names: the API base of each form has its own, the rest are the rule's own field names. */
const formName = (kind: ProviderKind, field: ProviderField): string => (field === "apiBase" ? `${kind}ApiBase` : field)

const providersView = (session: Session, errors: FieldErrors, values: Readonly<Record<string, string>>, notice: string | undefined) =>
  Effect.gen(function*() {
    const accounts = yield* (yield* ProviderAccounts).list(session.orgId)
    const organisations = yield* Organisations.Organisations
    const numbers = yield* organisations.listNumbers(session.orgId)
    const bots = yield* organisations.listBots(session.orgId)
    const secret = (name: string, label: string, hint?: string) =>
      textField({ name, label, type: "password", errors, autocomplete: "off", ...(hint === undefined ? {} : { hint }) })
    const plain = (name: string, label: string, hint?: string) =>
      textField({ name, label, value: values[name] ?? "", errors, ...(hint === undefined ? {} : { hint }) })
    return page(layout({
      title: "Providers",
      session,
      current: "/admin/providers",
      notice,
      alert: Object.keys(errors).length === 0 ? null : "Nothing was saved: see the field marked below.",
      body: html`<section aria-labelledby="p-accounts"><h2 id="p-accounts">Accounts</h2>
<table><thead><tr><th scope="col">Provider</th><th scope="col">Used for</th><th scope="col">Account</th><th scope="col">API base</th><th scope="col">Secrets</th><th scope="col">Updated</th></tr></thead>
<tbody>${
        PROVIDER_KINDS.map((kind) => {
          const account = accounts.find((a) => a.kind === kind)
          return account === undefined
            ? html`<tr><td>${kind === "twilio" ? "Twilio" : "Vapi"}</td><td>${USES[kind]}</td><td colspan="4">Not set: the simulator is used.</td></tr>`
            : html`<tr><td>${kind === "twilio" ? "Twilio" : "Vapi"}</td><td>${USES[kind]}</td><td>${account.accountId ?? "—"}</td><td>${account.apiBase}</td><td>set</td><td>${account.updatedAt}</td></tr>`
        })
      }</tbody></table>
<p class="hint">Secrets are write-only: they are stored sealed and never shown again, here or anywhere.</p>
${accounts.map((a) => actionButton(session, "/admin/providers/clear", { kind: a.kind }, `Use the simulator instead of ${a.kind === "twilio" ? "Twilio" : "Vapi"}`))}
</section>
<form class="card" method="post" action="/admin/providers/set" novalidate>
<h2>Set Twilio (texts and WhatsApp)</h2>
${csrfField(session)}<input type="hidden" name="kind" value="twilio">
${plain("accountSid", "Account SID", "AC followed by 32 hex digits (Twilio Console → Account Info).")}
${secret("authToken", "Auth Token", "Also checks the signature of Twilio's callbacks.")}
${plain("apiKeySid", "API key SID (optional)", "SK…; sends with this key instead of the Auth Token.")}
${secret("apiKeySecret", "API key secret (optional)")}
${plain("messagingServiceSid", "Messaging Service SID (optional)", "MG…")}
${plain("twilioApiBase", "API base (optional)", "Empty: Twilio's public API.")}
<button type="submit">Save Twilio</button>
</form>
<form class="card" method="post" action="/admin/providers/set" novalidate>
<h2>Set Vapi (AI calls)</h2>
${csrfField(session)}<input type="hidden" name="kind" value="vapi">
${secret("apiKey", "Private API key")}
${secret("webhookSecret", "Server message secret", "The secret Vapi sends with its server messages (X-Vapi-Secret).")}
${plain("vapiApiBase", "API base (optional)", "Empty: Vapi's public API.")}
<button type="submit">Save Vapi</button>
</form>
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
  providersView(session, {}, {}, NOTICES[request.query.get("done") ?? ""])

export const setProvider = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const f = request.form
    const kind: ProviderKind = f.get("kind") === "vapi" ? "vapi" : "twilio"
    const value = (field: ProviderField) => f.get(formName(kind, field)) ?? undefined
    const checked = providerAccount({
      kind,
      orgId: session.orgId,
      apiBase: value("apiBase"),
      accountSid: value("accountSid"),
      authToken: value("authToken"),
      apiKeySid: value("apiKeySid"),
      apiKeySecret: value("apiKeySecret"),
      messagingServiceSid: value("messagingServiceSid"),
      apiKey: value("apiKey"),
      webhookSecret: value("webhookSecret")
    })
    if (Either.isLeft(checked)) {
      const name = formName(kind, checked.left.field)
      // Only what is not secret is given back to the form.
      const values = Object.fromEntries(
        ["accountSid", "apiKeySid", "messagingServiceSid", `${kind}ApiBase`].map((n) => [n, f.get(n) ?? ""])
      )
      const message = checked.left.message
      return yield* providersView(session, { [name]: `${message.charAt(0).toUpperCase()}${message.slice(1)}.` }, values, undefined)
    }
    yield* (yield* ProviderAccounts).set(checked.right, new Date(yield* Clock.currentTimeMillis).toISOString())
    return redirect(`/admin/providers?done=${kind}`)
  })

export const clearProvider = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const kind: ProviderKind = request.form.get("kind") === "vapi" ? "vapi" : "twilio"
    yield* (yield* ProviderAccounts).clear(session.orgId, kind)
    return redirect("/admin/providers?done=cleared")
  })
