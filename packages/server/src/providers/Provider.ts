/**
 * What a provider is to the rest of the server: the one seam a provider plugs into. A provider is a folder
 * (`providers/<name>/`) whose module file describes it with `defineProvider` — its name, the kind of
 * action it serves, its settings (what `parley providers set --kind <name>` asks for, what the console's
 * Providers form shows and `providers show` prints), the client the dispatcher hands actions to, its
 * callback routes — and one line in Registry.ts. Nothing outside its folder names it.
 *
 * The dispatcher keeps what is the same for every provider (the journal, reconciliation before resending,
 * leases, backoff); a client only says how to send, how to list what may already have been sent, and how
 * to read an action's status again.
 */
import type { Organisations, Providers, StorageError } from "@parley/core/domain"
import { Effect, Either } from "effect"
import type { ServerSettings } from "../config/ServerConfig.js"
import type { PlainRoute } from "../http/PlainRoutes.js"

/** The kinds of action a provider can serve; an organisation has at most one provider per kind. */
export type ServedKind = "message" | "ai_call"

/** One setting `parley providers set` takes (as `--<flag>`) and the console's form shows. */
export interface SettingField {
  /** The field's name in the settings, the console form and refusals. */
  readonly name: string
  /** The CLI flag, without `--`. */
  readonly flag: string
  /** The console form's label. */
  readonly label: string
  /** What it is, for the CLI's help and the form's hint. */
  readonly description: string
  /** Sealed at rest, never shown again, read from stdin / an environment variable / a prompt by the CLI. */
  readonly secret: boolean
  /** Asked for at a prompt when the CLI runs interactively and it was not given. */
  readonly required: boolean
  /** Shown on the console's form (the less common settings stay on the CLI). */
  readonly inConsole: boolean
}

/** A setting refused, naming its field so that each caller shows it where the value was given. */
export interface SettingsRefusal {
  readonly field: string
  readonly message: string
}

/** What was given, by field name; empty strings count as not given. */
export type SettingsInput = Readonly<Record<string, string | undefined>>

/**
 * What a provider's settings are stored as (one generic table, ProviderAccounts): the API base and the
 * account id are shown (`providers show`, the console); everything else is sealed.
 */
export interface StoredSettings {
  readonly apiBase: string
  readonly accountId: string | null
  readonly sealed: Readonly<Record<string, unknown>>
}

/**
 * What a provider's folder implements of the core's provider port (Providers.ProviderClient): how to send,
 * how to list what may already have been sent, how to read an action's status again. `defineProvider`
 * adds what is the same for every real provider: sends are not idempotent (the dispatcher journals them
 * and reconciles before any resend), and an action is looked at again every PARLEY_PROVIDER_RECHECK_MS.
 */
export type ProviderClient = Omit<Providers.ProviderClient, "idempotent" | "lookAgainMs" | "sendAll">
export type Recheck = Providers.Recheck

/** What a client is made with besides the settings. */
export interface ClientContext {
  readonly config: ServerSettings
  readonly orgId: string
}

/** What `providers show` and the console tell the administrator to do at the provider. */
export interface SetupContext {
  /** PARLEY_PUBLIC_URL, or the server's own address. */
  readonly publicBase: string
  readonly orgId: string
}

/** A provider as its folder describes it; `defineProvider` turns it into the registry's `Provider`. */
export interface ProviderDefinition<S, R> {
  /** `--kind <name>`, the metrics label, the journal's provider column. */
  readonly name: string
  /** The name as people write it, for messages and the console. */
  readonly label: string
  readonly kind: ServedKind
  /** What it carries, in a sentence's middle: "texts and WhatsApp". */
  readonly serves: string
  readonly defaultApiBase: string
  readonly fields: ReadonlyArray<SettingField>
  /** Validates what was given (the API base already checked, defaulted and trimmed by the caller). */
  readonly check: (input: SettingsInput, apiBase: string) => Either.Either<S, SettingsRefusal>
  readonly store: (settings: S) => StoredSettings
  /** Reads stored settings back; a row that does not decode is a defect (secrets are checked when set). */
  readonly read: (stored: StoredSettings) => S
  readonly client: (settings: S, context: ClientContext) => Effect.Effect<
    ProviderClient,
    StorageError,
    Organisations.Organisations
  >
  readonly routes: Effect.Effect<ReadonlyArray<PlainRoute>, never, R>
  /** Lines `providers show` prints for an organisation using it (a webhook URL to paste). */
  readonly setup?: (context: SetupContext) => ReadonlyArray<string>
}

/** A registered provider, its settings type hidden behind what it stores. */
export interface Provider<R = unknown>
  extends Pick<ProviderDefinition<unknown, R>, "name" | "label" | "kind" | "serves" | "defaultApiBase" | "fields">
{
  readonly check: (input: SettingsInput, apiBase: string) => Either.Either<StoredSettings, SettingsRefusal>
  readonly client: (stored: StoredSettings, context: ClientContext) => Effect.Effect<
    Providers.ProviderClient,
    StorageError,
    Organisations.Organisations
  >
  readonly routes: Effect.Effect<ReadonlyArray<PlainRoute>, never, R>
  readonly setup: (context: SetupContext) => ReadonlyArray<string>
}

export const defineProvider = <S, R>(definition: ProviderDefinition<S, R>): Provider<R> => ({
  name: definition.name,
  label: definition.label,
  kind: definition.kind,
  serves: definition.serves,
  defaultApiBase: definition.defaultApiBase,
  fields: definition.fields,
  check: (input, apiBase) => Either.map(definition.check(input, apiBase), definition.store),
  client: (stored, context) =>
    Effect.map(definition.client(definition.read(stored), context), (client): Providers.ProviderClient => ({
      ...client,
      idempotent: false,
      lookAgainMs: context.config.providerRecheckMs
    })),
  routes: definition.routes,
  setup: definition.setup ?? (() => [])
})
