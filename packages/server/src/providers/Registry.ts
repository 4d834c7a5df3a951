/**
 * The providers Parley can hand actions to, and the HTTP routes each one's callbacks arrive on. A
 * provider lives in its own folder (`providers/<name>/`: client, status table, callback routes); adding
 * one is its folder and a line here. The simulator needs no routes.
 */
import { Effect } from "effect"
import { twilioCallbackRoutes } from "./twilio/TwilioCallbacks.js"
import { twilioInboundRoutes } from "./twilio/TwilioInbound.js"
import { vapiCallbackRoutes } from "./vapi/VapiCallbacks.js"

const routes = [twilioInboundRoutes, twilioCallbackRoutes, vapiCallbackRoutes] as const

/** Every provider's callback routes, for the request pipeline. */
export const providerRoutes = Effect.map(Effect.all(routes), (lists) => lists.flat())
