/** GET /numbers, /bots, /templates. */
import { Directory, ParleyApi } from "@parley/core/internal"
import { Effect } from "effect"
import * as ApiHandlers from "../ApiHandlers.js"
import { guarded } from "./guard.js"

export const ResourcesHandlers = ApiHandlers.group(ParleyApi, "resources", (handlers) =>
  Effect.gen(function*() {
    const directory = yield* Directory.Directory
    return handlers
      .handle("listNumbers", () =>
        guarded("resources.listNumbers", (caller) => Effect.map(directory.numbers(caller), (items) => ({ items }))))
      .handle("listBots", () =>
        guarded("resources.listBots", (caller) =>
          Effect.map(directory.bots(caller), (items) => ({
            items,
            managementUrl: caller.organisation.botsManagementUrl
          }))))
      .handle("listTemplates", () =>
        guarded("resources.listTemplates", (caller) =>
          Effect.map(directory.templates(caller), (items) => ({
            items,
            managementUrl: caller.organisation.templatesManagementUrl
          }))))
  }))
