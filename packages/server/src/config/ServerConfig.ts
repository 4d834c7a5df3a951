/**
 * The one place that reads configuration. Parley is configured from the
 * environment only:
 * - PORT (default 8787)
 * - HOST (unset: every interface, for a server behind a proxy or in a
 *   container; `parley serve --demo`, which `pnpm start` runs, binds 127.0.0.1
 *   unless HOST is set, since its demo keys are printed for anyone to paste)
 * - PARLEY_DATA_DIR (default ./.parley; holds the SQLite file parley.db)
 * - PARLEY_RATE_LIMIT_PER_MINUTE (default 60, per API key)
 * - LOG_LEVEL (default info: debug, info, warn, error, none; any case)
 * - PARLEY_MAX_BODY_BYTES (default 65536)
 * - PARLEY_SIM_STEP_MS (default 1000): how long each step of the simulated
 *   carrier's and AI-call provider's lifecycle takes
 * - PARLEY_DISPATCH_POLL_MS (default 50): how often an idle dispatcher looks for due work
 * - PARLEY_WEBHOOK_RETRY_SCALE (default 1): multiplies the event retry schedule
 *   (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); tests shorten it
 * - PARLEY_WEBHOOK_ALLOWED_NETWORKS (unset): comma-separated CIDRs of private
 *   networks event deliveries may reach (loopback, 10.0.0.0/8…); public
 *   addresses are always allowed, link-local and metadata addresses never
 * - PARLEY_PROVIDER_ALLOWED_NETWORKS (unset): the same, for the connections to
 *   providers' APIs (every provider's API and content bases: a local fake, a
 *   proxy on a private network); decided on the address each connection reaches
 * - PARLEY_TRUSTED_PROXIES (unset): comma-separated CIDRs of reverse proxies
 *   whose X-Forwarded-For / Forwarded headers name the client (for the
 *   console's sign-in throttling); unset, no such header is believed
 * - PARLEY_CARRIER_AUTH_TOKEN (unset): when set, POST /carrier/inbound must carry
 *   a valid carrier signature made with it (the inbound route's provider's)
 * - PARLEY_INBOUND_UNSIGNED (refuse): `accept` takes inbound messages without a
 *   signature to numbers of organisations that have no carrier account when
 *   PARLEY_CARRIER_AUTH_TOKEN is unset (a demo, a local test); by default they
 *   are refused, since a forged inbound message opens a WhatsApp session
 * - PARLEY_PUBLIC_URL (unset): the server's public base URL, for that signature
 *   (default: http:// + the request's Host); also the base of the console's
 *   sign-in links, and https makes its session cookie Secure
 * - DATABASE_URL (unset): `postgres://…` selects the Postgres store (several
 *   replicas on one database); unset, the embedded SQLite file is the store
 * - PARLEY_DB_POOL_SIZE (default 10): Postgres connections per process
 * - PARLEY_PROVIDER_RECHECK_MS (default 300000): how long after a provider's
 *   last report Parley asks it for an action's status itself (their
 *   callbacks are not retried if Parley was down when they came)
 * - PARLEY_SECRET_KEY (unset): 32 random bytes (base64 or hex) sealing stored
 *   secrets; unset, the key file secret.key in PARLEY_DATA_DIR (created 0600)
 * - PARLEY_PREVIOUS_SECRET_KEYS (unset): comma-separated keys of earlier
 *   rotations, read only to reseal what they sealed
 * - each CRM's variables (its client, its accounts server, its concurrency cap)
 *   are read in the CRM's folder (`crm/<name>/<Name>Config.ts`, listed by
 *   crm/Registry.ts), which only its own code uses
 * - PARLEY_METRICS_TOKEN (unset): when set, GET /metrics on the API port, with
 *   `Authorization: Bearer <token>`
 * - PARLEY_METRICS_PORT (unset): when set, GET /metrics without a token on a
 *   listener of its own, on PARLEY_METRICS_HOST (default 127.0.0.1)
 * - OTEL_EXPORTER_OTLP_ENDPOINT (unset; or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT):
 *   when set, traces go there over OTLP/HTTP (protobuf), as service
 *   OTEL_SERVICE_NAME (default parley); the exporter itself reads the other
 *   OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression)
 */
import { Idempotency, WebhookAddresses } from "@parley/core/internal"
import { LEASE_MS } from "../dispatch/Lease.js"
import { parseTrustedProxies, type TrustedProxies } from "../http/ClientAddress.js"
import { Config, ConfigError, Context, Effect, Either, Layer, LogLevel, Option, Redacted } from "effect"

export interface ServerSettings {
  readonly port: number
  /** The address to listen on; none: every interface (`serve --demo` picks loopback). */
  readonly host: Option.Option<string>
  readonly dataDir: string
  readonly rateLimitPerMinute: number
  readonly logLevel: LogLevel.LogLevel
  readonly maxBodyBytes: number
  readonly simStepMs: number
  readonly dispatchPollMs: number
  readonly webhookRetryScale: number
  readonly webhookAllowedNetworks: WebhookAddresses.AllowedNetworks
  /** The same for the connections to providers' APIs (an organisation's API bases). */
  readonly providerAllowedNetworks: WebhookAddresses.AllowedNetworks
  /** The reverse proxies whose X-Forwarded-For / Forwarded name the client (none: no header is believed). */
  readonly trustedProxies: TrustedProxies
  readonly carrierAuthToken: Option.Option<Redacted.Redacted<string>>
  /** Whether unsigned inbound messages are taken when there is no token to check them with. */
  readonly inboundUnsigned: "refuse" | "accept"
  readonly publicUrl: Option.Option<string>
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dbPoolSize: number
  readonly providerRecheckMs: number
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  readonly previousSecretKeys: ReadonlyArray<Redacted.Redacted<string>>
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: string
  /** The OTLP/HTTP traces URL (`…/v1/traces`), when tracing is on. */
  readonly otlpTracesUrl: Option.Option<string>
  readonly serviceName: string
  /** How long the dispatcher's claim on an action holds it (renewed while its work lasts): a crash delays it by at most this. */
  readonly dispatchLeaseMs: number
  /** How long an Idempotency-Key stays reserved by a request whose process died (core Idempotency.LOCK_MS). */
  readonly idempotencyLockMs: number
}

const logLevels: Readonly<Record<string, LogLevel.LogLevel>> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  none: LogLevel.None
}

// Case-insensitive: people write LOG_LEVEL=Error or ERROR as often as error, and a
// server that refuses to start over the case of a log level helps nobody.
const logLevel = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((raw) => {
    const level = logLevels[raw.trim().toLowerCase()]
    return level === undefined
      ? Either.left(ConfigError.InvalidData(["LOG_LEVEL"], `Expected one of (debug, info, warn, error, none), in any case, but received ${JSON.stringify(raw)}`))
      : Either.right(level)
  })
)

export const settingsConfig: Config.Config<ServerSettings> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8787)),
  host: Config.option(Config.string("HOST").pipe(
    Config.mapOrFail((raw) =>
      raw.trim() === ""
        ? Either.left(ConfigError.InvalidData(["HOST"], "must be an address or host name to listen on, such as 127.0.0.1, :: or 0.0.0.0"))
        : Either.right(raw.trim())
    )
  )),
  dataDir: Config.string("PARLEY_DATA_DIR").pipe(Config.withDefault("./.parley")),
  rateLimitPerMinute: Config.integer("PARLEY_RATE_LIMIT_PER_MINUTE").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(60)
  ),
  logLevel,
  maxBodyBytes: Config.integer("PARLEY_MAX_BODY_BYTES").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(64 * 1024)
  ),
  simStepMs: Config.integer("PARLEY_SIM_STEP_MS").pipe(
    Config.validate({ message: "must be zero or more", validation: (n) => n >= 0 }),
    Config.withDefault(1000)
  ),
  dispatchPollMs: Config.integer("PARLEY_DISPATCH_POLL_MS").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(50)
  ),
  webhookRetryScale: Config.number("PARLEY_WEBHOOK_RETRY_SCALE").pipe(
    Config.validate({ message: "must be a positive number", validation: (n) => n > 0 }),
    Config.withDefault(1)
  ),
  webhookAllowedNetworks: Config.string("PARLEY_WEBHOOK_ALLOWED_NETWORKS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) => {
      const parsed = WebhookAddresses.parseAllowedNetworks(text)
      return Either.isLeft(parsed)
        ? Either.left(ConfigError.InvalidData(["PARLEY_WEBHOOK_ALLOWED_NETWORKS"], parsed.left))
        : Either.right(parsed.right)
    })
  ),
  providerAllowedNetworks: Config.string("PARLEY_PROVIDER_ALLOWED_NETWORKS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) => {
      const parsed = WebhookAddresses.parseAllowedNetworks(text)
      return Either.isLeft(parsed)
        ? Either.left(ConfigError.InvalidData(["PARLEY_PROVIDER_ALLOWED_NETWORKS"], parsed.left))
        : Either.right(parsed.right)
    })
  ),
  trustedProxies: Config.string("PARLEY_TRUSTED_PROXIES").pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) => {
      const parsed = parseTrustedProxies(text)
      return typeof parsed === "string"
        ? Either.left(ConfigError.InvalidData(["PARLEY_TRUSTED_PROXIES"], parsed))
        : Either.right(parsed)
    })
  ),
  carrierAuthToken: Config.option(Config.redacted("PARLEY_CARRIER_AUTH_TOKEN")),
  inboundUnsigned: Config.literal("refuse", "accept")("PARLEY_INBOUND_UNSIGNED").pipe(Config.withDefault("refuse" as const)),
  publicUrl: Config.option(Config.string("PARLEY_PUBLIC_URL")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL").pipe(
    Config.validate({
      message: "must be a postgres:// or postgresql:// URL",
      validation: (url) => /^postgres(ql)?:\/\//.test(Redacted.value(url))
    })
  )),
  dbPoolSize: Config.integer("PARLEY_DB_POOL_SIZE").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(10)
  ),
  providerRecheckMs: Config.integer("PARLEY_PROVIDER_RECHECK_MS").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(300_000)
  ),
  secretKey: Config.option(Config.redacted("PARLEY_SECRET_KEY")),
  previousSecretKeys: Config.string("PARLEY_PREVIOUS_SECRET_KEYS").pipe(
    Config.withDefault(""),
    Config.map((list) => list.split(",").map((k) => k.trim()).filter((k) => k !== "").map((k) => Redacted.make(k)))
  ),
  metricsToken: Config.option(Config.redacted("PARLEY_METRICS_TOKEN").pipe(
    Config.validate({ message: "must be at least 16 characters", validation: (t) => Redacted.value(t).length >= 16 })
  )),
  metricsPort: Config.option(Config.port("PARLEY_METRICS_PORT")),
  metricsHost: Config.string("PARLEY_METRICS_HOST").pipe(Config.withDefault("127.0.0.1")),
  // The OpenTelemetry specification's variables: the signal's own URL as given, or the base URL + /v1/traces.
  otlpTracesUrl: Config.all({
    traces: Config.option(Config.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
    base: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"))
  }).pipe(Config.map(({ base, traces }) =>
    Option.orElse(
      Option.filter(traces, (url) => url.trim() !== ""),
      () => Option.map(Option.filter(base, (url) => url.trim() !== ""), (url) => `${url.replace(/\/+$/, "")}/v1/traces`)
    )
  )),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("parley")),
  dispatchLeaseMs: Config.integer("PARLEY_DISPATCH_LEASE_MS").pipe(
    Config.validate({ message: "must be an integer of at least 1000", validation: (n) => n >= 1000 }),
    Config.withDefault(LEASE_MS)
  ),
  idempotencyLockMs: Config.integer("PARLEY_IDEMPOTENCY_LOCK_MS").pipe(
    Config.validate({ message: "must be an integer of at least 1000", validation: (n) => n >= 1000 }),
    Config.withDefault(Idempotency.LOCK_MS)
  )
})

export class ServerConfig extends Context.Tag("@parley/server/ServerConfig")<ServerConfig, ServerSettings>() {
  static readonly layer = Layer.effect(ServerConfig, Effect.orDie(settingsConfig))
}
