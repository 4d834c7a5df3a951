/** GET /opt-outs, GET/PUT/DELETE /opt-outs/{phone}: the organisation's opt-out list (the core's OptOutList). */
import { OptOutList, ParleyApi } from "@parley/core/internal"
import { Effect } from "effect"
import * as ApiHandlers from "../ApiHandlers.js"
import { guarded } from "./guard.js"

export const OptOutsHandlers = ApiHandlers.group(ParleyApi, "optOuts", (handlers) =>
  Effect.gen(function*() {
    const list = yield* OptOutList.OptOutList
    return handlers
      .handle("listOptOuts", ({ urlParams }) => guarded("optOuts.listOptOuts", (caller) => list.list(caller, urlParams)))
      .handle("getOptOut", ({ path }) => guarded("optOuts.getOptOut", (caller) => list.get(caller, path.phone)))
      .handle("putOptOut", ({ path, payload }) =>
        guarded("optOuts.putOptOut", (caller) => list.put(caller, path.phone, payload)))
      .handle("deleteOptOut", ({ path }) => guarded("optOuts.deleteOptOut", (caller) => list.remove(caller, path.phone)))
  }))
