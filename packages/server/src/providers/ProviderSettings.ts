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

/**
 * Who sets the settings: the operator (`parley providers set`, on the server's own machine) may point a
 * provider's API at any http(s) URL (a regional edge, a proxy, a local fake; the connections still pass
 * PARLEY_PROVIDER_ALLOWED_NETWORKS); an organisation's administrator (the console) only at https URLs on
 * the provider's own hosts, the domain of its public API and its subdomains.
 */
export type SettingsAuthor = "operator" | "organisation"

/** The provider's own domain: the last two labels of its public API's host (the registry's providers' own domains). */
const ownDomain = (provider: Provider): string => new URL(provider.defaultApiBase).hostname.split(".").slice(-2).join(".")

const onOwnHosts = (provider: Provider, url: string): boolean => {
  try {
    const parsed = new URL(url)
    const domain = ownDomain(provider)
    const host = parsed.hostname.toLowerCase()
    return parsed.protocol === "https:" && parsed.port === "" && parsed.username === "" && parsed.password === "" &&
      (host === domain || host.endsWith(`.${domain}`))
  } catch {
    return false
  }
}

/** The fields that name where a provider's API is (`apiBase`, and a provider's other bases such as a content API's). */
const isBaseField = (name: string) => name === "apiBase" || name.endsWith("ApiBase")

/** Checks what was given for a provider; what to store when it is right. */
export const checkSettings = (
  provider: Provider,
  input: SettingsInput,
  author: SettingsAuthor = "operator"
): Either.Either<StoredSettings, SettingsRefusal> => {
  if (author === "organisation") {
    for (const [field, value] of Object.entries(input)) {
      const url = given(value)
      if (isBaseField(field) && url !== undefined && !onOwnHosts(provider, url)) {
        return Either.left({
          field,
          message: `"${url}" must be an https:// URL on ${ownDomain(provider)} (another API base is the server operator's setting)`
        })
      }
    }
  }
  return Either.flatMap(
    optionalUrl("apiBase", input["apiBase"], provider.defaultApiBase),
    (apiBase) => provider.check(input, apiBase ?? provider.defaultApiBase)
  )
}

/** The field every provider has beside its own: where its API is. */
export const API_BASE_FIELD = {
  name: "apiBase",
  flag: "api-base",
  label: "API base (optional)",
  description:
    "The provider's API base URL (default: its public API). In the console: https on the provider's own hosts; any other (a proxy, a local fake) only with `parley providers set`",
  secret: false,
  required: false,
  inConsole: true
} as const
