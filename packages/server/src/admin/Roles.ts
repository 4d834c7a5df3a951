/**
 * What each administrator may do in the console (issue 33). An `owner` does everything, including managing
 * the organisation's administrators and their roles; an `admin` changes the organisation's settings but not
 * who administers it; a `viewer` reads every page (secrets are never on a page to read: they are shown once,
 * in the answer to the form that made them) and changes nothing.
 */
export const ROLES = ["owner", "admin", "viewer"] as const

export type Role = typeof ROLES[number]

export const isRole = (value: string): value is Role => (ROLES as ReadonlyArray<string>).includes(value)

/** What a role may do, named once for the console's routes, its pages and the CLI's help. */
export const mayChange = (role: Role): boolean => role !== "viewer"
export const mayManageAdmins = (role: Role): boolean => role === "owner"

export const ROLE_SUMMARIES: Readonly<Record<Role, string>> = {
  owner: "everything, including administrators and their roles",
  admin: "every setting, but not administrators or roles",
  viewer: "reads every page, changes nothing"
}
