/**
 * HubSpot as the registry knows it (crm/Crm.ts): its wording, its configuration and connections table, and
 * the running CRM over them — records and creations (HubSpotRecords), connecting (HubSpotConnect, the
 * callback route), `crm setup` (HubSpotSetup) and the outboxes `serve` drains (HubSpotWriteBack, HubSpotOptOutSync,
 * the shared crm/InboundRecords over `hubspot_inbound`). Every call goes through one session per process
 * (HubSpotSession: single-flight token refresh across replicas). Templates for HubSpot organisations live in
 * Parley (HubSpot has no SMS template object on every tier): they are the default CRM's, merged with fields
 * read from HubSpot.
 */
import { Effect, Layer, Option } from "effect"
import { SettingsCache } from "../../store/SettingsCache.js"
import * as Connections from "../Connections.js"
import { type CrmHost, CrmConnectFailed, type CrmStatus, defineCrm, type RunningCrmParts } from "../Crm.js"
import { callbackRoutes } from "./HubSpotCallbackRoute.js"
import * as HubSpotConfig from "./HubSpotConfig.js"
import * as HubSpotConnect from "./HubSpotConnect.js"
import * as HubSpotConnections from "./HubSpotConnections.js"
import * as HubSpotRecords from "./HubSpotRecords.js"
import * as HubSpotSession from "./HubSpotSession.js"
import * as HubSpotSetup from "./HubSpotSetup.js"
import * as HubSpotOptOutSync from "./HubSpotOptOutSync.js"
import * as HubSpotWriteBack from "./HubSpotWriteBack.js"
import * as InboundRecords from "../InboundRecords.js"
import * as OptOutSyncPending from "../OptOutSyncPending.js"

/** HubSpot connections' tokens, resealed under the current key; a stale access token is simply refreshed. */
const resealSecrets = Connections.resealSecrets("hubspot_connections")

export const hubspotCrm = defineCrm<HubSpotConfig.HubSpotConfig | HubSpotConnections.HubSpotConnections>({
  name: "hubspot",
  label: "HubSpot",
  vendor: "HubSpot",
  accountKey: "hubspotPortal",
  variables: HubSpotConfig.VARIABLES,
  connectHint: "prints HubSpot's install URL",
  optOutField: HubSpotRecords.OPT_OUT_PROPERTY,
  toggles: [],
  layer: Layer.merge(HubSpotConfig.layer, HubSpotConnections.layer),
  make: (builtIn) =>
    Effect.gen(function*() {
      const config = yield* HubSpotConfig.HubSpotConfig
      const connections = yield* HubSpotConnections.HubSpotConnections
      const settings = yield* SettingsCache
      const context = yield* Effect.context<HubSpotConfig.HubSpotConfig | HubSpotConnections.HubSpotConnections | CrmHost>()
      const session = yield* HubSpotSession.make(builtIn)
      // A contact's opt-out box Parley is about to change itself (HubSpotOptOutSync's outbox) is not read as the administrator's.
      const syncPending = yield* OptOutSyncPending.make("hubspot", "hubspot_opt_outs")
      const records = HubSpotRecords.make(session, syncPending)
      const status = (orgId: string) =>
        Effect.map(connections.get(orgId), Option.map((c): CrmStatus => ({
          user: { name: c.email === "" ? c.userId : c.email, email: c.email, userId: c.userId },
          userRef: { text: "user id", page: "User ID", value: c.userId },
          account: { id: c.hubId, name: c.hubDomain === "" ? c.hubId : c.hubDomain },
          since: c.connectedAt,
          lastError: c.lastError === null ? null : { code: c.lastErrorCode, message: c.lastError, at: c.lastErrorAt }
        })))
      const parts: RunningCrmParts = {
        consentOrigin: Option.map(HubSpotConfig.client(config), () => new URL(config.authUrl).origin),
        isConnected: (orgId) => settings.cachedValue(`hubspot-connected\u0000${orgId}`, connections.exists(orgId)),
        records: {
          // Templates (and hand-made records) stay Parley's own for a HubSpot organisation.
          listTemplates: builtIn.listTemplates,
          findTemplate: builtIn.findTemplate,
          upsertTemplate: builtIn.upsertTemplate,
          upsertRecord: builtIn.upsertRecord,
          listRecords: builtIn.listRecords,
          findRecord: records.findRecord,
          findByPhone: records.findByPhone,
          recordAction: records.recordAction
        },
        forget: () => Effect.void,
        connect: (orgId, options) =>
          HubSpotConnect.start(orgId, options).pipe(
            Effect.catchTag("HubSpotConnectFailed", (e) => Effect.fail(new CrmConnectFailed({ status: e.status, message: e.message }))),
            Effect.provide(context)
          ),
        status,
        disconnect: (orgId) => Effect.provide(HubSpotConnect.disconnect(orgId), context),
        setup: (orgId) => HubSpotSetup.setup(session, orgId),
        toggle: () => ({ enabled: () => Effect.succeed(false), set: () => Effect.void }),
        routes: Effect.provide(callbackRoutes, context),
        // The outboxes `serve` drains (migration 0041): write-back, inbound texts' communications, opt-outs.
        workers: Layer.mergeAll(
          HubSpotWriteBack.layer(session),
          HubSpotOptOutSync.layer(session),
          InboundRecords.layer("hubspot_inbound", HubSpotConnections.refusing(connections), { concurrency: 4 })
        ).pipe(Layer.provide(Layer.succeedContext(context)))
      }
      return parts
    }),
  resealSecrets
})
