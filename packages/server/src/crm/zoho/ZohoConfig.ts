/**
 * Zoho CRM's configuration, read from the environment here (ServerConfig reads the rest):
 * - PARLEY_ZOHO_CLIENT_ID, PARLEY_ZOHO_CLIENT_SECRET (unset): the server-based
 *   client registered in Zoho's API console; needed to connect Zoho CRM
 * - PARLEY_ZOHO_ACCOUNTS_URL (default https://accounts.zoho.com): where the
 *   consent flow starts; when set, also the only accounts server trusted
 *   besides Zoho's documented ones (a regional server, or a local fake)
 * - PARLEY_ZOHO_CONCURRENCY (default 5): Zoho calls in flight at once per Zoho
 *   organisation, shared by every call (creation, the outboxes, `crm setup`) and,
 *   on Postgres, by every replica (ZohoCallSlots)
 * - PARLEY_ZOHO_TEMPLATE_CACHE_MS (default 60000): how long a template list is
 *   served from memory before it is read from Zoho again (tests shorten it)
 */
import { Config, Context, Effect, Layer, type Option, type Redacted } from "effect"

export interface ZohoSettings {
  readonly zohoClientId: Option.Option<string>
  readonly zohoClientSecret: Option.Option<Redacted.Redacted<string>>
  /** Set explicitly (Some) or Zoho's US accounts server by default (None). */
  readonly zohoAccountsUrl: Option.Option<string>
  readonly zohoConcurrency: number
  /** How long a Zoho organisation's template list is served from memory before it is read again. */
  readonly zohoTemplateCacheMs: number
}

export const zohoConfig: Config.Config<ZohoSettings> = Config.all({
  zohoClientId: Config.option(Config.string("PARLEY_ZOHO_CLIENT_ID")),
  zohoClientSecret: Config.option(Config.redacted("PARLEY_ZOHO_CLIENT_SECRET")),
  zohoAccountsUrl: Config.option(Config.string("PARLEY_ZOHO_ACCOUNTS_URL").pipe(
    Config.validate({ message: "must be an http(s) URL", validation: (url) => /^https?:\/\/[^/]+/.test(url) })
  )),
  zohoConcurrency: Config.integer("PARLEY_ZOHO_CONCURRENCY").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(5)
  ),
  zohoTemplateCacheMs: Config.integer("PARLEY_ZOHO_TEMPLATE_CACHE_MS").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(60_000)
  )
})

/** The variables, as `crm/Crm.ts` lists them for the registry. */
export const ZOHO_VARIABLES = [
  { name: "PARLEY_ZOHO_CLIENT_ID", description: "The server-based client registered in Zoho's API console" },
  { name: "PARLEY_ZOHO_CLIENT_SECRET", description: "Its secret" },
  { name: "PARLEY_ZOHO_ACCOUNTS_URL", description: "Where Zoho's consent starts (default https://accounts.zoho.com)" },
  { name: "PARLEY_ZOHO_CONCURRENCY", description: "Zoho calls in flight at once per Zoho organisation (default 5)" },
  { name: "PARLEY_ZOHO_TEMPLATE_CACHE_MS", description: "How long a template list is served from memory (default 60000)" }
] as const

export class ZohoConfig extends Context.Tag("@parley/server/crm/zoho/ZohoConfig")<ZohoConfig, ZohoSettings>() {
  static readonly layer = Layer.effect(ZohoConfig, Effect.orDie(zohoConfig))
}
