/**
 * Port: idempotency records, one per (API key, Idempotency-Key). A store
 * decides a race between identical requests in one of two ways (`exclusion`),
 * both resting on the record's unique key:
 *
 * - "reservation": `reserve` commits a claim before the work runs and
 *   `complete` fills in the response inside the work's transaction; a second
 *   request meanwhile is told the first is in flight. For stores whose write
 *   transactions run concurrently (Postgres, several replicas): the claim is
 *   what keeps the second request from running the work as well.
 * - "record": `find` first, then the work and `record` in one transaction. For
 *   stores that run write transactions one at a time (the embedded SQLite
 *   store: one connection, one writer), where a claim committed on its own
 *   would only cost a second commit per creation. A request that got in
 *   between makes `record` refuse, and the work is rolled back.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { StorageError } from "./StorageError.js"

export interface StoredResponse {
  readonly status: number
  /** The encoded JSON body of the first response. */
  readonly body: string
}

export interface ReserveRequest {
  readonly keyId: string
  readonly idempotencyKey: string
  readonly fingerprint: string
  readonly now: number
  /** Until when this reservation stays in flight; past it, a crashed request's reservation can be taken over. */
  readonly lockedUntil: number
  readonly expiresAt: number
}

export type Reservation =
  | { readonly _tag: "Reserved" }
  | { readonly _tag: "InFlight"; readonly fingerprint: string }
  | { readonly _tag: "Completed"; readonly fingerprint: string; readonly response: StoredResponse }

/** What holds a key that cannot be taken: a request in flight, or a completed one and its response. */
export type Holder = Exclude<Reservation, { readonly _tag: "Reserved" }>

export type Exclusion = "reservation" | "record"

interface Retention {
  /** Delete records whose retention has passed; returns how many. */
  readonly purgeExpired: (now: number) => Effect.Effect<number, StorageError>
}

/** A store whose writers run concurrently: a committed claim before the work. */
export interface ReservingStore extends Retention {
  readonly exclusion: "reservation"
  readonly reserve: (request: ReserveRequest) => Effect.Effect<Reservation, StorageError>
  readonly complete: (
    keyId: string,
    idempotencyKey: string,
    response: StoredResponse,
    expiresAt: number
  ) => Effect.Effect<void, StorageError>
  /** Drop an in-flight reservation whose request failed, so the key can be used again. */
  readonly release: (keyId: string, idempotencyKey: string) => Effect.Effect<void, StorageError>
}

/** A store that runs write transactions one at a time: the record written with the work. */
export interface RecordingStore extends Retention {
  readonly exclusion: "record"
  /** The live record under the key, if any: an expired record or a lapsed reservation counts as none. */
  readonly find: (keyId: string, idempotencyKey: string, now: number) => Effect.Effect<Option.Option<Holder>, StorageError>
  /**
   * Writes the completed record, inside the work's transaction. False when a live record holds the key
   * already (a request that got in between, or a reservation left by a store version that reserved): the
   * caller rolls its work back.
   */
  readonly record: (request: ReserveRequest, response: StoredResponse) => Effect.Effect<boolean, StorageError>
}

export type IdempotencyStoreService = ReservingStore | RecordingStore

export class IdempotencyStore extends Context.Tag("@parley/core/ports/IdempotencyStore")<
  IdempotencyStore,
  IdempotencyStoreService
>() {}

interface MemoryRecord {
  readonly fingerprint: string
  readonly lockedUntil: number
  readonly expiresAt: number
  readonly response: StoredResponse | null
}

const live = (existing: MemoryRecord | undefined, now: number): Holder | undefined =>
  existing === undefined || existing.expiresAt <= now || (existing.response === null && existing.lockedUntil <= now)
    ? undefined
    : existing.response === null
    ? { _tag: "InFlight", fingerprint: existing.fingerprint }
    : { _tag: "Completed", fingerprint: existing.fingerprint, response: existing.response }

/** The records in memory, deciding races by either exclusion (the core's tests run both). */
export const makeMemory = (exclusion: Exclusion): Layer.Layer<IdempotencyStore> => Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const records = yield* Ref.make(new Map<string, MemoryRecord>())
    const keyOf = (keyId: string, key: string) => `${keyId}\u0000${key}`
    /** Writes the record unless a live one holds the key; answers what holds it, if anything. */
    const claim = (request: ReserveRequest, response: StoredResponse | null) =>
      Ref.modify(records, (m): [Holder | undefined, Map<string, MemoryRecord>] => {
        const id = keyOf(request.keyId, request.idempotencyKey)
        const held = live(m.get(id), request.now)
        if (held !== undefined) return [held, m]
        const record: MemoryRecord = {
          fingerprint: request.fingerprint,
          lockedUntil: request.lockedUntil,
          expiresAt: request.expiresAt,
          response
        }
        return [undefined, new Map(m).set(id, record)]
      })
    const purgeExpired = (now: number) =>
      Ref.modify(records, (m): [number, Map<string, MemoryRecord>] => {
        const next = new Map([...m].filter(([, r]) => r.expiresAt > now))
        return [m.size - next.size, next]
      })
    if (exclusion === "record") {
      return IdempotencyStore.of({
        exclusion,
        find: (keyId, key, now) => Effect.map(Ref.get(records), (m) => Option.fromNullable(live(m.get(keyOf(keyId, key)), now))),
        record: (request, response) => Effect.map(claim(request, response), (held) => held === undefined),
        purgeExpired
      })
    }
    return IdempotencyStore.of({
      exclusion,
      reserve: (request) => Effect.map(claim(request, null), (held): Reservation => held ?? { _tag: "Reserved" }),
      complete: (keyId, key, response, expiresAt) =>
        Ref.update(records, (m) => {
          const id = keyOf(keyId, key)
          const existing = m.get(id)
          return existing === undefined ? m : new Map(m).set(id, { ...existing, response, expiresAt })
        }),
      release: (keyId, key) =>
        Ref.update(records, (m) => {
          const id = keyOf(keyId, key)
          const existing = m.get(id)
          if (existing === undefined || existing.response !== null) return m
          const next = new Map(m)
          next.delete(id)
          return next
        }),
      purgeExpired
    })
  })
)

/** The core's default: the memory unit of work runs nothing one at a time, so a claim comes first. */
export const layerMemory: Layer.Layer<IdempotencyStore> = makeMemory("reservation")
