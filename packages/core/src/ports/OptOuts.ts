/**
 * Port: each organisation's opt-out list (the current entry per recipient number) and its history (every
 * entry added or removed, kept). Writes happen inside the caller's unit of work where one is open, so an
 * inbound STOP and its opt-out commit together.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { OptOutChannel, OptOutSource } from "../contract/OptOuts.js"
import type { StorageError } from "./StorageError.js"

export interface OptOutEntry {
  readonly orgId: string
  readonly phone: string
  readonly channels: ReadonlyArray<OptOutChannel>
  readonly source: OptOutSource
  readonly reason: string | null
  /** The inbound message, action, key or administrator that caused it. */
  readonly cause: string | null
  readonly createdAt: string
}

/** An entry as the contract shows it (GET /opt-outs/{phone}, opt-out events, the CLI): without its organisation. */
export const publicOptOut = (entry: OptOutEntry) => ({
  phone: entry.phone,
  channels: entry.channels,
  source: entry.source,
  reason: entry.reason,
  cause: entry.cause,
  createdAt: entry.createdAt
})

/** One line of a number's history: an entry recorded, or removed (opted back in). */
export interface OptOutChange {
  readonly orgId: string
  readonly phone: string
  readonly change: "added" | "removed"
  readonly channels: ReadonlyArray<OptOutChannel>
  readonly source: OptOutSource
  readonly reason: string | null
  readonly cause: string | null
  readonly at: string
}

export interface OptOutPageRequest {
  readonly orgId: string
  readonly phone?: string | undefined
  /** Entries created strictly before this position (`createdAt`, then phone), newest first. */
  readonly before?: { readonly createdAt: string; readonly phone: string } | undefined
  readonly limit: number
}

export interface OptOutsService {
  readonly find: (orgId: string, phone: string) => Effect.Effect<Option.Option<OptOutEntry>, StorageError>
  /** The entries of several numbers of one organisation, by phone (for a dispatcher's batch). */
  readonly findMany: (
    orgId: string,
    phones: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, OptOutEntry>, StorageError>
  /** Records the entry (replacing the number's current one) and its history line. */
  readonly record: (entry: OptOutEntry) => Effect.Effect<void, StorageError>
  /** Removes the number's entry and writes the history line; None when it had none. */
  readonly remove: (
    orgId: string,
    phone: string,
    by: { readonly source: OptOutSource; readonly cause: string | null; readonly at: string }
  ) => Effect.Effect<Option.Option<OptOutEntry>, StorageError>
  readonly page: (request: OptOutPageRequest) => Effect.Effect<ReadonlyArray<OptOutEntry>, StorageError>
  /** A number's changes, newest first. */
  readonly history: (orgId: string, phone: string) => Effect.Effect<ReadonlyArray<OptOutChange>, StorageError>
}

export class OptOuts extends Context.Tag("@parley/core/ports/OptOuts")<OptOuts, OptOutsService>() {}

const keyOf = (orgId: string, phone: string) => `${orgId}\u0000${phone}`

/** Newest first; the same instant by phone, as the SQL layers order them. */
export const newestFirst = (a: OptOutEntry, b: OptOutEntry): number =>
  b.createdAt.localeCompare(a.createdAt) || b.phone.localeCompare(a.phone)

export const layerMemory: Layer.Layer<OptOuts> = Layer.effect(
  OptOuts,
  Effect.gen(function*() {
    const entries = yield* Ref.make(new Map<string, OptOutEntry>())
    const changes = yield* Ref.make<ReadonlyArray<OptOutChange>>([])
    const log = (entry: OptOutEntry, change: "added" | "removed", at: string, by?: Pick<OptOutEntry, "source" | "cause">) =>
      Ref.update(changes, (all) => [
        { orgId: entry.orgId, phone: entry.phone, change, channels: entry.channels, source: by?.source ?? entry.source,
          reason: change === "added" ? entry.reason : null, cause: by?.cause ?? entry.cause, at },
        ...all
      ])
    return OptOuts.of({
      find: (orgId, phone) => Effect.map(Ref.get(entries), (m) => Option.fromNullable(m.get(keyOf(orgId, phone)))),
      findMany: (orgId, phones) =>
        Effect.map(Ref.get(entries), (m) =>
          new Map(phones.flatMap((phone) => {
            const entry = m.get(keyOf(orgId, phone))
            return entry === undefined ? [] : [[phone, entry] as const]
          }))),
      record: (entry) =>
        Effect.zipRight(
          Ref.update(entries, (m) => new Map(m).set(keyOf(entry.orgId, entry.phone), entry)),
          log(entry, "added", entry.createdAt)
        ),
      remove: (orgId, phone, by) =>
        Effect.flatMap(
          Ref.modify(entries, (m): [OptOutEntry | undefined, Map<string, OptOutEntry>] => {
            const current = m.get(keyOf(orgId, phone))
            if (current === undefined) return [undefined, m]
            const next = new Map(m)
            next.delete(keyOf(orgId, phone))
            return [current, next]
          }),
          (removed) =>
            removed === undefined
              ? Effect.succeed(Option.none<OptOutEntry>())
              : Effect.as(log(removed, "removed", by.at, by), Option.some(removed))
        ),
      page: ({ orgId, phone, before, limit }) =>
        Effect.map(Ref.get(entries), (m) =>
          [...m.values()]
            .filter((e) => e.orgId === orgId && (phone === undefined || e.phone === phone))
            .filter((e) => before === undefined || e.createdAt < before.createdAt || (e.createdAt === before.createdAt && e.phone < before.phone))
            .sort(newestFirst)
            .slice(0, limit)),
      history: (orgId, phone) => Effect.map(Ref.get(changes), (all) => all.filter((c) => c.orgId === orgId && c.phone === phone))
    })
  })
)
