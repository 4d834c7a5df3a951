/**
 * `@parley/core` — the /api/v1 contract, for any TypeScript service that
 * talks to Parley: the schemas of every resource and request, every error as a
 * tagged class with its status and code, the whole API as one `HttpApi`
 * (`ParleyApi`), the OpenAPI document, and two clients derived from it — the
 * Effect client (`makeParleyClient`) and the Promise client
 * (`createParleyClient`) for services that do not use Effect.
 *
 * The engine lives at `@parley/core/domain`, its in-memory layers at
 * `@parley/core/testing`. Nothing else is public: the server's helpers sit
 * behind `@parley/core/internal`, which only this workspace can import.
 */
export * from "./contract/Api.js"
export * from "./contract/Client.js"
export * from "./contract/Errors.js"
export * from "./contract/Events.js"
export * from "./contract/OpenApiDocument.js"
export * from "./contract/Primitives.js"
export * from "./contract/RecordLists.js"
export * from "./contract/RequestId.js"
export * from "./contract/Requests.js"
export * from "./contract/Resources.js"
export * from "./contract/Security.js"
export * from "./contract/Statuses.js"
export * from "./contract/OptOuts.js"
export * from "./contract/WebhookEndpoints.js"

export * from "./client/PromiseClient.js"
export * from "./client/ClientErrors.js"
export * from "./client/Retry.js"
