/**
 * The built-in CRM as the registry knows it (crm/Crm.ts, `BuiltInCrmModule`): what an organisation uses until
 * it connects one of the registry's other CRMs — records and templates in Parley's own database, connected
 * with `parley crm connect ORG --account NAME` or the console's form — and, whichever CRM serves its records,
 * the keeper of its connection state (BuiltInCrm).
 */
import type { BuiltInCrmModule } from "../Crm.js"
import * as BuiltInCrm from "./BuiltInCrm.js"

export const builtInCrm: BuiltInCrmModule = {
  name: "built-in",
  label: "Built-in CRM",
  phrase: "the built-in CRM",
  connectHint: "the embedded CRM, with --account",
  make: BuiltInCrm.make
}
