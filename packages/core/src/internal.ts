/**
 * `@parley/core/internal` — everything this workspace's server and tests use:
 * the public subpaths together, plus what the core keeps to itself (id and
 * token primitives, the dispatcher's rules, the simulated providers, event
 * signing, the demo seeding, the rules the domain services apply inside).
 * Exported to this workspace only: the packed package's `exports` leave it
 * out, so it can change without notice.
 */
export * from "./domain.js"
export * from "./index.js"
export * from "./testing.js"

export * as ActionRecords from "./domain/ActionRecords.js"
export * as AllowancePeriods from "./domain/AllowancePeriods.js"
export * as Canonical from "./domain/Canonical.js"
export * as Crypto from "./domain/Crypto.js"
export * as Demo from "./admin/Demo.js"
export * as Destinations from "./domain/Destinations.js"
export * as DispatchPlan from "./domain/DispatchPlan.js"
export * as DispatchRules from "./domain/DispatchRules.js"
export * as Events from "./domain/Events.js"
export * as Scheduling from "./domain/Scheduling.js"
export * as Scopes from "./domain/Scopes.js"
export * as Segments from "./domain/Segments.js"
export * as SendingHours from "./domain/SendingHours.js"
export * as Simulation from "./domain/Simulation.js"
export * as Templates from "./domain/Templates.js"
export * as Visibility from "./domain/Visibility.js"
export * as WebhookAddresses from "./domain/WebhookAddresses.js"
export * as Webhooks from "./domain/Webhooks.js"
export * as WhatsApp from "./domain/WhatsApp.js"
export * as RecipientHours from "./domain/RecipientHours.js"
