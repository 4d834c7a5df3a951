/**
 * What every request reads and almost nothing writes — API keys with their
 * organisation and CRM connection, an organisation's numbers — served from
 * memory on the embedded SQLite store, and exactly as fresh as the database.
 *
 * Freshness: triggers (migration 0008) add one to `settings_version` in the
 * same transaction as any change to those tables, whoever makes it — this
 * process, the CLI in another process, a test's admin. Every read compares
 * the version (one indexed single-row read on the connection itself, a few
 * microseconds) and drops everything on a change, so a revoked key is refused
 * by the very next request. Inside a transaction the version read sees the
 * transaction's own changes (a write on this connection always reads it again);
 * one still uncommitted in another fiber's transaction can only make it drop
 * entries early, since what it loads waits for that transaction to end.
 *
 * On Postgres nothing is cached: replicas would each need their own
 * invalidation (LISTEN/NOTIFY), and there the database is a network away anyway.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqliteHandle } from "./SqliteDriver.js"

/** Entries kept at most; past it the cache starts over (keys are per API key and per organisation). */
const MAX_ENTRIES = 10_000

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

const uncached: SettingsCacheService = { cached: (_key, load) => load, cachedValue: (_key, load) => load }

export const layer: Layer.Layer<SettingsCache> = Layer.effect(
  SettingsCache,
  Effect.map(Effect.serviceOption(SqliteHandle), (handle) => {
    if (Option.isNone(handle)) return uncached
    const { db } = handle.value
    const version = db.prepare("SELECT value FROM settings_version WHERE id = 1").pluck()
    const entries = new Map<string, unknown>()
    let seen: unknown = undefined
    /** The current version. */
    const current = (): unknown => {
      const now = version.get()
      if (now !== seen) {
        entries.clear()
        seen = now
      }
      return now
    }
    const remember = (key: string, value: unknown, at: unknown) => {
      // Loaded under an older version than the one now current: it may be stale, so it is not kept.
      if (at !== seen) return
      if (entries.size >= MAX_ENTRIES) entries.clear()
      entries.set(key, value)
    }
    /** The entry for `key`, or what `load` gives; `kept` says what of a loaded value to remember (nothing: undefined). */
    const lookup = <A, B, E, R>(key: string, load: Effect.Effect<A, E, R>, hit: (entry: B) => A, kept: (value: A) => B | undefined) =>
      Effect.suspend(() => {
        const at = current()
        if (entries.has(key)) return Effect.succeed(hit(entries.get(key) as B))
        return Effect.tap(load, (value) =>
          Effect.sync(() => {
            const entry = kept(value)
            if (entry !== undefined) remember(key, entry, at)
          }))
      })
    return {
      cachedValue: <A, E, R>(key: string, load: Effect.Effect<A, E, R>) =>
        lookup<A, A, E, R>(key, load, (entry) => entry, (value) => value),
      cached: <A, E, R>(key: string, load: Effect.Effect<Option.Option<A>, E, R>) =>
        lookup<Option.Option<A>, A, E, R>(key, load, Option.some, Option.getOrUndefined)
    } satisfies SettingsCacheService
  })
)
