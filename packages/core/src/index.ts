/**
 * @parley/core — Parley's contract and domain.
 *
 * - The /api/v1 contract: schemas, errors, the HttpApi definition, the typed
 *   client and the OpenAPI document, all from one definition.
 * - The domain as Effect services over swappable ports (CRM, carrier, AI-call
 *   provider, storage), with in-memory layers for every port.
 */
export * from "./contract/Api.js"
export * from "./contract/Client.js"
export * from "./contract/Errors.js"
export { EVENT_DESCRIPTIONS } from "./contract/Events.js"
export * from "./contract/OpenApiDocument.js"
export * from "./contract/Primitives.js"
export * from "./contract/RequestId.js"
export * from "./contract/Requests.js"
export * from "./contract/Resources.js"
export * from "./contract/Security.js"
export * from "./contract/Statuses.js"

export * as Access from "./domain/Access.js"
export * as ActionRecords from "./domain/ActionRecords.js"
export * as Actions from "./domain/Actions.js"
export * as ApiKeys from "./domain/ApiKeys.js"
export * as Authenticator from "./domain/Authenticator.js"
export * from "./domain/Caller.js"
export * as Conversations from "./domain/Conversations.js"
export * as Crypto from "./domain/Crypto.js"
export * as Cursors from "./domain/Cursors.js"
export * as Directory from "./domain/Directory.js"
export * as DispatchRules from "./domain/DispatchRules.js"
export * as Events from "./domain/Events.js"
export * as Idempotency from "./domain/Idempotency.js"
export * as Inbound from "./domain/Inbound.js"
export * as RateLimiter from "./domain/RateLimiter.js"
export * as Scheduling from "./domain/Scheduling.js"
export * as Scopes from "./domain/Scopes.js"
export * as SendingHours from "./domain/SendingHours.js"
export * as Simulation from "./domain/Simulation.js"
export * as Templates from "./domain/Templates.js"
export * as Webhooks from "./domain/Webhooks.js"
export * as WhatsApp from "./domain/WhatsApp.js"

export * as AiCallProvider from "./ports/AiCallProvider.js"
export * as ApiKeyStore from "./ports/ApiKeyStore.js"
export * as Carrier from "./ports/Carrier.js"
export * as Crm from "./ports/Crm.js"
export * as EventOutbox from "./ports/EventOutbox.js"
export * as IdempotencyStore from "./ports/IdempotencyStore.js"
export * as Organisations from "./ports/Organisations.js"
export * as RateLimitStore from "./ports/RateLimitStore.js"
export * from "./ports/StorageError.js"
export * as UnitOfWork from "./ports/UnitOfWork.js"

export * from "./layers.js"
export * as Demo from "./admin/Demo.js"
