/**
 * What every request reads and almost nothing writes — API keys with their
 * organisation and CRM connection, an organisation's numbers — served from
 * memory on the embedded SQLite store, and exactly as fresh as the database.
 *
 * Freshness: triggers (migration 0008) add one to `settings_version` in the
 * same transaction as any change to those tables, whoever makes it — this
 * process, the CLI in another process, a test's admin. Every read first asks
 * the WAL index whether anything at all was committed since it last looked
 * (WalCommitProbe: one `pread`, no lock); only then does it read the version
 * (one indexed single-row read, a read transaction) and drop everything on a
 * change, so a revoked key is refused by the very next request
 * (store/sqlite/SqliteSettingsCache.ts).
 *
 * On Postgres nothing is cached: replicas would each need their own
 * invalidation (LISTEN/NOTIFY), and there the database is a network away anyway.
 */
import { Context, type Effect, Layer, type Option } from "effect"

export interface SettingsCacheService {
  /** The value for `key`, loaded once per settings version; a None is not kept (unknown keys are looked up each time). */
  readonly cached: <A, E, R>(
    key: string,
    load: Effect.Effect<Option.Option<A>, E, R>
  ) => Effect.Effect<Option.Option<A>, E, R>
  /** The same for a value that is always there (a list, possibly empty). */
  readonly cachedValue: <A, E, R>(key: string, load: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class SettingsCache extends Context.Tag("@parley/server/SettingsCache")<SettingsCache, SettingsCacheService>() {}

/** Every read goes to the database (Postgres: see above). */
export const uncached: Layer.Layer<SettingsCache> = Layer.succeed(SettingsCache, {
  cached: (_key, load) => load,
  cachedValue: (_key, load) => load
})
