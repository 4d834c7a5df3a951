/**
 * What an organisation gives Parley to place its AI calls through Retell
 * (`parley providers set --org ORG --kind retell --api-key … [--api-base URL]`):
 * the workspace's API key, which is also the key Retell signs webhooks with (so
 * there is no separate webhook secret), and the API base, for local fakes.
 * The key is the only secret: it is sealed at rest and never shown again.
 * Agents (bots' `--provider-id`) and numbers (plain E.164: Retell numbers need
 * no provider id) live in Parley's directory, not here.
 */
import { Schema } from "effect"
import type { RetellAccount } from "./RetellClient.js"
import { RETELL_API_BASE } from "./RetellClient.js"

const HttpUrl = Schema.String.pipe(
  Schema.filter((value) => {
    try {
      const url = new URL(value)
      return url.protocol === "https:" || url.protocol === "http:"
    } catch {
      return false
    }
  }, { message: () => "must be an http(s) URL" })
)

/** The sealed part: secrets only. */
export const RetellSecrets = Schema.Struct({
  apiKey: Schema.String.pipe(Schema.minLength(1, { message: () => "the Retell API key must not be empty" }))
})
export type RetellSecrets = typeof RetellSecrets.Type

/** Everything `providers set --kind retell` takes, validated; `apiBase` defaults to Retell's API. */
export const RetellSettings = Schema.Struct({
  ...RetellSecrets.fields,
  apiBase: Schema.optionalWith(HttpUrl, { default: () => RETELL_API_BASE })
})
export type RetellSettings = typeof RetellSettings.Type

/** The account the client talks to. */
export const retellAccount = (settings: RetellSettings): RetellAccount => ({
  apiBase: settings.apiBase,
  apiKey: settings.apiKey
})
