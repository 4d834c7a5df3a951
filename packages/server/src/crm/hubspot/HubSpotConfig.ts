/**
 * HubSpot's part of the server's configuration, read once from the environment (documented in
 * docs/configuration.md):
 * - PARLEY_HUBSPOT_CLIENT_ID, PARLEY_HUBSPOT_CLIENT_SECRET (unset): the public app's OAuth client; needed to
 *   connect HubSpot;
 * - PARLEY_HUBSPOT_AUTH_URL (default https://app.hubspot.com): where the install page is;
 * - PARLEY_HUBSPOT_API_URL (default https://api.hubapi.com): the API and token endpoints. Set both for a
 *   local fake.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

export interface HubSpotSettings {
  readonly clientId: Option.Option<string>
  readonly clientSecret: Option.Option<Redacted.Redacted<string>>
  readonly authUrl: string
  readonly apiUrl: string
}

/** The variables read below, for the registry (`crm connect --help`, the docs test). */
export const VARIABLES = [
  { name: "PARLEY_HUBSPOT_CLIENT_ID", description: "The OAuth client id of the HubSpot app Parley connects as" },
  { name: "PARLEY_HUBSPOT_CLIENT_SECRET", description: "Its secret" },
  { name: "PARLEY_HUBSPOT_AUTH_URL", description: "Where HubSpot's install page is (default https://app.hubspot.com)" },
  { name: "PARLEY_HUBSPOT_API_URL", description: "HubSpot's API and token endpoints (default https://api.hubapi.com)" }
] as const

export class HubSpotConfig extends Context.Tag("@parley/server/crm/hubspot/HubSpotConfig")<HubSpotConfig, HubSpotSettings>() {}

/** An http(s) origin, without a trailing slash, or `fallback` when unset. */
const origin = (config: Config.Config<string>, fallback: string) =>
  config.pipe(
    Config.validate({ message: "must be an http(s) URL", validation: (url) => /^https?:\/\/[^/]+/.test(url) }),
    Config.map((url) => url.replace(/\/+$/, "")),
    Config.withDefault(fallback)
  )

export const settings: Config.Config<HubSpotSettings> = Config.all({
  clientId: Config.option(Config.string("PARLEY_HUBSPOT_CLIENT_ID")),
  clientSecret: Config.option(Config.redacted("PARLEY_HUBSPOT_CLIENT_SECRET")),
  authUrl: origin(Config.string("PARLEY_HUBSPOT_AUTH_URL"), "https://app.hubspot.com"),
  apiUrl: origin(Config.string("PARLEY_HUBSPOT_API_URL"), "https://api.hubapi.com")
})

/** The client id and secret, when both are set (connecting and refreshing need both). */
export const client = (config: HubSpotSettings): Option.Option<{ readonly id: string; readonly secret: string }> =>
  Option.zipWith(config.clientId, config.clientSecret, (id, secret) => ({ id, secret: Redacted.value(secret) }))

/** A malformed URL stops the process at start, with the variable's name (as ServerConfig's errors do). */
export const layer: Layer.Layer<HubSpotConfig> = Layer.effect(HubSpotConfig, Effect.orDie(settings))

export const layerFrom = (values: HubSpotSettings): Layer.Layer<HubSpotConfig> => Layer.succeed(HubSpotConfig, values)
