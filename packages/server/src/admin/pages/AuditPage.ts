/**
 * The audit log page: the organisation's entries newest first, fifty at a time (keyset paging: each page
 * continues after the last entry of the one before, so a page costs the same however old it is), filtered by
 * who acted and by what happened. Every administrator can read it, viewers included; nobody can change it.
 */
import { Effect } from "effect"
import type { Session } from "../AdminStore.js"
import { AUDIT_KINDS, AuditLog, kindLabel } from "../AuditLog.js"
import type { ConsoleRequest } from "../ConsoleHttp.js"
import { page } from "../ConsoleHttp.js"
import { flag, html } from "../Html.js"
import { timeOf } from "../Times.js"
import { emptyRow, layout } from "../Layout.js"

export const AUDIT_PAGE_SIZE = 50
/** The actor filter lists at most this many; more than that is filtered by a link from an entry. */
const ACTORS_LISTED = 200

const param = (query: URLSearchParams, name: string, chars: number) => {
  const value = (query.get(name) ?? "").trim()
  return value === "" || value.length > chars ? undefined : value
}

const option = (value: string, label: string, selected: boolean) =>
  html`<option value="${value}"${flag("selected", selected)}>${label}</option>`

export const auditPage = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const actor = param(request.query, "actor", 254)
    const kind = param(request.query, "kind", 100)
    const after = param(request.query, "after", 100)
    const log = yield* AuditLog
    const found = yield* log.page(session.orgId, { actor, kind, after, limit: AUDIT_PAGE_SIZE })
    const actors = yield* log.actors(session.orgId, ACTORS_LISTED)
    const filtered = (extra: Record<string, string>) => {
      const query = new URLSearchParams({ ...(actor === undefined ? {} : { actor }), ...(kind === undefined ? {} : { kind }), ...extra })
      return `/admin/audit${query.size === 0 ? "" : `?${query.toString()}`}`
    }
    return page(layout({
      title: "Audit log",
      session,
      current: "/admin/audit",
      body: html`<form class="card" method="get" action="/admin/audit">
<label for="f-actor">Who</label>
<select id="f-actor" name="actor">${option("", "Anyone", actor === undefined)}${
        [...new Set([...actors, ...(actor === undefined ? [] : [actor])])].map((a) => option(a, a, a === actor))
      }</select>
<label for="f-kind">What</label>
<select id="f-kind" name="kind">${option("", "Anything", kind === undefined)}${
        Object.entries(AUDIT_KINDS).map(([value, label]) => option(value, label, value === kind))
      }</select>
<button type="submit">Filter</button>
</form>
<section aria-labelledby="audit-heading"><h2 id="audit-heading">${after === undefined ? "Latest entries" : "Older entries"}</h2>
<table>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">On</th><th scope="col">Details</th><th scope="col">From</th></tr></thead>
<tbody>
${
        found.entries.length === 0
          ? emptyRow(6, "No entries.")
          : found.entries.map((entry) => {
            return html`<tr><td>${timeOf(entry.at, session.timezone)}</td>
<td>${entry.actor}</td><td>${kindLabel(entry.kind)}</td><td>${entry.subject ?? ""}</td><td>${entry.detail ?? ""}</td><td>${
              entry.address ?? "command line"
            }</td></tr>`
          })
      }
</tbody></table>
<p>${after === undefined ? "" : html`<a href="${filtered({})}">Newest entries</a> `}${
        found.next === null ? "" : html`<a href="${filtered({ after: found.next })}">Older entries</a>`
      }</p>
</section>
<p class="hint">Entries are kept at least a year and cannot be changed. Secrets are never recorded.</p>`
    }))
  })
