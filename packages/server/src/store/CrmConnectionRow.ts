/**
 * An organisation's CRM connection as stored (`crm_connections`): which CRM account its requests run as, in
 * what state, with what permissions. The default CRM reads and writes it; SqlApiKeyStore joins it to the key
 * lookup, so authenticating a request reads the database once.
 */
import { Crm, CrmModule } from "@parley/core/internal"
import { Schema } from "effect"
import { DbJson, NullableString } from "./rows.js"

/** The CRM connection row; SqlApiKeyStore joins it to the key lookup as well. */
export const ConnectionRow = Schema.Struct({
  state: Schema.Literal("connected", "disconnected", "identity_changed"),
  account_id: NullableString,
  account_name: NullableString,
  permissions: Schema.NullOr(DbJson(Schema.Struct({
    modules: Schema.Array(CrmModule),
    actionsView: Schema.Literal("all", "own", "none"),
    actionsWrite: Schema.Boolean,
    templates: Schema.Boolean
  })))
})

export const toConnection = (row: typeof ConnectionRow.Type): Crm.CrmConnection => {
  if (row.state === "disconnected" || row.account_id === null || row.permissions === null) {
    return { state: "disconnected" }
  }
  const account: Crm.CrmAccount = { id: row.account_id, name: row.account_name ?? row.account_id, permissions: row.permissions }
  return row.state === "connected" ? { state: "connected", account } : { state: "identity_changed", account }
}
