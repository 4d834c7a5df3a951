/**
 * The OAuth scopes Parley asks Zoho for, why each, and how a grant is checked against them: the consent
 * asks for exactly these, the callback refuses a grant that lacks one, and a call Zoho refuses for lack
 * of one is recorded as OAUTH_SCOPE_MISMATCH (see ZohoConnect, ZohoSession).
 */

/**
 * Every scope Parley asks for, and the calls that need it; nothing else is asked (README: "Connecting a
 * real Zoho CRM" lists this table). Zoho's OpenAPI files (zoho/crm-oas v8.0) name only READ and ALL for
 * these: record writes and `crm setup`'s module and field creation need ALL.
 */
export const SCOPE_USES: ReadonlyArray<{ readonly scope: string; readonly usedFor: string }> = [
  { scope: "ZohoCRM.modules.ALL", usedFor: "records: read Leads, Contacts, Vendors, Deals and templates; create and update Parley_Messages" },
  { scope: "ZohoCRM.settings.modules.ALL", usedFor: "`crm setup`: read the modules, create Parley_Templates and Parley_Messages" },
  { scope: "ZohoCRM.settings.fields.ALL", usedFor: "`crm setup`: read and create fields; merge fields: field labels to API names" },
  { scope: "ZohoCRM.settings.profiles.ALL", usedFor: "`crm setup`: which profiles read Leads/Contacts, and their access to Parley's modules" },
  { scope: "ZohoCRM.users.READ", usedFor: "the connected user: who Parley works as, checked at least every 10 minutes" },
  { scope: "ZohoCRM.org.READ", usedFor: "the connected Zoho organisation" }
]

export const SCOPES: ReadonlyArray<string> = SCOPE_USES.map((s) => s.scope)

/**
 * Whether a granted scope covers a needed one (case-insensitively, as Zoho treats them): the same scope, or
 * one whose `ALL` stands for every operation under its path (`ZohoCRM.settings.ALL` covers
 * `ZohoCRM.settings.fields.ALL`; `ZohoCRM.users.ALL` covers `ZohoCRM.users.READ`).
 */
export const scopeCovers = (granted: string, needed: string): boolean => {
  const g = granted.toLowerCase().split(".")
  const n = needed.toLowerCase().split(".")
  const gPath = g.slice(0, -1)
  const nPath = n.slice(0, -1)
  if (gPath.length > nPath.length || !gPath.every((part, i) => part === nPath[i])) return false
  return g[g.length - 1] === "all" || (gPath.length === nPath.length && g[g.length - 1] === n[n.length - 1])
}

/** The scopes Parley needs that a grant (Zoho's `scope`, space- or comma-separated) lacks. */
export const missingScopes = (granted: string): ReadonlyArray<string> => {
  const have = granted.split(/[\s,]+/).filter((s) => s !== "")
  return SCOPES.filter((needed) => !have.some((g) => scopeCovers(g, needed)))
}

