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

export class HubSpotConfig extends Context.Tag("@parley/server/crm/hubspot/HubSpotConfig")<HubSpotConfig, HubSpotSettings>() {}

const origin = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.validate({ message: "must be an http(s) URL", validation: (url) => /^https?:\/\/[^/]+/.test(url) }),
    Config.map((url) => url.replace(/\/+$/, "")),
    Config.withDefault(fallback)
  )

export const settings: Config.Config<HubSpotSettings> = Config.all({
  clientId: Config.option(Config.string("PARLEY_HUBSPOT_CLIENT_ID")),
  clientSecret: Config.option(Config.redacted("PARLEY_HUBSPOT_CLIENT_SECRET")),
  authUrl: origin("PARLEY_HUBSPOT_AUTH_URL", "https://app.hubspot.com"),
  apiUrl: origin("PARLEY_HUBSPOT_API_URL", "https://api.hubapi.com")
})

/** The client id and secret, when both are set (connecting and refreshing need both). */
export const client = (config: HubSpotSettings): Option.Option<{ readonly id: string; readonly secret: string }> =>
  Option.zipWith(config.clientId, config.clientSecret, (id, secret) => ({ id, secret: Redacted.value(secret) }))

/** A malformed URL stops the process at start, with the variable's name (as ServerConfig's errors do). */
export const layer: Layer.Layer<HubSpotConfig> = Layer.effect(HubSpotConfig, Effect.orDie(settings))

export const layerFrom = (values: HubSpotSettings): Layer.Layer<HubSpotConfig> => Layer.succeed(HubSpotConfig, values)
