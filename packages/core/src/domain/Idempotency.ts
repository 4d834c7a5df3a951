/**
 * Idempotent creation, on Stripe's model.
 *
 * The fingerprint of a request is the SHA-256 of its method, path, canonical
 * body and API key. The first request with a key reserves it, runs, and stores
 * its status and body in the same unit of work as what it created; later
 * requests with the same key and fingerprint replay that response. A different
 * payload under the same key is 400 IDEMPOTENCY_KEY_REUSED; a request that
 * arrives while the first is still running is 409 ACTION_PROCESSING.
 *
 * A request that fails releases its reservation, so the key can be retried
 * once the cause (an allowance, a setting) is fixed. A process that dies
 * mid-request leaves a reservation that lapses after LOCK_MS. Records are kept
 * at least 24 hours, and 24 hours past a scheduled action's time.
 */
import { Clock, Context, Effect, Exit, Layer, Schema } from "effect"
import { ActionProcessing, IdempotencyKeyReused } from "../contract/Errors.js"
import { IdempotencyStore } from "../ports/IdempotencyStore.js"
import type { StorageError } from "../ports/StorageError.js"
import { UnitOfWork } from "../ports/UnitOfWork.js"
import { canonicalJson } from "./Canonical.js"
import { sha256Hex } from "./Crypto.js"

export const RETENTION_MS = 24 * 60 * 60 * 1000
export const LOCK_MS = 60 * 1000

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
}

export class Idempotency extends Context.Tag("@parley/core/Idempotency")<Idempotency, IdempotencyService>() {}

const reused = () =>
  new IdempotencyKeyReused({
    message: "This Idempotency-Key was already used with a different request; use a new key for a changed payload."
  })

export const layer: Layer.Layer<Idempotency, never, IdempotencyStore | UnitOfWork> = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const unitOfWork = yield* UnitOfWork
    return Idempotency.of({
      run: <A, I, E, R>(
        request: IdempotentRequest,
        response: { readonly schema: Schema.Schema<A, I>; readonly status: number },
        create: Effect.Effect<A, E, R>
      ) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const print = fingerprint(request)
          const expiresAt = Math.max(now, request.retainUntil ?? now) + RETENTION_MS
          const reservation = yield* store.reserve({
            keyId: request.keyId,
            idempotencyKey: request.idempotencyKey,
            fingerprint: print,
            now,
            lockedUntil: now + LOCK_MS,
            expiresAt
          })
          switch (reservation._tag) {
            case "Completed": {
              if (reservation.fingerprint !== print) return yield* reused()
              const value = yield* Schema.decode(storedAs(response.schema))(reservation.response.body).pipe(
                Effect.orDie
              )
              return { value, replayed: true }
            }
            case "InFlight": {
              if (reservation.fingerprint !== print) return yield* reused()
              return yield* new ActionProcessing({
                message: "A request with this Idempotency-Key is still being processed; retry it unchanged shortly."
              })
            }
            case "Reserved": {
              const encode = Schema.encode(storedAs(response.schema))
              const value = yield* unitOfWork.atomically(
                Effect.tap(create, (value) =>
                  Effect.flatMap(
                    Effect.orDie(encode(value)),
                    (body) => store.complete(request.keyId, request.idempotencyKey, { status: response.status, body }, expiresAt)
                  ))
              ).pipe(
                Effect.onExit((exit) =>
                  Exit.isSuccess(exit)
                    ? Effect.void
                    : Effect.ignore(store.release(request.keyId, request.idempotencyKey))
                )
              )
              return { value, replayed: false }
            }
          }
        }).pipe(Effect.withSpan("Idempotency.run", { captureStackTrace: false }))
    })
  })
)
