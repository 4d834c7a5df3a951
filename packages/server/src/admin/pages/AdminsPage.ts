/**
 * Administrators: who may sign in to this organisation's console, and with which role (Roles.ts). Everyone
 * signed in sees the list; only owners add administrators (each gets a one-time link to set a password, as
 * from `parley admins create`), change roles and remove administrators — the routes refuse anyone else, and
 * the organisation always keeps at least one owner.
 */
import { Crypto } from "@parley/core/internal"
import { Clock, Effect } from "effect"
import { type Admin, AdminStore, isPlausibleEmail, LINK_HOURS, normalEmail, type Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect } from "../ConsoleHttp.js"
import { consoleBaseUrl } from "../ConsoleUrl.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { flag, html } from "../Html.js"
import { timeOf } from "../Times.js"
import { actionButton, choices, csrfField, type FieldErrors, layout, secretOnce, textField } from "../Layout.js"
import { isRole, mayManageAdmins, type Role, ROLE_SUMMARIES, ROLES } from "../Roles.js"
import { notFoundPage } from "./NotFound.js"

const NOTICES: Readonly<Record<string, string>> = {
  role: "The role was changed; it applies from their next page.",
  removed: "The administrator was removed and their sessions ended."
}

const roleChoices = (chosen: Role, errors: FieldErrors) =>
  choices({
    name: "role",
    legend: "Role",
    type: "radio",
    errors,
    items: ROLES.map((role) => ({ value: role, label: `${role}: ${ROLE_SUMMARIES[role]}`, checked: role === chosen }))
  })

/** The role picker of one row: a select labelled with the administrator's email, and its own button. */
const roleForm = (session: Session, admin: Admin) =>
  html`<form class="inline" method="post" action="/admin/admins/role">${csrfField(session)}<input type="hidden" name="email" value="${admin.email}">
<label class="skip" for="role-${admin.id}">Role of ${admin.email}</label>
<select id="role-${admin.id}" name="role">${
    ROLES.map((role) => html`<option value="${role}"${flag("selected", role === admin.role)}>${role}</option>`)
  }</select>
<button type="submit" class="secondary" aria-label="Save role for ${admin.email}">Save role</button></form>`

const view = (
  session: Session,
  form: { readonly email: string; readonly role: Role },
  errors: FieldErrors,
  messages: { readonly notice?: string | undefined; readonly alert?: string | null },
  status = 200
) =>
  Effect.gen(function*() {
    const admins = yield* (yield* AdminStore).list(session.orgId)
    const owner = mayManageAdmins(session.role)
    return page(
      layout({
        title: "Administrators",
        session,
        current: "/admin/admins",
        notice: messages.notice,
        alert: messages.alert ?? null,
        body: html`<section aria-labelledby="admins-heading"><h2 id="admins-heading">Who can sign in</h2>
<table>
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Password</th><th scope="col">Added</th>${
          owner ? html`<th scope="col"><span class="skip">Actions</span></th>` : ""
        }</tr></thead>
<tbody>
${
          admins.map((admin) =>
            html`<tr><td>${admin.email}${admin.id === session.adminId ? " (you)" : ""}</td><td>${
              owner ? roleForm(session, admin) : admin.role
            }</td><td>${admin.passwordHash === null ? "link pending" : "set"}</td><td>${timeOf(admin.createdAt, session.timezone)}</td>${
              owner
                ? html`<td><a class="button secondary" href="/admin/admins/remove?email=${
                  encodeURIComponent(admin.email)
                }" aria-label="Remove ${admin.email}">Remove</a></td>`
                : ""
            }</tr>`
          )
        }
</tbody></table>
<dl>${ROLES.map((role) => html`<dt>${role}</dt><dd>${ROLE_SUMMARIES[role]}</dd>`)}</dl>
</section>
${
          owner
            ? html`<form class="card" method="post" action="/admin/admins/add" novalidate>
<h2>Add an administrator</h2>
${csrfField(session)}
${
              textField({
                name: "email",
                label: "Email",
                type: "email",
                value: form.email,
                errors,
                required: true,
                hint: `They get a one-time link to set their password, valid ${LINK_HOURS} hours.`
              })
            }
${roleChoices(form.role, errors)}
<button type="submit">Add administrator</button>
</form>`
            : html`<p>Only an owner of this organisation adds administrators or changes roles.</p>`
        }`
      }),
      { status }
    )
  })

export const adminsPage = (request: ConsoleRequest, session: Session) =>
  view(session, { email: "", role: "admin" }, {}, { notice: NOTICES[request.query.get("done") ?? ""] })

export const addAdmin = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const email = normalEmail(request.form.get("email") ?? "")
    const chosen = request.form.get("role") ?? ""
    const role: Role = isRole(chosen) ? chosen : "admin"
    const errors: Record<string, string> = {}
    if (!isPlausibleEmail(email)) errors["email"] = "Give an email address, such as ada@example.com."
    if (!isRole(chosen)) errors["role"] = "Choose a role."
    const alert = "The administrator was not added: see below."
    if (Object.keys(errors).length > 0) return yield* view(session, { email, role }, errors, { alert }, 400)
    const store = yield* AdminStore
    const admin: Admin = {
      id: Crypto.newId("adm"),
      orgId: session.orgId,
      email,
      passwordHash: null,
      role,
      createdAt: new Date(yield* Clock.currentTimeMillis).toISOString()
    }
    if (!(yield* store.insert(admin))) {
      const taken = { email: "This email is already an administrator (of this or another organisation)." }
      return yield* view(session, { email, role }, taken, { alert }, 409)
    }
    const link = `${consoleBaseUrl(yield* ServerConfig)}/admin/set-password?token=${yield* store.issueLink(admin.id)}`
    return page(layout({
      title: "Administrator added",
      session,
      current: "/admin/admins",
      body: html`${secretOnce("new-link", link, "sign-in link")}
<section><h2>${email} (${role})</h2><p>Send them this link: it sets their password, once, within ${LINK_HOURS} hours.</p>
<p><a href="/admin/admins">Back to Administrators</a></p></section>`
    }))
  })

const LAST_OWNER = "The organisation must keep an owner: make someone else an owner first."

export const changeRole = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const email = request.form.get("email") ?? ""
    const role = request.form.get("role") ?? ""
    if (!isRole(role)) return notFoundPage(session, "No such role.")
    const changed = yield* (yield* AdminStore).setRole(session.orgId, email, role)
    if (changed === "missing") return notFoundPage(session, "No such administrator.")
    if (changed === "last-owner") return yield* view(session, { email: "", role: "admin" }, {}, { alert: LAST_OWNER }, 409)
    return redirect("/admin/admins?done=role")
  })

const ownAdmin = (session: Session, email: string) =>
  Effect.map(
    Effect.flatMap(AdminStore, (store) => store.list(session.orgId)),
    (admins) => admins.find((admin) => admin.email === normalEmail(email))
  )

export const confirmRemoveAdmin = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const admin = yield* ownAdmin(session, request.query.get("email") ?? "")
    if (admin === undefined) return notFoundPage(session, "No such administrator.")
    return page(layout({
      title: "Remove administrator",
      session,
      current: "/admin/admins",
      body: html`<section><h2>Remove ${admin.email} (${admin.role})?</h2>
<p>They can no longer sign in, and every session of theirs ends now.${
        admin.id === session.adminId ? " This is you: you will be signed out." : ""
      }</p>
${actionButton(session, "/admin/admins/remove", { email: admin.email }, "Remove administrator", "danger")} <a href="/admin/admins">Cancel</a></section>`
    }))
  })

export const removeAdmin = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const removed = yield* (yield* AdminStore).removeKeepingAnOwner(session.orgId, request.form.get("email") ?? "")
    if (removed === "missing") return notFoundPage(session, "No such administrator.")
    if (removed === "last-owner") return yield* view(session, { email: "", role: "admin" }, {}, { alert: LAST_OWNER }, 409)
    return redirect("/admin/admins?done=removed")
  })
