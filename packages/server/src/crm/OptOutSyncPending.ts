/**
 * Whether a change of Parley's opt-out list for any of a record's numbers still waits in a CRM's opt-out
 * outbox (`table`, keyed by organisation and `phone`, filled by the opt-out triggers of store/OptOutTriggers).
 * A CRM reading a record's opt-out box asks it first: a box Parley itself is about to change is Parley's own
 * stale write, not an administrator's, and the list decides.
 *
 * The numbers are looked for as the CRM shows them and as E.164 (`+` and their digits): a CRM keeps what
 * people typed ("(415) 555-0100"), the list keeps E.164.
 */
import { SqlClient } from "@effect/sql"
import { Crm } from "@parley/core/internal"
import { Effect } from "effect"

export type SyncPending = (orgId: string, shown: ReadonlyArray<string | undefined>) => Effect.Effect<boolean, Crm.CrmError>

/** The numbers to look for: each shown value as it is and as `+digits`. */
export const numbersOf = (shown: ReadonlyArray<string | undefined>): ReadonlyArray<string> =>
  shown.flatMap((value) => {
    if (value === undefined || value.trim() === "") return []
    const digits = value.replace(/\D/g, "")
    return digits === "" ? [value.trim()] : [value.trim(), `+${digits}`]
  })

/** The check over the CRM `crm`'s outbox `table` (its failures are the CRM's `<crm>.optOutSyncPending`). */
export const make = (crm: string, table: string) =>
  Effect.map(SqlClient.SqlClient, (sql): SyncPending => (orgId, shown) => {
    const numbers = numbersOf(shown)
    return numbers.length === 0 ? Effect.succeed(false) : Effect.mapError(
      Effect.map(
        sql`SELECT 1 AS pending FROM ${sql(table)} WHERE org_id = ${orgId} AND ${sql.in("phone", numbers)} LIMIT 1`,
        (rows) => rows.length > 0
      ),
      (cause) => new Crm.CrmError({ operation: `${crm}.optOutSyncPending`, cause, reason: "unavailable" })
    )
  })
