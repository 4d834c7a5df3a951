/** POST/GET /webhook-endpoints and GET/DELETE /webhook-endpoints/{id}. */
import { ParleyApi, WebhookEndpoints } from "@parley/core/internal"
import { Effect } from "effect"
import * as ApiHandlers from "../ApiHandlers.js"
import { guarded } from "./guard.js"

export const WebhookEndpointsHandlers = ApiHandlers.group(ParleyApi, "webhookEndpoints", (handlers) =>
  Effect.gen(function*() {
    const endpoints = yield* WebhookEndpoints.WebhookEndpoints
    return handlers
      .handle("createWebhookEndpoint", ({ payload }) =>
        guarded("webhookEndpoints.createWebhookEndpoint", (caller) => endpoints.create(caller, payload)))
      .handle("listWebhookEndpoints", () =>
        guarded("webhookEndpoints.listWebhookEndpoints", (caller) =>
          Effect.map(endpoints.list(caller), (items) => ({ items }))))
      .handle("getWebhookEndpoint", ({ path }) =>
        guarded("webhookEndpoints.getWebhookEndpoint", (caller) => endpoints.get(caller, path.id)))
      .handle("deleteWebhookEndpoint", ({ path }) =>
        guarded("webhookEndpoints.deleteWebhookEndpoint", (caller) => endpoints.remove(caller, path.id)))
  }))
