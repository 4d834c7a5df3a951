/**
 * Who in the Zoho organisation sees Parley's modules. Zoho shows a custom module only to the profiles it was
 * made accessible to, and within those only with the profile's View permission on it; `crm setup` used to name
 * the connecting user's profile alone, so every other rep saw neither Parley_Messages nor its related lists.
 *
 * The rule `crm setup` applies (Zoho's Modules and Profiles APIs, zoho/crm-oas v8):
 * - every profile that may view Leads or Contacts gets access to Parley_Messages and Parley_Templates
 *   (`profiles` when creating a module, `PUT /settings/modules/{api_name}` for one that exists);
 * - the Administrator profile and the connecting user's profile keep View, Create, Edit and Delete (Parley
 *   writes as that user; administrators maintain templates);
 * - every other such profile gets View only (`PUT /settings/profiles/{id}`, `permissions_details`).
 * Where Zoho refuses (no Manage Profiles permission, a scope not granted, a system profile) the report says
 * exactly what an administrator must set, where.
 */
import { Effect } from "effect"
import { type CrmAnswer, isRecord, listOf, text } from "./ZohoApi.js"
import type { ZohoSessionService } from "./ZohoSession.js"

/** Zoho's built-in profile with every permission (its name is fixed). */
const ADMINISTRATOR = "Administrator"
const WRITE_ACTIONS = ["Create", "Edit", "Delete"] as const

export interface ProfileAccess {
  readonly id: string
  readonly name: string
  /** View, Create, Edit and Delete; otherwise View only. */
  readonly edit: boolean
}

export interface AccessReport {
  readonly created: ReadonlyArray<string>
  readonly byHand: ReadonlyArray<string>
}

interface PermissionDetail {
  readonly id: string
  readonly name: string
  readonly enabled: boolean
}

const permissionsOf = (answer: CrmAnswer): ReadonlyArray<PermissionDetail> => {
  const profile = listOf(answer, "profiles")[0]
  const details = profile?.["permissions_details"]
  return Array.isArray(details)
    ? details.filter(isRecord).flatMap((d) => {
      const id = text(d, "id")
      const name = text(d, "name")
      return id === undefined || name === undefined ? [] : [{ id, name, enabled: d["enabled"] === true }]
    })
    : []
}

const where = (profile: string) => `Setup → Users and Control → Security Control → Profiles → "${profile}" → Module-Level Permissions`

const describe = (labels: ReadonlyArray<string>, edit: boolean) =>
  `${labels.map((l) => `"${l}"`).join(" and ")}: ${edit ? "View, Create, Edit and Delete" : "View only (not Create, Edit or Delete)"}`

/**
 * The profiles that should see Parley's modules, read from Zoho; None when Zoho will not list its profiles
 * (a grant without ZohoCRM.settings.profiles, or a user without permission to read them).
 */
export const readers = (session: ZohoSessionService, orgId: string, connectingProfile: string | undefined) =>
  Effect.gen(function*() {
    const listed = yield* Effect.either(session.call(orgId, "GET", "/settings/profiles"))
    if (listed._tag === "Left") return undefined
    const found: Array<ProfileAccess> = []
    for (const p of listOf(listed.right, "profiles")) {
      const id = text(p, "id")
      const name = text(p, "name") ?? id
      if (id === undefined || name === undefined) continue
      const detail = yield* Effect.either(session.call(orgId, "GET", `/settings/profiles/${id}`))
      if (detail._tag === "Left") continue
      const reads = permissionsOf(detail.right).some((d) =>
        d.enabled && (d.name === "Crm_Implied_View_Leads" || d.name === "Crm_Implied_View_Contacts")
      )
      const edit = name === ADMINISTRATOR || id === connectingProfile
      if (reads || edit) found.push({ id, name, edit })
    }
    return found
  })

/** What an administrator must set by hand when Zoho will not say which profiles read Leads or Contacts. */
export const unlistedInstruction = (modules: ReadonlyArray<{ readonly apiName: string; readonly plural: string }>) =>
  `Zoho did not list its profiles (grant ZohoCRM.settings.profiles.ALL by reconnecting, as a user with Manage Profiles). ` +
  `Until then, for every profile that can view Leads or Contacts: ${where("<profile>")}: ` +
  `${describe(modules.map((m) => m.plural), false)} (Administrator: View, Create, Edit and Delete).`

/**
 * Makes the modules accessible to `profiles` (adding to the profiles that have access already) and sets each
 * profile's permissions on them: View for all, Create/Edit/Delete only where `edit`.
 */
export const grant = (
  session: ZohoSessionService,
  orgId: string,
  modules: ReadonlyArray<{ readonly apiName: string; readonly plural: string; readonly singular: string }>,
  profiles: ReadonlyArray<ProfileAccess>
) =>
  Effect.gen(function*() {
    const created: Array<string> = []
    const byHand: Array<string> = []
    const refusedProfiles = new Set<string>()
    for (const m of modules) {
      const current = yield* Effect.either(session.call(orgId, "GET", `/settings/modules/${m.apiName}`))
      const module = current._tag === "Right" ? listOf(current.right, "modules")[0] : undefined
      const had = Array.isArray(module?.["profiles"]) ? module["profiles"].filter(isRecord).flatMap((p) => text(p, "id") ?? []) : []
      const missing = profiles.filter((p) => !had.includes(p.id))
      if (missing.length === 0) continue
      const moduleId = module === undefined ? undefined : text(module, "id")
      const answer = yield* Effect.either(session.call(orgId, "PUT", `/settings/modules/${m.apiName}`, {
        modules: [{
          ...(moduleId === undefined ? {} : { id: moduleId }),
          singular_label: m.singular,
          plural_label: m.plural,
          profiles: [...new Set([...had, ...profiles.map((p) => p.id)])].map((id) => ({ id }))
        }]
      }))
      const ok = answer._tag === "Right" && answer.right.status < 300 &&
        listOf(answer.right, "modules").every((item) => item["status"] === "success")
      if (ok) {
        created.push(`access to ${m.apiName} for ${missing.map((p) => p.name).join(", ")}`)
      } else {
        for (const p of missing) refusedProfiles.add(p.id)
        byHand.push(
          `Give the profiles ${missing.map((p) => `"${p.name}"`).join(", ")} access to the module "${m.plural}" ` +
            `(Setup → Customization → Modules and Fields → "${m.plural}" → Module Permission).`
        )
      }
    }
    // Each profile's level on the modules: View for all, writing only where it edits.
    for (const p of profiles) {
      if (refusedProfiles.has(p.id)) {
        byHand.push(`${where(p.name)}: ${describe(modules.map((m) => m.plural), p.edit)}.`)
        continue
      }
      const detail = yield* Effect.either(session.call(orgId, "GET", `/settings/profiles/${p.id}`))
      const details = detail._tag === "Right" ? permissionsOf(detail.right) : []
      const changes: Array<{ readonly id: string; readonly enabled: boolean }> = []
      for (const m of modules) {
        for (const action of ["View", ...WRITE_ACTIONS]) {
          const wanted = action === "View" || p.edit
          const d = details.find((x) => x.name === `Crm_Implied_${action}_${m.apiName}`)
          if (d !== undefined && d.enabled !== wanted) changes.push({ id: d.id, enabled: wanted })
        }
      }
      if (changes.length === 0 && detail._tag === "Right") continue
      const answer = detail._tag === "Left"
        ? detail
        : yield* Effect.either(session.call(orgId, "PUT", `/settings/profiles/${p.id}`, { profiles: [{ permissions_details: changes }] }))
      const ok = answer._tag === "Right" && answer.right.status < 300 &&
        listOf(answer.right, "profiles").every((item) => item["status"] === "success")
      if (ok) created.push(`${p.edit ? "full" : "read-only"} access for profile ${p.name}`)
      else byHand.push(`${where(p.name)}: ${describe(modules.map((m) => m.plural), p.edit)}.`)
    }
    const report: AccessReport = { created, byHand }
    return report
  })
