/**
 * Providers: which real providers the organisation sends through (Twilio for texts and WhatsApp, Vapi for
 * AI calls; the simulator otherwise), with secrets shown only as "set", and its numbers and bots with
 * their provider ids. Changing credentials stays with `parley providers set` for now (see the README).
 */
import { Organisations } from "@parley/core/internal"
import { Effect } from "effect"
import { PROVIDER_KINDS, ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, page } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { emptyRow, layout } from "../Layout.js"

const USES: Readonly<Record<string, string>> = { twilio: "Texts and WhatsApp", vapi: "AI calls" }

export const providersPage = (_request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const accounts = yield* (yield* ProviderAccounts).list(session.orgId)
    const organisations = yield* Organisations.Organisations
    const numbers = yield* organisations.listNumbers(session.orgId)
    const bots = yield* organisations.listBots(session.orgId)
    return page(layout({
      title: "Providers",
      session,
      current: "/admin/providers",
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
<p class="hint">Secrets are write-only: set or change them with <code>pnpm parley providers set</code>; they are never shown again.</p></section>
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
    }))
  })
