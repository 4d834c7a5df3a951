/**
 * Idempotent creation, on Stripe's model.
 *
 * The fingerprint of a request is the SHA-256 of its method, path, canonical
 * body and API key. The first request with a key runs and stores its status
 * and body in the same unit of work as what it created (after reserving the
 * key, on stores whose writers run concurrently; see IdempotencyStore); later
 * requests with the same key and fingerprint replay that response. A different
 * payload under the same key is 400 IDEMPOTENCY_KEY_REUSED; a request that
 * arrives while the first is still running is 409 ACTION_PROCESSING.
 *
 * A request that fails releases its reservation, so the key can be retried
 * once the cause (an allowance, a setting) is fixed. A process that dies
 * mid-request leaves a reservation that lapses after LOCK_MS (or the host's
 * IdempotencyLock). Records are kept
 * at least 24 hours, and 24 hours past a scheduled action's time.
 */
import { Clock, Context, Data, Effect, Either, Exit, Layer, Option, Schema } from "effect"
import { ActionProcessing, IdempotencyKeyReused } from "../contract/Errors.js"
import { type Holder, IdempotencyStore, type ReserveRequest, type StoredResponse } from "../ports/IdempotencyStore.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { canonicalJson } from "./Canonical.js"
import { sha256Hex } from "./Crypto.js"
import { spanned } from "./Spans.js"

export const RETENTION_MS = 24 * 60 * 60 * 1000
export const LOCK_MS = 60 * 1000

/**
 * How long a reservation holds its key, when the host sets it (the server's PARLEY_IDEMPOTENCY_LOCK_MS);
 * without it, LOCK_MS. A request that outlives its reservation can be taken over by a retry, so it must
 * exceed the longest request: the crash tests shorten it, their killed requests having no live holder.
 */
export class IdempotencyLock extends Context.Tag("@parley/core/IdempotencyLock")<IdempotencyLock, { readonly lockMs: number }>() {}

export interface IdempotentRequest {
  readonly keyId: string
  readonly idempotencyKey: string
  readonly method: string
  readonly path: string
  readonly payload: unknown
  /** Keep the record at least until this instant (epoch ms), e.g. a scheduled action's time. */
  readonly retainUntil?: number | undefined
}

export interface IdempotentResult<A> {
  readonly value: A
  readonly replayed: boolean
}

/**
 * The stored response's codec per response schema, built once: `Schema.parseJson` compiles a new
 * transformation each time it is called, and this runs on every creation.
 */
const codecs = new WeakMap<Schema.Schema.Any, Schema.Schema.Any>()
const storedAs = <A, I>(schema: Schema.Schema<A, I>): Schema.Schema<A, string> => {
  let codec = codecs.get(schema)
  if (codec === undefined) {
    codec = Schema.parseJson(schema)
    codecs.set(schema, codec)
  }
  return codec as Schema.Schema<A, string>
}

export const fingerprint = (request: IdempotentRequest): string =>
  sha256Hex([request.method.toUpperCase(), request.path, request.keyId, canonicalJson(request.payload)].join("\n"))

export interface IdempotencyService {
  readonly run: <A, I, E, R>(
    request: IdempotentRequest,
    response: { readonly schema: Schema.Schema<A, I>; readonly status: number },
    create: Effect.Effect<A, E, R>
  ) => Effect.Effect<
    IdempotentResult<A>,
    E | IdempotencyKeyReused | ActionProcessing | StorageError,
    R
  >
  /**
   * The same in two steps: `prepare` runs once the key is known to be free but outside the unit of work
   * (checks, and calls over the network — a hosted CRM — that must not hold a transaction open), and the
   * effect it returns runs inside it. Whatever `prepare` does must be safe to repeat for the same key: two
   * requests racing on one key may both prepare before one of them records it.
   */
  readonly runPrepared: <A, I, E, R, E2, R2>(
    request: IdempotentRequest,
    response: { readonly schema: Schema.Schema<A, I>; readonly status: number },
    prepare: Effect.Effect<Effect.Effect<A, E, R>, E2, R2>
  ) => Effect.Effect<
    IdempotentResult<A>,
    E | E2 | IdempotencyKeyReused | ActionProcessing | StorageError,
    R | R2
  >
}

export class Idempotency extends Context.Tag("@parley/core/Idempotency")<Idempotency, IdempotencyService>() {}

const reused = () =>
  new IdempotencyKeyReused({
    message: "This Idempotency-Key was already used with a different request; use a new key for a changed payload."
  })

/** Another request recorded the key while this one worked ("record" exclusion): its work is rolled back. */
class KeyTaken extends Data.TaggedError("KeyTaken") {}

const processing = () =>
  new ActionProcessing({
    message: "A request with this Idempotency-Key is still being processed; retry it unchanged shortly."
  })

export const layer: Layer.Layer<Idempotency, never, IdempotencyStore | UnitOfWork> = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const unitOfWork = yield* UnitOfWork
    const lockMs = Option.match(yield* Effect.serviceOption(IdempotencyLock), { onNone: () => LOCK_MS, onSome: (lock) => lock.lockMs })

    /** The answer to a request whose key is held: the stored response, reuse, or still in flight. */
    const answer = <A, I>(held: Holder, print: string, schema: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        if (held.fingerprint !== print) return yield* reused()
        if (held._tag === "InFlight") return yield* processing()
        // Synchronous: the stored answer's schema is plain data (a defect if it ever were not).
        const decoded = Schema.decodeEither(storedAs(schema))(held.response.body)
        if (Either.isLeft(decoded)) return yield* Effect.die(decoded.left)
        return { value: decoded.right, replayed: true }
      })

    const runPrepared = <A, I, E, R, E2, R2>(
      request: IdempotentRequest,
      response: { readonly schema: Schema.Schema<A, I>; readonly status: number },
      prepare: Effect.Effect<Effect.Effect<A, E, R>, E2, R2>
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const print = fingerprint(request)
        const expiresAt = Math.max(now, request.retainUntil ?? now) + RETENTION_MS
        const claim: ReserveRequest = {
          keyId: request.keyId,
          idempotencyKey: request.idempotencyKey,
          fingerprint: print,
          now,
          lockedUntil: now + lockMs,
          expiresAt
        }
        const encode = Schema.encodeEither(storedAs(response.schema))
        const stored = (value: A): Effect.Effect<StoredResponse> => {
          const body = encode(value)
          return Either.isLeft(body) ? Effect.die(body.left) : Effect.succeed({ status: response.status, body: body.right })
        }

        if (store.exclusion === "record") {
          const held = yield* store.find(request.keyId, request.idempotencyKey, now)
          if (Option.isSome(held)) return yield* answer(held.value, print, response.schema)
          const create = yield* prepare
          return yield* unitOfWork.atomically(
            Effect.tap(create, (value) =>
              Effect.flatMap(stored(value), (body) =>
                Effect.flatMap(store.record(claim, body), (recorded) => recorded ? Effect.void : new KeyTaken())))
          ).pipe(
            Effect.map((value) => ({ value, replayed: false })),
            Effect.catchIf(
              (error): error is KeyTaken => error instanceof KeyTaken,
              () =>
                Effect.flatMap(store.find(request.keyId, request.idempotencyKey, now), (winner) =>
                  Option.isSome(winner) ? answer(winner.value, print, response.schema) : processing())
            )
          )
        }

        const reservation = yield* store.reserve(claim)
        if (reservation._tag !== "Reserved") return yield* answer(reservation, print, response.schema)
        const value = yield* Effect.flatMap(prepare, (create) =>
          unitOfWork.atomically(
            Effect.tap(create, (value) =>
              Effect.flatMap(
                stored(value),
                (body) => store.complete(request.keyId, request.idempotencyKey, body, expiresAt)
              ))
          )).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? Effect.void : Effect.ignore(store.release(request.keyId, request.idempotencyKey))
          )
        )
        return { value, replayed: false }
      }).pipe(spanned("Idempotency.run", { captureStackTrace: false }))

    return Idempotency.of({
      run: (request, response, create) => runPrepared(request, response, Effect.succeed(create)),
      runPrepared
    })
  })
)
