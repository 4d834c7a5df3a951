/**
 * The frame of every console page (skip link, navigation, sign-out, one main landmark) and the form
 * pieces the pages share: a labelled field with its hint and its error beside it, tied together with
 * aria-describedby so a screen reader reads the error with the field.
 */
import type { Session } from "./AdminStore.js"
import { flag, Html, html, type Interpolation } from "./Html.js"
import { mayChange } from "./Roles.js"

export const SECTIONS = [
  { path: "/admin/keys", name: "Developer access" },
  { path: "/admin/crm", name: "CRM" },
  { path: "/admin/providers", name: "Providers" },
  { path: "/admin/rules", name: "Sending rules" },
  { path: "/admin/events", name: "Events" },
  { path: "/admin/opt-outs", name: "Opt-outs" },
  { path: "/admin/activity", name: "Activity" },
  { path: "/admin/usage", name: "Usage" },
  { path: "/admin/audit", name: "Audit log" },
  { path: "/admin/admins", name: "Administrators" },
  { path: "/admin/security", name: "Security" }
] as const

export type SectionPath = typeof SECTIONS[number]["path"]

export const csrfField = (session: Session): Html => html`<input type="hidden" name="csrf" value="${session.csrfToken}">`

export const layout = (options: {
  readonly title: string
  readonly session: Session | null
  readonly current?: SectionPath
  readonly notice?: string | null | undefined
  readonly alert?: string | null | undefined
  readonly body: Interpolation
}): Html => {
  const { session } = options
  return html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Parley admin</title>
<link rel="stylesheet" href="/admin/assets/console.css">
<script src="/admin/assets/console.js" defer></script>
</head>
<body${new Html(session !== null && !mayChange(session.role) ? " class=\"read-only\"" : "")}>
<a class="skip" href="#main">Skip to content</a>
<header>
<span class="brand">Parley admin</span>
${
    session === null ? "" : html`<nav aria-label="Sections"><ul>${
      SECTIONS.map((s) =>
        html`<li><a href="${s.path}"${new Html(s.path === options.current ? " aria-current=\"page\"" : "")}>${s.name}</a></li>`
      )
    }</ul></nav>
<span>${session.email} (${session.role})</span>
<form class="inline" method="post" action="/admin/sign-out">${csrfField(session)}<button type="submit" class="secondary">Sign out</button></form>`
  }
</header>
<main id="main" tabindex="-1">
<h1>${options.title}</h1>
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ""}
${options.alert ? html`<p class="alert" role="alert">${options.alert}</p>` : ""}
${options.body}
</main>
</body>
</html>`
}

export type FieldErrors = Readonly<Record<string, string>>

/** A labelled text-like input, with its hint and its error (if any) right under it. */
export const textField = (options: {
  readonly name: string
  readonly label: string
  readonly value?: string | undefined
  readonly type?: "text" | "email" | "password" | "url" | "date"
  readonly hint?: string
  readonly errors?: FieldErrors
  readonly required?: boolean
  readonly autocomplete?: string
}): Html => {
  const id = `field-${options.name}`
  const error = options.errors?.[options.name]
  const describedBy = [options.hint === undefined ? null : `${id}-hint`, error === undefined ? null : `${id}-error`]
    .filter((x) => x !== null).join(" ")
  return html`<label for="${id}">${options.label}</label>
<input id="${id}" name="${options.name}" type="${options.type ?? "text"}" value="${options.value ?? ""}"${
    new Html(describedBy === "" ? "" : ` aria-describedby="${describedBy}"`)
  }${flag("aria-invalid=\"true\"", error !== undefined)}${flag("required", options.required === true)}${
    new Html(options.autocomplete === undefined ? "" : ` autocomplete="${options.autocomplete}"`)
  }>
${options.hint === undefined ? "" : html`<p class="hint" id="${id}-hint">${options.hint}</p>`}
${fieldError(id, error)}`
}

export const fieldError = (id: string, error: string | undefined): Html =>
  error === undefined ? html`` : html`<p class="error" id="${id}-error">${error}</p>`

/** A group of checkboxes or radios in a fieldset, its error under the legend's group. */
export const choices = (options: {
  readonly name: string
  readonly legend: string
  readonly type: "checkbox" | "radio"
  readonly items: ReadonlyArray<{ readonly value: string; readonly label: string; readonly checked: boolean }>
  readonly errors?: FieldErrors
  readonly hint?: string
}): Html => {
  const id = `field-${options.name}`
  const error = options.errors?.[options.name]
  return html`<fieldset id="${id}"${flag(`aria-describedby="${id}-error"`, error !== undefined)}>
<legend>${options.legend}</legend>
${options.hint === undefined ? "" : html`<p class="hint">${options.hint}</p>`}
${
    options.items.map((item, i) =>
      html`<label for="${id}-${i}"><input type="${options.type}" id="${id}-${i}" name="${options.name}" value="${item.value}"${
        flag("checked", item.checked)
      }>${item.label}</label>`
    )
  }
${fieldError(id, error)}
</fieldset>`
}

/** A one-button form posting an id (with the CSRF token): Revoke, Rotate, Disable… */
export const actionButton = (
  session: Session,
  action: string,
  fields: Readonly<Record<string, string>>,
  label: string,
  style: "secondary" | "danger" = "secondary",
  // For a button repeated on every row: the name that tells them apart (the visible label starts it).
  accessibleName?: string
): Html =>
  html`<form class="inline" method="post" action="${action}">${csrfField(session)}${
    Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)
  }<button type="submit" class="${style}"${
    accessibleName === undefined ? "" : html` aria-label="${accessibleName}"`
  }>${label}</button></form>`

/** A secret shown once: the value, a Copy button and the warning that it will not be shown again. */
export const secretOnce = (id: string, value: string, what: string): Html =>
  html`<div class="card">
<p class="alert" role="alert"><strong>Copy this ${what} now: it will not be shown again.</strong> Parley keeps only what it needs to check it.</p>
<div class="secret"><code id="${id}">${value}</code><button type="button" data-copy="${id}">Copy</button><span id="${id}-status" role="status"></span></div>
</div>`

export const emptyRow = (columns: number, text: string): Html => html`<tr><td colspan="${columns}">${text}</td></tr>`
