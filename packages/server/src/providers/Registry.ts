/**
 * The providers Parley can hand actions to. A provider lives in its own folder (`providers/<name>/`:
 * client, status table, settings, callback routes) and describes itself in its module file
 * (`providers/Provider.ts`); adding one is its folder and a line here. An organisation without a
 * provider for a kind of action uses the simulator.
 */
import { Effect } from "effect"
import type { Provider, ServedKind } from "./Provider.js"
import { retellProvider } from "./retell/RetellProvider.js"
import { twilioProvider } from "./twilio/TwilioProvider.js"
import { vapiProvider } from "./vapi/VapiProvider.js"

export const PROVIDERS = [twilioProvider, vapiProvider, retellProvider] as const

/** The provider's module, by its name (`--kind`, the accounts table, the journal). */
export const providerNamed = (name: string): Provider | undefined => PROVIDERS.find((p) => p.name === name)

/** The providers that serve a kind of action: an organisation uses one of them at a time. */
export const providersFor = (kind: ServedKind): ReadonlyArray<Provider> => PROVIDERS.filter((p) => p.kind === kind)

/** Every provider's name, for `--kind`. */
export const PROVIDER_NAMES = PROVIDERS.map((p) => p.name)

/** Every provider's callback routes, for the request pipeline. */
export const providerRoutes = Effect.map(Effect.all(PROVIDERS.map((p) => p.routes)), (lists) => lists.flat())
