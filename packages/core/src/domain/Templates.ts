/**
 * Template merge: `${Module.Field}` placeholders are filled from the CRM
 * record linked to the action, by the field's label as CRM users write it
 * (`${Leads.First Name}`). A placeholder that cannot be filled — no linked
 * record, a record of another module, an unknown or empty field — is a 400
 * naming it, never a message with a hole in it.
 */
import { Either } from "effect"
import { InvalidRequest } from "../contract/Errors.js"
import type { CrmRecord } from "../ports/Crm.js"

const PLACEHOLDER = /\$\{([A-Za-z]+)\.([^}]+)\}/g

export const placeholders = (body: string): ReadonlyArray<{ readonly module: string; readonly field: string }> =>
  [...body.matchAll(PLACEHOLDER)].map((m) => ({ module: m[1] ?? "", field: (m[2] ?? "").trim() }))

export const renderTemplate = (body: string, record: CrmRecord | null): Either.Either<string, InvalidRequest> => {
  const missing: Array<string> = []
  const rendered = body.replace(PLACEHOLDER, (whole, module: string, field: string) => {
    const value = record !== null && record.module === module ? record.fields[field.trim()] : undefined
    if (value === undefined || value === "") {
      missing.push(whole)
      return whole
    }
    return value
  })
  if (missing.length === 0) return Either.right(rendered)
  const reason = record === null
    ? "the request links no CRM record (set record.module and record.id)"
    : `the linked ${record.module} record has no value for it`
  return Either.left(
    new InvalidRequest({ message: `templateUuid: cannot fill placeholder ${missing.join(", ")}: ${reason}.` })
  )
}
