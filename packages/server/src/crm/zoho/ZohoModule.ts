/**
 * Zoho CRM as the registry knows it (crm/Crm.ts): its wording, its configuration and connections table,
 * and the running CRM over them — records and creations (ZohoCrm), connecting (ZohoConnect, the callback
 * route), `crm setup` (ZohoSetup), the workflow-rules setting (ZohoWorkflows) and the three outboxes
 * `serve` runs (ZohoWriteBack, the shared crm/InboundRecords over `zoho_inbound`, ZohoOptOutSync: the opt-out checkboxes). Every call goes through one session per process
 * (ZohoSession within ZohoCallSlots' concurrency cap).
 */
import { Context, Effect, Layer, Option } from "effect"
import * as Connections from "../Connections.js"
import { type CrmHost, defineCrm, type RunningCrmParts } from "../Crm.js"
import * as InboundRecords from "../InboundRecords.js"
import { zohoCallbackRoutes } from "./ZohoCallbackRoute.js"
import { ZOHO_VARIABLES, ZohoConfig } from "./ZohoConfig.js"
import * as ZohoConnect from "./ZohoConnect.js"
import * as ZohoConnections from "./ZohoConnections.js"
import * as ZohoCrm from "./ZohoCrm.js"
import { ZohoOptOutSyncLive } from "./ZohoOptOutSync.js"
import { ZohoSession } from "./ZohoSession.js"
import { SMS_OPT_OUT_FIELD } from "./ZohoSchema.js"
import { setup } from "./ZohoSetup.js"
import * as ZohoWorkflows from "./ZohoWorkflows.js"
import { ZohoWriteBackLive } from "./ZohoWriteBack.js"

const WORKFLOWS = "workflows"

/** Zoho connections' tokens, resealed under the current key; a stale access token is simply refreshed. */
const resealSecrets = Connections.resealSecrets("zoho_connections")

export const zohoCrm = defineCrm<ZohoConfig | ZohoConnections.ZohoConnections>({
  name: "zoho",
  label: "Zoho CRM",
  vendor: "Zoho",
  accountKey: "zohoOrg",
  variables: ZOHO_VARIABLES,
  connectHint: "prints Zoho's consent URL",
  optOutField: SMS_OPT_OUT_FIELD,
  toggles: [{
    flag: WORKFLOWS,
    description:
      "Whether Parley's writes to Zoho run the organisation's Zoho workflow rules: inbound records and the first write of a final status (default on)",
    title: "Zoho workflow rules",
    describe: (orgId, on) =>
      `Zoho workflow rules of ${orgId}: ${
        on ? "on (inbound records and final statuses are written with trigger workflow)" : "off (nothing Parley writes runs a workflow rule)"
      }`,
    explain: (on) =>
      on
        ? "Parley writes inbound records, and each record's final status, with Zoho's workflow trigger, so your workflow rules on Parley Messages run on them."
        : "nothing Parley writes to Zoho runs a workflow rule.",
    button: (on) => (on ? "Turn workflow rules off" : "Turn workflow rules on"),
    notice: (on) =>
      on
        ? "Zoho workflow rules now run on inbound records and final statuses Parley writes."
        : "Zoho workflow rules no longer run on anything Parley writes."
  }],
  layer: Layer.merge(ZohoConfig.layer, ZohoConnections.layer),
  make: (builtIn) =>
    Effect.gen(function*() {
      const zoho = yield* ZohoCrm.make(builtIn)
      const config = yield* ZohoConfig
      const connections = yield* ZohoConnections.ZohoConnections
      const workflows = yield* ZohoWorkflows.make
      // What the folder's functions ask for: its own services, the session, and the process's stores.
      const context = Context.add(
        yield* Effect.context<ZohoConfig | ZohoConnections.ZohoConnections | CrmHost>(),
        ZohoSession,
        zoho.session
      )
      const configured = Option.isSome(config.zohoClientId) && Option.isSome(config.zohoClientSecret)
      const parts: RunningCrmParts = {
        consentOrigin: configured ? Option.some(ZohoConnect.accountsOrigin(config)) : Option.none(),
        isConnected: zoho.isConnected,
        records: zoho.records,
        forget: zoho.forget,
        connect: (orgId, options) => Effect.provide(ZohoConnect.start(orgId, options), context),
        status: (orgId) => Effect.provide(ZohoConnect.status(orgId), context),
        disconnect: (orgId) => Effect.provide(ZohoConnect.disconnect(orgId), context),
        setup: (orgId) => Effect.provide(setup(orgId), context),
        toggle: (flag) => ({
          enabled: (orgId) => (flag === WORKFLOWS ? workflows.enabled(orgId) : Effect.succeed(false)),
          set: (orgId, on) => (flag === WORKFLOWS ? workflows.set(orgId, on) : Effect.void)
        }),
        routes: Effect.provide(zohoCallbackRoutes, context),
        workers: Layer.mergeAll(
          ZohoWriteBackLive,
          // Texts stored without their Parley_Messages record (migration 0023's outbox), made as at arrival.
          InboundRecords.layer("zoho_inbound", ZohoConnections.refusing(connections), { concurrency: config.zohoConcurrency }),
          ZohoOptOutSyncLive
        ).pipe(Layer.provide(Layer.succeedContext(context)))
      }
      return parts
    }),
  resealSecrets
})
