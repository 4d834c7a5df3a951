/**
 * The CRMs of the server. An organisation uses the built-in CRM (`BUILT_IN`) until it connects one of the
 * others (`CRMS`). A CRM lives in its own folder (`crm/<name>/`: client, OAuth, schema set-up, write-back,
 * status wording) and describes itself in its module file (`crm/Crm.ts`); adding one is its folder and a
 * line here. CrmLive builds each once per process and routes every organisation to the one it connected, or
 * to the built-in CRM.
 */
import { Effect } from "effect"
import { builtInCrm } from "./builtin/BuiltInModule.js"
import type { BuiltInCrmModule, CrmModule } from "./Crm.js"
import { hubspotCrm } from "./hubspot/HubSpotModule.js"
import { zohoCrm } from "./zoho/ZohoModule.js"

export const BUILT_IN: BuiltInCrmModule = builtInCrm

export const CRMS: ReadonlyArray<CrmModule> = [zohoCrm, hubspotCrm]

/** Every connectable CRM's name, for `--provider` (beside the built-in CRM's) and the seam test. */
export const CRM_NAMES: ReadonlyArray<string> = CRMS.map((c) => c.name)

/** The CRM's module, by its name. */
export const crmNamed = (name: string): CrmModule | undefined => CRMS.find((c) => c.name === name)

/** Every CRM's stored secrets sealed under the current key (`serve`, at start, after SecretBox.resealSecrets). */
export const resealCrmSecrets = Effect.forEach(CRMS, (c) => c.resealSecrets, { discard: true })
