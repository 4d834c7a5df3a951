/**
 * The CRMs an organisation can connect instead of the built-in CRM. A CRM lives in its own folder
 * (`crm/<name>/`: client, OAuth, schema set-up, write-back, status wording) and describes itself in its
 * module file (`crm/Crm.ts`); adding one is its folder and a line here. CrmLive builds each once per
 * process and routes every organisation to the one it connected, or to the built-in CRM.
 */
import { Effect } from "effect"
import type { CrmModule } from "./Crm.js"
import { hubspotCrm } from "./hubspot/HubSpotModule.js"
import { zohoCrm } from "./zoho/ZohoModule.js"

export const CRMS: ReadonlyArray<CrmModule> = [zohoCrm, hubspotCrm]

/** Every CRM's name, for `--provider` (beside `built-in`) and the seam test. */
export const CRM_NAMES: ReadonlyArray<string> = CRMS.map((c) => c.name)

/** The CRM's module, by its name. */
export const crmNamed = (name: string): CrmModule | undefined => CRMS.find((c) => c.name === name)

/** Every CRM's stored secrets sealed under the current key (`serve`, at start, after SecretBox.resealSecrets). */
export const resealCrmSecrets = Effect.forEach(CRMS, (c) => c.resealSecrets, { discard: true })
