/**
 * `@parley/core/domain` — Parley's engine for hosts that run it themselves:
 * the domain services (each a `Context.Tag` with its layer), the ports they
 * need from the outside world (CRM, providers, storage), and
 * `DomainLayer`, which assembles the services over whatever port layers the
 * host provides. The in-memory port layers are at `@parley/core/testing`.
 */
export * as Access from "./domain/Access.js"
export * as Actions from "./domain/Actions.js"
export * as ApiKeys from "./domain/ApiKeys.js"
export * as Authenticator from "./domain/Authenticator.js"
export * from "./domain/Caller.js"
export * as Consent from "./domain/Consent.js"
export * as Conversations from "./domain/Conversations.js"
export * as Cursors from "./domain/Cursors.js"
export * as Directory from "./domain/Directory.js"
export * as Dispatch from "./domain/Dispatch.js"
export * as Idempotency from "./domain/Idempotency.js"
export * as Inbound from "./domain/Inbound.js"
export * as OptOutList from "./domain/OptOutList.js"
export * as ProviderReports from "./domain/ProviderReports.js"
export * as RateLimiter from "./domain/RateLimiter.js"
export * as RecordLists from "./domain/RecordLists.js"
export * as WebhookEndpoints from "./domain/WebhookEndpoints.js"

export * as ActionStore from "./ports/ActionStore.js"
export * as ApiKeyStore from "./ports/ApiKeyStore.js"
export * as Crm from "./ports/Crm.js"
export * as EventOutbox from "./ports/EventOutbox.js"
export * as IdempotencyStore from "./ports/IdempotencyStore.js"
export * as OptOuts from "./ports/OptOuts.js"
export * as Organisations from "./ports/Organisations.js"
export * as Providers from "./ports/Providers.js"
export * as RateLimitStore from "./ports/RateLimitStore.js"
export * from "./ports/StorageError.js"
export * as UnitOfWork from "./ports/UnitOfWork.js"
export * as WebhookEndpointStore from "./ports/WebhookEndpointStore.js"

// The simulator: the provider an organisation has until it connects one, over its memory of sends.
export * as Simulator from "./simulator/Simulator.js"
export * as SimulatorMemory from "./simulator/SimulatorMemory.js"

export { DomainLayer } from "./layers.js"
