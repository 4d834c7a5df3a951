/**
 * CRM: which CRM account the organisation's requests run as (the built-in CRM unless an external one is
 * connected), connect or reconnect it, disconnect it, or start an external CRM's OAuth flow (Zoho).
 */
import { Crm } from "@parley/core/internal"
import { Effect, Option } from "effect"
import * as ZohoConnect from "../../crm/zoho/ZohoConnect.js"
import * as ZohoWorkflows from "../../crm/zoho/ZohoWorkflows.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, contentSecurityPolicy, page, redirect } from "../ConsoleHttp.js"
import { accountIdFor, connectAccount, disconnectAccount, ExternalCrm, unavailableZoho } from "../CrmConnection.js"
import { html } from "../Html.js"
import { actionButton, csrfField, type FieldErrors, layout, textField } from "../Layout.js"

const NOTICES: Readonly<Record<string, string>> = {
  connected: "The CRM account is connected: every key runs as it.",
  disconnected: "The CRM account was disconnected: API requests now fail with OAUTH_REQUIRED until one is connected.",
  "zoho-unavailable": "Zoho CRM is not configured on this server; the built-in CRM stays in use.",
  "workflows-on": "Zoho workflow rules now run on inbound records and final statuses Parley writes.",
  "workflows-off": "Zoho workflow rules no longer run on anything Parley writes."
}

const crmPage = (session: Session, errors: FieldErrors, notice: string | undefined, accountName: string) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Crm.Crm).connection(session.orgId)
    const external = Option.getOrElse(yield* Effect.serviceOption(ExternalCrm), () => unavailableZoho)
    // The same view `parley crm status` prints: which CRM, as whom, since when, the last error; never a token.
    const status = yield* ZohoConnect.status(session.orgId)
    const lastError = status.lastError === null
      ? ""
      : html`<dt>Last error from Zoho</dt><dd>${status.lastError.code === null ? "" : html`<code>${status.lastError.code}</code> `}${status.lastError.message}${
        status.lastError.at === null ? "" : ` (${status.lastError.at})`
      }</dd>`
    const zoho = status.provider === "zoho" && status.user !== null
      ? html`<dt>CRM</dt><dd>Zoho CRM${status.zohoOrg === null ? "" : html` — ${status.zohoOrg.name} (<code>${status.zohoOrg.id}</code>)`}</dd>
<dt>Connected as</dt><dd>${status.user.name} (${status.user.email}, ZUID <code>${status.user.zuid}</code>)</dd>
<dt>Since</dt><dd>${status.since ?? "unknown"}</dd>
${lastError}`
      : undefined
    // The same setting as `parley crm update ORG --workflows on|off`.
    const workflowsOn = yield* (yield* ZohoWorkflows.make).enabled(session.orgId)
    // Zoho's last error stays visible after the connection lapsed (a refused refresh token, another user):
    // it is what says why, and what to do.
    const lapsed = status.provider === "zoho" && status.lastError !== null
      ? html`<dl>${lastError}</dl>`
      : ""
    const state = connection.state === "disconnected"
      ? html`<p>No CRM account is connected. API requests fail with <code>OAUTH_REQUIRED</code> until one is.</p>${lapsed}`
      : html`<dl>
${zoho ?? html`<dt>CRM</dt><dd>Built-in CRM</dd>
<dt>Connected as</dt><dd>${connection.account.name} (<code>${connection.account.id}</code>)</dd>`}
<dt>State</dt><dd>${connection.state === "connected" ? "connected" : "identity changed: reconnect required"}</dd>
<dt>Modules it may read</dt><dd>${connection.account.permissions.modules.join(", ") || "none"}</dd>
<dt>Messages and calls it sees</dt><dd>${connection.account.permissions.actionsView}</dd>
</dl>`
    return page(
      layout({
        title: "CRM",
        session,
        current: "/admin/crm",
        notice,
        body: html`<section aria-labelledby="crm-now"><h2 id="crm-now">Connected account</h2>${state}
${connection.state === "disconnected" ? "" : actionButton(session, "/admin/crm/disconnect", {}, "Disconnect", "danger")}
</section>
<section aria-labelledby="crm-zoho"><h2 id="crm-zoho">${external.name}</h2>
<p>Sign in to ${external.name} and grant Parley access; you come back to this page.</p>
${actionButton(session, "/admin/crm/zoho", {}, `Connect ${external.name}`)}
</section>
<section aria-labelledby="crm-workflows"><h2 id="crm-workflows">Zoho workflow rules</h2>
<p>${workflowsOn ? "On" : "Off"}: ${workflowsOn
      ? "Parley writes inbound records, and each record's final status, with Zoho's workflow trigger, so your workflow rules on Parley Messages run on them."
      : "nothing Parley writes to Zoho runs a workflow rule."}</p>
${actionButton(session, "/admin/crm/workflows", { workflows: workflowsOn ? "off" : "on" }, workflowsOn ? "Turn workflow rules off" : "Turn workflow rules on")}
</section>
<form class="card" method="post" action="/admin/crm/connect" novalidate>
<h2>${connection.state === "disconnected" ? "Connect" : "Reconnect"} the built-in CRM</h2>
${csrfField(session)}
${textField({ name: "account", label: "Account name", value: accountName, errors, hint: "The CRM user every request runs as." })}
<button type="submit">${connection.state === "disconnected" ? "Connect" : "Reconnect"}</button>
</form>`
      }),
      {
        status: Object.keys(errors).length === 0 ? 200 : 400,
        // "Connect Zoho CRM" posts here and is redirected to Zoho's consent page: that origin must be allowed.
        headers: { "content-security-policy": contentSecurityPolicy(Option.toArray(external.consentOrigin)) }
      }
    )
  })

export const crmOverview = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Crm.Crm).connection(session.orgId)
    return yield* crmPage(session, {}, NOTICES[request.query.get("done") ?? ""], connection.state === "disconnected" ? "" : connection.account.name)
  })

export const connectCrm = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const name = (request.form.get("account") ?? "").trim()
    if (name === "") return yield* crmPage(session, { account: "Give the CRM account's name." }, undefined, name)
    // The same name keeps the same account (a reconnection); another name is another CRM user.
    const current = yield* (yield* Crm.Crm).connection(session.orgId)
    const id = current.state !== "disconnected" && current.account.name === name ? current.account.id : accountIdFor(name)
    yield* connectAccount(session.orgId, name, id)
    return redirect("/admin/crm?done=connected")
  })

export const disconnectCrm = (_request: ConsoleRequest, session: Session) =>
  Effect.as(disconnectAccount(session.orgId), redirect("/admin/crm?done=disconnected"))

export const startExternalCrm = (_request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const external = Option.getOrElse(yield* Effect.serviceOption(ExternalCrm), () => unavailableZoho)
    const target = yield* external.start(session.orgId, "/admin/crm")
    return Option.match(target, {
      onNone: () => redirect("/admin/crm?done=zoho-unavailable"),
      onSome: (url) => redirect(url)
    })
  })

export const setCrmWorkflows = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const on = request.form.get("workflows") === "on"
    yield* (yield* ZohoWorkflows.make).set(session.orgId, on)
    return redirect(`/admin/crm?done=workflows-${on ? "on" : "off"}`)
  })
