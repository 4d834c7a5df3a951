/**
 * Which console forms are written to the audit log, as what, and with which of their fields. Every signed-in
 * POST that the console answers with success (below 400) is recorded by the route (ConsoleRoutes), so a page
 * cannot forget to; the fields named here are the only ones copied, chosen because none is a secret (a
 * provider's credentials, a CRM token or a password never are). A form not listed here is still recorded,
 * as `console.<path>` with its `id` and `name` only.
 */
import { CRMS } from "../crm/Registry.js"
import type { AuditKind, NewAuditEntry } from "./AuditLog.js"
import type { ConsoleRequest } from "./ConsoleHttp.js"
import { normalEmail, type Session } from "./AdminStore.js"

interface Audited {
  readonly kind: AuditKind
  /** The field naming what was acted on. */
  readonly subject?: string
  /** Other fields worth keeping; a field sent several times (checkboxes) is kept as a comma list. */
  readonly fields?: ReadonlyArray<string>
  /** Every field but the CSRF token: only for forms that hold no secret at all. */
  readonly allFields?: true
}

export const AUDITED_FORMS: Readonly<Record<string, Audited>> = {
  "/admin/sign-out": { kind: "admin.signed-out" },
  "/admin/keys/new": { kind: "key.created", subject: "name", fields: ["mode", "scopes", "numbers", "bots", "expiresAt"] },
  "/admin/keys/revoke": { kind: "key.revoked", subject: "id" },
  "/admin/keys/roll": { kind: "key.rolled", subject: "id", fields: ["overlap", "overlapHours"] },
  "/admin/keys/edit": { kind: "key.changed", subject: "id", fields: ["name"] },
  "/admin/crm/connect": { kind: "crm.connected", subject: "account" },
  "/admin/crm/disconnect": { kind: "crm.disconnected" },
  // Each registered CRM's consent button and on/off settings (crm/Registry).
  ...Object.fromEntries(CRMS.map((crm) => [`/admin/crm/${crm.name}`, { kind: "crm.consent-started" } as const])),
  ...Object.fromEntries(CRMS.flatMap((crm) =>
    crm.toggles.map((t) => [`/admin/crm/${t.flag}`, { kind: "crm.setting-changed", fields: [t.flag] } as const])
  )),
  "/admin/providers/set": { kind: "provider.set", subject: "kind" },
  "/admin/providers/clear": { kind: "provider.cleared", subject: "kind" },
  "/admin/rules": { kind: "sending-rules.changed", allFields: true },
  "/admin/events/add": { kind: "webhook.added", subject: "url", fields: ["description", "events"] },
  "/admin/events/rotate": { kind: "webhook.secret-rotated", subject: "id" },
  "/admin/events/disable": { kind: "webhook.disabled", subject: "id" },
  "/admin/events/enable": { kind: "webhook.enabled", subject: "id" },
  "/admin/events/delete": { kind: "webhook.deleted", subject: "id" },
  "/admin/opt-outs/add": { kind: "opt-out.added", subject: "phone", fields: ["channels", "reason"] },
  "/admin/opt-outs/remove": { kind: "opt-out.removed", subject: "phone", fields: ["channels"] },
  "/admin/admins/add": { kind: "admin.added", subject: "email", fields: ["role"] },
  "/admin/admins/role": { kind: "admin.role-changed", subject: "email", fields: ["role"] },
  "/admin/admins/remove": { kind: "admin.removed", subject: "email" },
  // The Security page: none of its fields is kept (codes and passwords are all it has), but the policy's.
  "/admin/security/enrol": { kind: "admin.two-factor-enrolled" },
  "/admin/security/recovery-codes": { kind: "admin.recovery-codes-regenerated" },
  "/admin/security/disable": { kind: "admin.two-factor-disabled" },
  "/admin/security/password": { kind: "admin.password-changed" },
  "/admin/security/policy": { kind: "admin.two-factor-policy-changed", fields: ["require"] }
}

const FALLBACK: Omit<Audited, "kind"> = { subject: "id", fields: ["name"] }

/** As the handlers read them: an email the way AdminStore keeps it (`Nina@A.example` is `nina@a.example`). */
const valueOf = (form: URLSearchParams, name: string) => {
  const value = form.getAll(name).join(",")
  return name === "email" ? normalEmail(value) : value
}

/** The entry a successful POST to `path` makes. */
export const consoleEntry = (path: string, request: ConsoleRequest, session: Session): NewAuditEntry => {
  const known = AUDITED_FORMS[path]
  const audited: Omit<Audited, "kind"> = known ?? FALLBACK
  const names = audited.allFields === true
    ? [...new Set(request.form.keys())].filter((name) => name !== "csrf")
    : audited.fields ?? []
  return {
    orgId: session.orgId,
    actor: session.email,
    kind: known === undefined ? `console.${path.slice("/admin/".length).replaceAll("/", ".")}` : known.kind,
    subject: audited.subject === undefined ? null : valueOf(request.form, audited.subject) || null,
    details: names.map((name) => [name, valueOf(request.form, name)] as const),
    address: request.address
  }
}
