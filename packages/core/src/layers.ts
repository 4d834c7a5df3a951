/**
 * How the core is assembled: the domain services over whatever port layers
 * the host provides (the server's SQLite or Postgres, or the memory layers).
 */
import { Layer } from "effect"
import * as Access from "./domain/Access.js"
import * as Actions from "./domain/Actions.js"
import * as ApiKeys from "./domain/ApiKeys.js"
import * as Authenticator from "./domain/Authenticator.js"
import * as Consent from "./domain/Consent.js"
import * as Conversations from "./domain/Conversations.js"
import * as Directory from "./domain/Directory.js"
import * as Idempotency from "./domain/Idempotency.js"
import * as Inbound from "./domain/Inbound.js"
import * as OptOutList from "./domain/OptOutList.js"
import * as ProviderReports from "./domain/ProviderReports.js"
import * as RateLimiter from "./domain/RateLimiter.js"
import * as RecordLists from "./domain/RecordLists.js"
import * as WebhookEndpoints from "./domain/WebhookEndpoints.js"
import * as ActionStore from "./ports/ActionStore.js"
import * as ApiKeyStore from "./ports/ApiKeyStore.js"
import * as Crm from "./ports/Crm.js"
import * as EventOutbox from "./ports/EventOutbox.js"
import * as IdempotencyStore from "./ports/IdempotencyStore.js"
import * as OptOuts from "./ports/OptOuts.js"
import * as Organisations from "./ports/Organisations.js"
import * as RateLimitStore from "./ports/RateLimitStore.js"
import * as UnitOfWork from "./ports/UnitOfWork.js"
import * as WebhookEndpointStore from "./ports/WebhookEndpointStore.js"
import * as SimulatorMemory from "./simulator/SimulatorMemory.js"

/** Every domain service; needs the storage ports (OptOuts among them), a RateLimitConfig and a CursorSigner. */
export const DomainLayer = Layer.mergeAll(
  Authenticator.layer,
  Actions.layer,
  Conversations.layer,
  Inbound.layer,
  ProviderReports.layer,
  RecordLists.layer,
  WebhookEndpoints.layer,
  OptOutList.layer
).pipe(
  Layer.provideMerge(Layer.mergeAll(Directory.layer, Idempotency.layer, Consent.layer)),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, RateLimiter.layer, Access.layer))
)

/** Every port in memory: for tests, and for embedding the core without a database. */
export const MemoryPortsLayer = Layer.mergeAll(
  Organisations.layerMemory,
  ApiKeyStore.layerMemory,
  IdempotencyStore.layerMemory,
  RateLimitStore.layerMemory,
  Crm.layerMemory,
  ActionStore.layerMemory,
  EventOutbox.layerMemory,
  UnitOfWork.layerMemory,
  SimulatorMemory.layerMemory,
  WebhookEndpointStore.layerMemory,
  OptOuts.layerMemory
)
