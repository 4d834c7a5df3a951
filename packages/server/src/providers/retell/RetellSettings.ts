/**
 * What an organisation gives Parley to place its AI calls through Retell
 * (`parley providers set --org ORG --kind retell --api-key … [--api-base URL]`):
 * the workspace's API key, which is also the key Retell signs webhooks with (so
 * there is no separate webhook secret), and the API base, for local fakes.
 * The key is the only secret: it is sealed at rest and never shown again.
 * Agents (bots' `--provider-id`) and numbers (plain E.164: Retell numbers need
 * no provider id) live in Parley's directory, not here.
 */
import { Either, ParseResult, Schema } from "effect"
import type { SettingField, SettingsInput, SettingsRefusal, StoredSettings } from "../Provider.js"
import { given } from "../ProviderSettings.js"
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

/** What `parley providers set --kind retell` asks for beside the API base. */
export const RETELL_FIELDS: ReadonlyArray<SettingField> = [
  {
    name: "apiKey",
    flag: "api-key",
    label: "API key",
    description: "the API key (with the webhook badge: Retell signs its webhooks with it)",
    secret: true,
    required: true,
    inConsole: true
  }
]

const decodeSettings = Schema.decodeUnknownEither(RetellSettings)

export const checkRetellSettings = (input: SettingsInput, apiBase: string): Either.Either<RetellSettings, SettingsRefusal> => {
  const apiKey = given(input["apiKey"])
  if (apiKey === undefined) return Either.left({ field: "apiKey", message: "is required for Retell" })
  return Either.mapLeft(
    decodeSettings({ apiKey, apiBase }),
    (error) => ({ field: "apiBase", message: ParseResult.TreeFormatter.formatErrorSync(error) })
  )
}

export const storeRetellSettings = (settings: RetellSettings): StoredSettings => ({
  apiBase: settings.apiBase,
  accountId: null,
  sealed: Schema.encodeSync(RetellSecrets)({ apiKey: settings.apiKey })
})

const decodeSecrets = Schema.decodeUnknownSync(RetellSecrets)

export const readRetellSettings = (stored: StoredSettings): RetellSettings => ({
  apiBase: stored.apiBase,
  ...decodeSecrets(stored.sealed)
})
