/**
 * The rules every provider's settings share, in one place for `parley providers set` and the console's
 * Providers page: values are trimmed (empty counts as not given), the API base, when given, is an
 * http(s) URL (default: the provider's public API), and the rest is the provider's own check
 * (`providers/<name>/…Settings.ts`). A refusal names its field, so each caller shows it where the value
 * was given (a flag, a form field).
 */
import { Either } from "effect"
import type { Provider, SettingsInput, SettingsRefusal, StoredSettings } from "./Provider.js"

export const HTTP_URL = /^https?:\/\/[^\s/]+(\/\S*)?$/
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** A value as given: trimmed, undefined when empty. */
export const given = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

/** An optional URL setting: trimmed of trailing slashes; refused unless http(s). */
export const optionalUrl = (
  field: string,
  value: string | undefined,
  example: string
): Either.Either<string | undefined, SettingsRefusal> => {
  const url = given(value)?.replace(/\/+$/, "")
  if (url === undefined) return Either.right(undefined)
  return HTTP_URL.test(url)
    ? Either.right(url)
    : Either.left({ field, message: `"${url}" must be an http:// or https:// URL, such as ${example}` })
}

/** Checks what was given for a provider; what to store when it is right. */
export const checkSettings = (provider: Provider, input: SettingsInput): Either.Either<StoredSettings, SettingsRefusal> =>
  Either.flatMap(
    optionalUrl("apiBase", input["apiBase"], provider.defaultApiBase),
    (apiBase) => provider.check(input, apiBase ?? provider.defaultApiBase)
  )

/** The field every provider has beside its own: where its API is. */
export const API_BASE_FIELD = {
  name: "apiBase",
  flag: "api-base",
  label: "API base (optional)",
  description: "The provider's API base URL (default: its public API); for regional edges and local fakes",
  secret: false,
  required: false,
  inConsole: true
} as const
