/**
 * Template merge: `${Module.Field}` placeholders are filled from the CRM
 * record linked to the action, by the field's label as CRM users write it
 * (`${Leads.First Name}`), and `${User.<label>}` from the sending CRM user
 * where the CRM provides it with the record. A placeholder that cannot be
 * filled — no linked record, a record of another module, an unknown field, an
 * empty one unless the CRM's own merge leaves it blank — is a 400 naming it,
 * never a message with a hole in it.
 */
import { Either } from "effect"
import { InvalidRequest } from "../contract/Errors.js"
import type { CrmRecord } from "../ports/Crm.js"

const PLACEHOLDER = /\$\{([A-Za-z]+)\.([^}]+)\}/g

/** `${User.First Name}`: the sending CRM user's fields, which a CRM that merges them puts in the record. */
export const SENDER_MODULE = "User"

/** The field labels a template asks of the linked record of `module`: its own, and the sender's as `User.<label>`. */
export const fieldLabelsFor = (body: string, module: string | undefined): ReadonlyArray<string> =>
  placeholders(body).flatMap((p) =>
    p.module === module ? [p.field] : p.module === SENDER_MODULE ? [`${SENDER_MODULE}.${p.field}`] : []
  )

export const placeholders = (body: string): ReadonlyArray<{ readonly module: string; readonly field: string }> =>
  [...body.matchAll(PLACEHOLDER)].map((m) => ({ module: m[1] ?? "", field: (m[2] ?? "").trim() }))

export const renderTemplate = (body: string, record: CrmRecord | null): Either.Either<string, InvalidRequest> => {
  const missing: Array<string> = []
  const rendered = body.replace(PLACEHOLDER, (whole, module: string, field: string) => {
    const value = record === null
      ? undefined
      : record.module === module
      ? record.fields[field.trim()]
      : module === SENDER_MODULE
      ? record.fields[`${SENDER_MODULE}.${field.trim()}`]
      : undefined
    if (value === undefined || (value === "" && record?.emptyMergesAsBlank !== true)) {
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
