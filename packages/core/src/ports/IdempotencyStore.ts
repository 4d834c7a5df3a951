/**
 * Port: idempotency records, one per (API key, Idempotency-Key). `reserve` is
 * the single atomic step that decides a race between identical requests; the
 * SQL layers do it with a unique constraint.
 */
import { Context, Effect, Layer, Ref } from "effect"
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

export interface IdempotencyStoreService {
  readonly reserve: (request: ReserveRequest) => Effect.Effect<Reservation, StorageError>
  readonly complete: (
    keyId: string,
    idempotencyKey: string,
    response: StoredResponse,
    expiresAt: number
  ) => Effect.Effect<void, StorageError>
  /** Drop an in-flight reservation whose request failed, so the key can be used again. */
  readonly release: (keyId: string, idempotencyKey: string) => Effect.Effect<void, StorageError>
  /** Delete records whose retention has passed; returns how many. */
  readonly purgeExpired: (now: number) => Effect.Effect<number, StorageError>
}

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

export const layerMemory: Layer.Layer<IdempotencyStore> = Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const records = yield* Ref.make(new Map<string, MemoryRecord>())
    const keyOf = (keyId: string, key: string) => `${keyId}\u0000${key}`
    return IdempotencyStore.of({
      reserve: (request) =>
        Ref.modify(records, (m): [Reservation, Map<string, MemoryRecord>] => {
          const id = keyOf(request.keyId, request.idempotencyKey)
          const existing = m.get(id)
          const taken = existing !== undefined && existing.expiresAt > request.now &&
            (existing.response !== null || existing.lockedUntil > request.now)
          if (existing !== undefined && taken) {
            return existing.response === null
              ? [{ _tag: "InFlight", fingerprint: existing.fingerprint }, m]
              : [{ _tag: "Completed", fingerprint: existing.fingerprint, response: existing.response }, m]
          }
          const record: MemoryRecord = {
            fingerprint: request.fingerprint,
            lockedUntil: request.lockedUntil,
            expiresAt: request.expiresAt,
            response: null
          }
          return [{ _tag: "Reserved" }, new Map(m).set(id, record)]
        }),
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
      purgeExpired: (now) =>
        Ref.modify(records, (m) => {
          const next = new Map([...m].filter(([, r]) => r.expiresAt > now))
          return [m.size - next.size, next]
        })
    })
  })
)
