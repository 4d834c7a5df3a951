/**
 * What a provider callback may cost before it is known to be genuine. Callback routes are public and
 * their senders unauthenticated until the signature is checked, so a flood of forged callbacks must not
 * slow the API down: each source address and each organisation named in a callback get a token bucket
 * (checked in memory by the request pipeline before the body is even read, for the organisation named in
 * the URL; for one named only in the body, once it is read, still before any database work), the
 * verification keys are looked up
 * through a short-lived cache, and the callbacks' database work runs a few at a time, refusing at once
 * rather than queueing without bound. A refused genuine callback is not lost: Parley rechecks with the
 * provider an action whose reports stopped (PARLEY_PROVIDER_RECHECK_MS).
 *
 * Only a forger's callbacks may leave an address in debt, and the debt refuses only what cannot be
 * genuine: a callback that carries its provider's signature header is still read and verified when its
 * address is past its budget (one bounded body, the cached key, one HMAC, no database work of its own),
 * goes on if it verifies, and is answered 429 if it does not. A provider sharing an address with a forger
 * (a proxy, a NAT) keeps its callbacks taken.
 */
import { Context, Effect, Layer } from "effect"

/** A token bucket's rate (tokens a second) and burst (its size). */
export interface BucketLimit {
  readonly perSecond: number
  readonly burst: number
}

export const SOURCE_LIMIT: BucketLimit = { perSecond: 50, burst: 200 }
/** Tokens an unverifiable callback costs its source in all (one to be looked at, the rest once refused). */
export const UNVERIFIED_COST = 5
export const ORGANISATION_LIMIT: BucketLimit = { perSecond: 100, burst: 500 }
/** Callbacks doing database work at once in this process, and how many may wait for their turn. */
export const CONCURRENT_CALLBACKS = 2
export const WAITING_CALLBACKS = 64
/** Buckets kept at most; past it the idle ones (full again) are forgotten. */
const MAX_BUCKETS = 10_000

interface Bucket {
  tokens: number
  at: number
}

/** Keyed token buckets in memory. */
export class Buckets {
  private readonly buckets = new Map<string, Bucket>()
  constructor(private readonly limit: BucketLimit) {}

  /** Takes a token for `key` at `now` (ms); false when its bucket is empty. */
  take(key: string, now: number): boolean {
    const bucket = this.buckets.get(key) ?? { tokens: this.limit.burst, at: now }
    bucket.tokens = Math.min(this.limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.limit.perSecond)
    bucket.at = now
    if (!this.buckets.has(key)) {
      if (this.buckets.size >= MAX_BUCKETS) this.forgetIdle(now)
      this.buckets.set(key, bucket)
    }
    if (bucket.tokens < 1) return false
    bucket.tokens -= 1
    return true
  }

  /**
   * Takes `count` more tokens for `key` after the fact, into debt if need be (down to minus the burst):
   * what a request turned out to cost, paid before its key is admitted again.
   */
  charge(key: string, count: number, now: number): void {
    const bucket = this.buckets.get(key)
    if (bucket === undefined) return
    const refilled = Math.min(this.limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.limit.perSecond)
    bucket.tokens = Math.max(-this.limit.burst, refilled - count)
    bucket.at = now
  }

  /** Whether `key` has a token at `now`, none taken: false for an address in debt. */
  has(key: string, now: number): boolean {
    const bucket = this.buckets.get(key)
    if (bucket === undefined) return true
    return bucket.tokens + ((now - bucket.at) / 1000) * this.limit.perSecond >= 1
  }

  private forgetIdle(now: number) {
    const full = (this.limit.burst / this.limit.perSecond) * 1000
    for (const [key, bucket] of this.buckets) if (now - bucket.at >= full) this.buckets.delete(key)
    // Still full of active keys (a flood from many addresses): start afresh rather than grow.
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear()
  }
}

/** A value per key for `ttlMs`: verification keys are read once per burst of callbacks, not once each. */
export class TtlCache<A> {
  private readonly entries = new Map<string, { readonly value: A; readonly until: number }>()
  constructor(private readonly ttlMs: number) {}

  get<E, R>(key: string, now: number, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    const hit = this.entries.get(key)
    if (hit !== undefined && hit.until > now) return Effect.succeed(hit.value)
    return Effect.tap(load, (value) =>
      Effect.sync(() => {
        if (this.entries.size >= MAX_BUCKETS) this.entries.clear()
        this.entries.set(key, { value, until: now + this.ttlMs })
      }))
  }
}

/** How long a verification key read from the database is used: a changed key applies within this. */
export const KEY_CACHE_MS = 1_000

export type Gated<A> = { readonly _tag: "Busy" } | { readonly _tag: "Done"; readonly value: A }

export type Admission = "admitted" | "source_limited" | "organisation_limited"

export const makeCallbackGate = Effect.gen(function*() {
  const sources = new Buckets(SOURCE_LIMIT)
  const organisations = new Buckets(ORGANISATION_LIMIT)
  const permits = yield* Effect.makeSemaphore(CONCURRENT_CALLBACKS)
  let waiting = 0

  /**
   * In memory only: whether this source, and this organisation (null: none named yet), may have a callback
   * looked at now. A `signed` callback (it carries its provider's signature header) from a source past its
   * budget is still let on to be verified, taking nothing from the organisation's bucket: a forger's debt
   * must not refuse a genuine callback, and its forgeries are refused once verification fails (`unverified`).
   */
  const admit = (source: string, orgId: string | null, now: number, signed: boolean): Admission =>
    !sources.take(source, now)
      ? signed ? "admitted" : "source_limited"
      : orgId !== null && !organisations.take(orgId, now)
      ? "organisation_limited"
      : "admitted"

  /** Whether `source` is past its budget: its callbacks were let on only to be verified (see `admit`). */
  const overBudget = (source: string, now: number): boolean => !sources.has(source, now)

  /** The same for an organisation named only in the body, once it is read (its source was admitted already). */
  const admitOrganisation = (orgId: string, now: number): Admission =>
    organisations.take(orgId, now) ? "admitted" : "organisation_limited"

  /**
   * A callback from `source` could not be verified: it costs the source UNVERIFIED_COST tokens in all, so a
   * forger's callbacks are looked at a fifth as often as a genuine provider's, whose callbacks all verify.
   * True when the source is past its budget now: the callback is then refused as over the limit (429).
   */
  const unverified = (source: string, now: number): boolean => {
    sources.charge(source, UNVERIFIED_COST - 1, now)
    return overBudget(source, now)
  }

  /** Runs a callback's database work a few at a time; None (nothing run) when too many are waiting already. */
  const run = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<Gated<A>, E, R> =>
    Effect.suspend((): Effect.Effect<Gated<A>, E, R> => {
      if (waiting >= WAITING_CALLBACKS) return Effect.succeed<Gated<A>>({ _tag: "Busy" })
      waiting++
      return permits.withPermits(1)(Effect.map(work, (value): Gated<A> => ({ _tag: "Done", value }))).pipe(
        Effect.ensuring(Effect.sync(() => {
          waiting--
        }))
      )
    })

  return { admit, admitOrganisation, overBudget, unverified, run }
})

export class CallbackGate extends Context.Tag("@parley/server/providers/CallbackGate")<
  CallbackGate,
  Effect.Effect.Success<typeof makeCallbackGate>
>() {}

export const layer = Layer.effect(CallbackGate, makeCallbackGate)
