/**
 * CRM: which CRM account the organisation's requests run as (the default CRM unless one of the registry's
 * CRMs is connected), connect or reconnect it, disconnect it, start a CRM's OAuth flow, change a CRM's settings.
 */
import { Crm } from "@parley/core/internal"
import { Effect, Option } from "effect"
import type { RunningCrm } from "../../crm/Crm.js"
import { Crms } from "../../crm/CrmLive.js"
import { BUILT_IN } from "../../crm/Registry.js"
import type { Session } from "../AdminStore.js"
import { type ConsoleRequest, contentSecurityPolicy, page, redirect } from "../ConsoleHttp.js"
import { accountIdFor, connectAccount, connectionStatus, disconnectAccount } from "../CrmConnection.js"
import { html } from "../Html.js"
import { timeOf } from "../Times.js"
import { actionButton, csrfField, type FieldErrors, layout, textField } from "../Layout.js"

const NOTICES: Readonly<Record<string, string>> = {
  connected: "The CRM account is connected: every key runs as it.",
  disconnected: "The CRM account was disconnected: API requests now fail with OAUTH_REQUIRED until one is connected."
}

/** The notice a `done=` names: the page's own, a CRM's "not configured", or a CRM setting's change. */
const noticeOf = (crms: ReadonlyArray<RunningCrm>, done: string): string | undefined =>
  NOTICES[done] ?? crms.flatMap((crm) => [
    ...(done === `${crm.name}-unavailable` ? [`${crm.label} is not configured on this server; ${BUILT_IN.phrase} stays in use.`] : []),
    ...crm.toggles.flatMap((t) =>
      done === `${t.flag}-on` ? [t.notice(true)] : done === `${t.flag}-off` ? [t.notice(false)] : []
    )
  ])[0]

const crmPage = (session: Session, errors: FieldErrors, notice: string | undefined, accountName: string) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Crm.Crm).connection(session.orgId)
    const crms = yield* Crms
    // The same view `parley crm status` prints: which CRM, as whom, since when, the last error; never a token.
    const status = yield* connectionStatus(session.orgId)
    const connected = Option.getOrUndefined(status.connected)
    const lastError = connected === undefined || connected.status.lastError === null
      ? ""
      : html`<dt>Last error from ${connected.crm.vendor}</dt><dd>${connected.status.lastError.code === null ? "" : html`<code>${connected.status.lastError.code}</code> `}${connected.status.lastError.message}${
        connected.status.lastError.at === null ? "" : html` (${timeOf(connected.status.lastError.at, session.timezone)})`
      }</dd>`
    const external = connected === undefined
      ? undefined
      : html`<dt>CRM</dt><dd>${connected.crm.label} — ${connected.status.account.name} (<code>${connected.status.account.id}</code>)</dd>
<dt>Connected as</dt><dd>${connected.status.user.name} (${connected.status.user.email}, ${connected.status.userRef.page} <code>${connected.status.userRef.value}</code>)</dd>
<dt>Since</dt><dd>${timeOf(connected.status.since, session.timezone, "unknown")}</dd>
${lastError}`
    // Each CRM's settings: the same as `parley crm update ORG --<flag> on|off`.
    const toggles = yield* Effect.forEach(crms.all, (crm) =>
      Effect.forEach(crm.toggles, (toggle) =>
        Effect.map(crm.toggle(toggle.flag).enabled(session.orgId), (on) =>
          html`<section aria-labelledby="crm-${toggle.flag}"><h2 id="crm-${toggle.flag}">${toggle.title}</h2>
<p>${on ? "On" : "Off"}: ${toggle.explain(on)}</p>
${actionButton(session, `/admin/crm/${toggle.flag}`, { [toggle.flag]: on ? "off" : "on" }, toggle.button(on))}
</section>`)))
    // A CRM's last error stays visible after the connection lapsed (a refused refresh token, another user):
    // it is what says why, and what to do.
    const lapsed = connected !== undefined && connected.status.lastError !== null
      ? html`<dl>${lastError}</dl>`
      : ""
    const state = connection.state === "disconnected"
      ? html`<p>No CRM account is connected. API requests fail with <code>OAUTH_REQUIRED</code> until one is.</p>${lapsed}`
      : html`<dl>
${external ?? html`<dt>CRM</dt><dd>${BUILT_IN.label}</dd>
<dt>Connected as</dt><dd>${connection.account.name} (<code>${connection.account.id}</code>)</dd>`}
<dt>State</dt><dd>${connection.state === "connected" ? "connected" : "identity changed: reconnect required"}</dd>
<dt>Modules it may read</dt><dd>${connection.account.permissions.modules.join(", ") || "none"}</dd>
<dt>Messages and calls it sees</dt><dd>${connection.account.permissions.actionsView}</dd>
</dl>`
    const connectSections = crms.all.map((crm) =>
      html`<section aria-labelledby="crm-${crm.name}"><h2 id="crm-${crm.name}">${crm.label}</h2>
<p>Sign in to ${crm.label} and grant Parley access; you come back to this page.</p>
${actionButton(session, `/admin/crm/${crm.name}`, {}, `Connect ${crm.label}`)}
</section>`)
    return page(
      layout({
        title: "CRM",
        session,
        current: "/admin/crm",
        notice,
        body: html`<section aria-labelledby="crm-now"><h2 id="crm-now">Connected account</h2>${state}
${connection.state === "disconnected" ? "" : html`<a class="button danger" href="/admin/crm/disconnect">Disconnect</a>`}
</section>
${connectSections}
${toggles.flat()}
<form class="card" method="post" action="/admin/crm/connect" novalidate>
<h2>${connection.state === "disconnected" ? "Connect" : "Reconnect"} ${BUILT_IN.phrase}</h2>
${csrfField(session)}
${textField({ name: "account", label: "Account name", value: accountName, errors, hint: "The CRM user every request runs as." })}
<button type="submit">${connection.state === "disconnected" ? "Connect" : "Reconnect"}</button>
</form>`
      }),
      {
        status: Object.keys(errors).length === 0 ? 200 : 400,
        // "Connect <CRM>" posts here and is redirected to the CRM's consent page: those origins must be allowed.
        headers: { "content-security-policy": contentSecurityPolicy(crms.all.flatMap((crm) => Option.toArray(crm.consentOrigin))) }
      }
    )
  })

export const crmOverview = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Crm.Crm).connection(session.orgId)
    return yield* crmPage(session, {}, noticeOf((yield* Crms).all, request.query.get("done") ?? ""), connection.state === "disconnected" ? "" : connection.account.name)
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

/** Disconnecting stops every API request of the organisation: a page of its own asks first (POST → confirm → POST). */
export const confirmDisconnectCrm = (_request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Crm.Crm).connection(session.orgId)
    if (connection.state === "disconnected") return redirect("/admin/crm")
    const connected = Option.getOrUndefined((yield* connectionStatus(session.orgId)).connected)
    const which = connected === undefined ? `${BUILT_IN.phrase} account ${connection.account.name}` : `${connected.crm.label} (${connected.status.account.name})`
    return page(layout({
      title: "Disconnect the CRM",
      session,
      current: "/admin/crm",
      body: html`<section aria-labelledby="confirm-title"><h2 id="confirm-title">Disconnect ${which}?</h2>
<p>Every API request of this organisation then fails with <code>OAUTH_REQUIRED</code> until a CRM account is connected again${
        connected === undefined ? "" : html`, and the access Parley was granted is revoked at ${connected.crm.label}: connecting again means granting it again`
      }.</p>
${actionButton(session, "/admin/crm/disconnect", {}, "Disconnect the CRM", "danger")} <a href="/admin/crm">Cancel</a></section>`
    }))
  })

export const disconnectCrm = (_request: ConsoleRequest, session: Session) =>
  Effect.as(disconnectAccount(session.orgId), redirect("/admin/crm?done=disconnected"))

/** "Connect <CRM>": to the CRM's consent page, or back saying this server is not configured for it. */
export const startExternalCrm = (name: string) => (_request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const unavailable = redirect(`/admin/crm?done=${name}-unavailable`)
    const crm = Option.getOrUndefined((yield* Crms).named(name))
    if (crm === undefined || Option.isNone(crm.consentOrigin)) return unavailable
    const started = yield* Effect.either(crm.connect(session.orgId, { switchOrg: false }))
    if (started._tag === "Right") return redirect(started.right.url)
    // Not configured after all (the person can act on it: the page says so); a storage failure is a failure.
    if (started.left._tag === "CrmConnectFailed") return unavailable
    return yield* Effect.fail(started.left)
  })

/** A CRM setting's button: turns it on or off. */
export const setCrmToggle = (name: string, flag: string) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const on = request.form.get(flag) === "on"
    const crm = (yield* Crms).named(name)
    if (Option.isSome(crm)) yield* crm.value.toggle(flag).set(session.orgId, on)
    return redirect(`/admin/crm?done=${flag}-${on ? "on" : "off"}`)
  })
