/**
 * The settings cache on the embedded SQLite store (the port and its freshness
 * rule: store/SettingsCache.ts): entries kept per settings version, the
 * version read only when the WAL index shows a commit since the last look.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { SettingsCache, type SettingsCacheService } from "../SettingsCache.js"
import { SqliteHandle } from "./SqliteDriver.js"
import * as WalCommitProbe from "./WalCommitProbe.js"

/** Entries kept at most; past it the cache starts over (keys are per API key and per organisation). */
const MAX_ENTRIES = 10_000

export const layer: Layer.Layer<SettingsCache, never, SqliteHandle> = Layer.scoped(
  SettingsCache,
  Effect.flatMap(SqliteHandle, (handle) =>
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => WalCommitProbe.open(handle.db.name)),
        // Not while the connection is open (it is, here: this layer is released before the connection): POSIX
        // locks belong to the process, so closing any descriptor of the -shm file drops every lock SQLite holds
        // on it, and other processes then reset the WAL index under this one — its later commits went unseen by
        // them and the file ended "malformed" (sqlite-wal-readers.test.ts). The descriptor closes with the process.
        (probe) => Effect.sync(() => (handle.db.open ? undefined : probe.close()))
      ),
      (probe) => cache(handle, probe)
    ))
)

const cache = (handle: SqliteHandle["Type"], probe: WalCommitProbe.WalCommitProbe): SettingsCacheService => {
  const db = handle.db
  // Through `prepared`, so that the statement guards count the version reads too.
  const versionStatement = handle.prepared("SELECT value FROM settings_version WHERE id = 1")
  const version = (): unknown => (versionStatement.get() as { readonly value: unknown } | undefined)?.value
  const entries = new Map<string, unknown>()
  let seen: unknown = undefined
  /**
   * The current version: read only when something was committed since the last look, which is accepted
   * only once the version has been read (a failed read leaves the next look to read it again).
   */
  const current = (): unknown => {
    const accept = probe.changes()
    if (accept === null) return seen
    const now = version()
    accept()
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
  /**
   * While a transaction holds the connection. Another fiber's (between two of its statements): a read there
   * sees that transaction's snapshot, which may predate a commit made since (by the CLI, say), so the value
   * is loaded through the SqlClient, which waits for the transaction to end. This fiber's own: the cache
   * serves it as usual if the transaction sees the version the entries were kept under — then it has changed
   * no settings, and what it loads is committed state; otherwise (it changed some, and may yet roll back) the
   * value is loaded within it and not kept. A transaction that has written nothing yet, begun after the
   * last look (every look is made outside a transaction) with nothing committed since, sees exactly that
   * version without reading it: the creation of a message looks its number up so, first in its transaction.
   */
  const inTransaction = <A, B, E, R>(
    key: string,
    load: Effect.Effect<A, E, R>,
    hit: (entry: B) => A,
    kept: (value: A) => B | undefined
  ) =>
    Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (own) => {
      if (Option.isNone(own)) return load
      let sameVersion: boolean
      try {
        sameVersion = (!handle.writtenInTransaction() && !probe.peek()) || version() === seen
      } catch {
        return load
      }
      if (!sameVersion) return load
      return entries.has(key) ? Effect.succeed(hit(entries.get(key) as B)) : loadAndKeep(key, load, kept, seen)
    })
  const loadAndKeep = <A, B, E, R>(key: string, load: Effect.Effect<A, E, R>, kept: (value: A) => B | undefined, at: unknown) =>
    Effect.tap(load, (value) =>
      Effect.sync(() => {
        const entry = kept(value)
        if (entry !== undefined) remember(key, entry, at)
      }))
  /** The entry for `key`, or what `load` gives; `kept` says what of a loaded value to remember (nothing: undefined). */
  const lookup = <A, B, E, R>(key: string, load: Effect.Effect<A, E, R>, hit: (entry: B) => A, kept: (value: A) => B | undefined) =>
    Effect.suspend(() => {
      if (db.inTransaction) return inTransaction(key, load, hit, kept)
      let at: unknown
      try {
        at = current()
      } catch {
        // The version could not be read (the database busy or failing): load through the client, keep nothing.
        return load
      }
      return entries.has(key) ? Effect.succeed(hit(entries.get(key) as B)) : loadAndKeep(key, load, kept, at)
    })
  return {
    cachedValue: <A, E, R>(key: string, load: Effect.Effect<A, E, R>) =>
      lookup<A, A, E, R>(key, load, (entry) => entry, (value) => value),
    cached: <A, E, R>(key: string, load: Effect.Effect<Option.Option<A>, E, R>) =>
      lookup<Option.Option<A>, A, E, R>(key, load, Option.some, Option.getOrUndefined)
  }
}
