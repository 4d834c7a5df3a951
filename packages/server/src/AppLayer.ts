/**
 * The whole application, assembled: the core's domain over the SQL ports on
 * the configured database. The HTTP server and every CLI command share it.
 */
import { DomainLayer, RateLimiter } from "@parley/core/domain"
import { Effect, Layer } from "effect"
import { ServerConfig } from "./config/ServerConfig.js"
import * as CrmLive from "./crm/CrmLive.js"
import * as ProvidersLive from "./providers/ProvidersLive.js"
import { DatabaseLive } from "./store/Database.js"
import * as KeyUsage from "./store/KeyUsage.js"
import * as SecretBox from "./store/SecretBox.js"
import * as SqlActionStore from "./store/SqlActionStore.js"
import * as SqlApiKeyStore from "./store/SqlApiKeyStore.js"
import * as SqlCursorSigner from "./store/SqlCursorSigner.js"
import * as SqlEventOutbox from "./store/SqlEventOutbox.js"
import * as SqlOptOuts from "./store/SqlOptOuts.js"
import * as SqlOrganisations from "./store/SqlOrganisations.js"
import * as SqlProviderAccounts from "./store/SqlProviderAccounts.js"
import * as SqlProviderHandoffs from "./store/SqlProviderHandoffs.js"
import * as SqlSimulatorMemory from "./store/SqlSimulatorMemory.js"
import * as SqlUnitOfWork from "./store/SqlUnitOfWork.js"
import * as SqlWebhooks from "./store/SqlWebhooks.js"

const RateLimitConfigLive = Layer.effect(
  RateLimiter.RateLimitConfig,
  Effect.map(ServerConfig, (config) => ({ limit: config.rateLimitPerMinute, windowSeconds: 60 }))
)

/**
 * The store chosen for the process (DatabaseLive: SQLite or Postgres, with its ports) and the key that
 * seals its secrets. The server reseals stored secrets under the current key when it starts (serve); other
 * commands only open them, with the current or a previous key.
 */
const StoreLive = SecretBox.layer.pipe(Layer.provideMerge(DatabaseLive))

/** Every storage port on SQL, and the providers (each organisation's, or the simulator) over them. */
export const SqlPortsLive = Layer.mergeAll(
  SqlOrganisations.layer,
  SqlOptOuts.layer,
  SqlApiKeyStore.layer,
  // The built-in CRM, or the registry's CRM an organisation connected (crm/Registry.ts).
  CrmLive.layer,
  SqlActionStore.layer,
  SqlEventOutbox.layer,
  SqlUnitOfWork.layer,
  SqlCursorSigner.layer,
  SqlWebhooks.layer,
  SqlProviderAccounts.layer,
  SqlProviderHandoffs.layer,
  KeyUsage.layer,
  SqlSimulatorMemory.layer
).pipe(Layer.provideMerge(StoreLive))

/** The core's Providers port: the organisation's provider for a kind (Registry.ts), or the simulator. */
const ProvidersLayer = ProvidersLive.layer.pipe(Layer.provideMerge(SqlPortsLive))

/** The domain services and the ports they run on; needs only ServerConfig. */
export const AppLive = DomainLayer.pipe(
  Layer.provideMerge(ProvidersLayer),
  Layer.provideMerge(RateLimitConfigLive)
)
