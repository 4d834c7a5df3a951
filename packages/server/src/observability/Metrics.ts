/**
 * Parley's Prometheus series, one registry per process (prom-client). The
 * series' names and labels are an interface: the dashboard and the alert
 * rules in examples/ and operators' own queries use them, so rename nothing.
 *
 * What moves on the request path is a counter or histogram incremented
 * synchronously with label values known up front (no allocation beyond
 * prom-client's own label lookup). What the database knows (queue depth, the
 * webhook backlog) is read when Prometheus scrapes, never per request, and
 * from the database, so every replica reports the true figure.
 *
 * Labels carry route templates, methods, statuses, kinds, modes, provider
 * names and outcomes — never a key, a secret, a phone number or a text.
 */
import * as Prom from "prom-client"
import { type EventOutbox, FINAL_STATUSES } from "@parley/core/internal"
import { Context, Effect, FiberRef, Layer, Option } from "effect"
import { ConnectionPool } from "../store/ConnectionPool.js"

/**
 * Which provider the current work is for, set by the dispatcher and the provider callbacks: a registered
 * provider's name (providers/Registry.ts), "simulator", or "none" outside any provider's work.
 */
export type ProviderName = string

export type ProviderOutcome = "answered_2xx" | "answered_4xx" | "answered_5xx" | "not_sent" | "outcome_unknown"

export type WebhookOutcome = "delivered" | "retry" | "failed" | "gone"

/** The queue's states as `parley_queue_depth` labels them. */
export type QueueState = "due" | "scheduled" | "held"

// Seconds; from a cheap in-process request (~0.2 ms) to a provider that times out (15 s).
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
// Lateness is judged against a minute (the alert rule's p99 > 60 s), so the buckets reach past it.
const LATENESS_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900]
const PROVIDER_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30]
const POOL_WAIT_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5]

const statusClass = (status: number): string =>
  status < 200 ? "1xx" : status < 300 ? "2xx" : status < 400 ? "3xx" : status < 500 ? "4xx" : "5xx"

/** What the metrics know of a CRM: the name its series is called after, and how its help text names it. */
export interface CrmSeries {
  readonly name: string
  readonly vendor: string
}

/** The registry and its series; `crms` are the registry's CRMs (crm/Registry.ts), handed in by the composition root. */
export const makeMetrics = (crms: ReadonlyArray<CrmSeries>) => {
  const registry = new Prom.Registry()
  Prom.collectDefaultMetrics({ register: registry })
  const registers = [registry]

  const httpRequests = new Prom.Counter({
    name: "parley_http_requests_total",
    help: "HTTP requests answered, by route template, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers
  })
  const httpDuration = new Prom.Histogram({
    name: "parley_http_request_duration_seconds",
    help: "Time from a request's arrival to its answer, by route template, method and status class.",
    labelNames: ["route", "method", "status"] as const,
    buckets: REQUEST_BUCKETS,
    registers
  })
  const actionsCreated = new Prom.Counter({
    name: "parley_actions_created_total",
    help: "Texts and AI calls accepted (replays not counted), by kind and key mode.",
    labelNames: ["kind", "mode"] as const,
    registers
  })
  const actionsFinished = new Prom.Counter({
    name: "parley_actions_finished_total",
    help: "Texts and AI calls that reached a final status, by kind, status and provider.",
    labelNames: ["kind", "status", "provider"] as const,
    registers
  })
  const dispatchLateness = new Prom.Histogram({
    name: "parley_dispatch_lateness_seconds",
    help: "Time from an action falling due to its hand-over to the provider.",
    buckets: LATENESS_BUCKETS,
    registers
  })
  const queueDepth = new Prom.Gauge({
    name: "parley_queue_depth",
    help: "Outbound actions waiting to be handed to a provider (read from the database at scrape).",
    labelNames: ["state"] as const,
    registers
  })
  const providerRequests = new Prom.Counter({
    name: "parley_provider_requests_total",
    help: "HTTP requests to providers' APIs, by provider and outcome.",
    labelNames: ["provider", "outcome"] as const,
    registers
  })
  const providerDuration = new Prom.Histogram({
    name: "parley_provider_request_duration_seconds",
    help: "Duration of HTTP requests to providers' APIs.",
    labelNames: ["provider"] as const,
    buckets: PROVIDER_BUCKETS,
    registers
  })
  const webhookDeliveries = new Prom.Counter({
    name: "parley_webhook_deliveries_total",
    help: "Webhook delivery attempts, by outcome.",
    labelNames: ["outcome"] as const,
    registers
  })
  const webhookOldestPending = new Prom.Gauge({
    name: "parley_webhook_oldest_pending_seconds",
    help: "Age of the oldest event still waiting for delivery to an enabled endpoint (0 when none).",
    registers
  })
  const optOuts = new Prom.Gauge({
    name: "parley_opt_outs",
    help: "Numbers opted out across organisations, by what recorded the opt-out (read from the database at scrape).",
    labelNames: ["source"] as const,
    registers
  })
  const rateLimited = new Prom.Counter({
    name: "parley_rate_limited_total",
    help: "Requests refused with 429 by the per-key rate limit.",
    registers
  })
  const idempotentReplays = new Prom.Counter({
    name: "parley_idempotent_replays_total",
    help: "Creations answered from the first result of their Idempotency-Key.",
    registers
  })

  // One counter per CRM of the registry, named after it (parley_<name>_refused_total).
  const crmRefused = new Map(crms.map((crm) => [crm.name, new Prom.Counter({
    name: `parley_${crm.name}_refused_total`,
    help: `${crm.vendor} records Parley gave up on because ${crm.vendor} refused them for good (a write-back, an inbound text's record or an opt-out), by outbox and ${crm.vendor}'s code.`,
    labelNames: ["outbox", "code"] as const,
    registers
  })]))
  return {
    registry,
    crmRefused: (crm: string, outbox: "writeback" | "inbound" | "optout", code: string) => crmRefused.get(crm)?.inc({ outbox, code }),
    request: (route: string, method: string, status: number, seconds: number) => {
      httpRequests.inc({ route, method, status })
      httpDuration.observe({ route, method, status: statusClass(status) }, seconds)
      if (status === 429) rateLimited.inc()
    },
    actionCreated: (kind: "message" | "ai_call", mode: "live" | "test") => actionsCreated.inc({ kind, mode }),
    idempotentReplay: () => idempotentReplays.inc(),
    actionFinished: (kind: string, status: string, provider: ProviderName) =>
      actionsFinished.inc({ kind, status, provider }),
    dispatchLate: (seconds: number) => dispatchLateness.observe(Math.max(0, seconds)),
    providerRequest: (provider: ProviderName, outcome: ProviderOutcome, seconds: number) => {
      providerRequests.inc({ provider, outcome })
      providerDuration.observe({ provider }, seconds)
    },
    webhookDelivery: (outcome: WebhookOutcome) => webhookDeliveries.inc({ outcome }),
    /** Set at scrape time from the database (see MetricsEndpoint). */
    setQueueDepth: (state: QueueState, count: number) => queueDepth.set({ state }, count),
    setWebhookOldestPending: (seconds: number) => webhookOldestPending.set(Math.max(0, seconds)),
    setOptOuts: (source: string, count: number) => optOuts.set({ source }, count),
    /** Postgres only: the pool's series (PoolMetricsLive). */
    registerPool: (pool: { readonly inUse: () => number; readonly waiting: () => number }) => {
      new Prom.Gauge({
        name: "parley_db_pool_in_use",
        help: "Postgres connections of this process's pool checked out by a query or transaction.",
        registers,
        collect() {
          this.set(pool.inUse())
        }
      })
      new Prom.Gauge({
        name: "parley_db_pool_waiting",
        help: "Requests waiting for a Postgres connection of this process's pool.",
        registers,
        collect() {
          this.set(pool.waiting())
        }
      })
      const wait = new Prom.Histogram({
        name: "parley_db_pool_wait_seconds",
        help: "Time spent waiting for a Postgres connection from this process's pool.",
        buckets: POOL_WAIT_BUCKETS,
        registers
      })
      return (seconds: number): void => wait.observe(seconds)
    }
  }
}

export type ParleyMetrics = ReturnType<typeof makeMetrics>

const ignore = (): void => undefined

/** Counts nothing: for a process that serves no metrics. Its registry stays empty. */
const noMetrics: ParleyMetrics = {
  registry: new Prom.Registry(),
  crmRefused: ignore,
  request: ignore,
  actionCreated: ignore,
  idempotentReplay: ignore,
  actionFinished: ignore,
  dispatchLate: ignore,
  providerRequest: ignore,
  webhookDelivery: ignore,
  setQueueDepth: ignore,
  setWebhookOldestPending: ignore,
  setOptOuts: ignore,
  registerPool: () => ignore
}

export class Metrics extends Context.Tag("@parley/server/Metrics")<Metrics, ParleyMetrics>() {
  /** The process's one registry, served on /metrics (`parley serve`). */
  static readonly layer = (crms: ReadonlyArray<CrmSeries>) => Layer.sync(Metrics, () => makeMetrics(crms))
  /** Where metrics are not served (the CLI's other commands, tests that build the application). */
  static readonly none = Layer.succeed(Metrics, noMetrics)
}

/**
 * The provider the current fiber works for, so that a provider request, and an action finishing, are
 * labelled at the one place they happen (ProviderExchange, the event outbox) without every provider
 * client passing its name down. The dispatcher sets it per provider; the provider callbacks per route.
 */
export const CurrentProvider: FiberRef.FiberRef<ProviderName> = FiberRef.unsafeMake<ProviderName>("none")

export const forProvider = (provider: ProviderName) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.locally(effect, CurrentProvider, provider)

/**
 * Counts the finished actions among events being appended to the outbox: every final status change emits
 * its event there, whoever made it (dispatcher, provider callback, cancellation), so this is the one place
 * that sees them all. Counted as the event is written, inside its transaction: a transaction that then
 * rolls back (a storage failure) has counted its events anyway, which the dispatcher's retry makes rare.
 */
export const countFinished = (events: ReadonlyArray<EventOutbox.OutboxEvent>): Effect.Effect<void> =>
  Effect.flatMap(Effect.serviceOption(Metrics), (metrics) => {
    if (Option.isNone(metrics)) return Effect.void
    return Effect.map(FiberRef.get(CurrentProvider), (provider) => {
      for (const { subject } of events) {
        if (subject !== undefined && subject.status !== "Received" && FINAL_STATUSES.has(subject.status)) {
          metrics.value.actionFinished(subject.kind, subject.status, provider)
        }
      }
    })
  })

/**
 * The store's connection pool's series, where it has one (Postgres): connections in use and waiting (read
 * at scrape), and each checkout's wait.
 */
export const PoolMetricsLive = Layer.effectDiscard(Effect.gen(function*() {
  const pool = yield* ConnectionPool
  if (Option.isNone(pool)) return
  const metrics = yield* Metrics
  pool.value.observeWaits(metrics.registerPool({ inUse: pool.value.inUse, waiting: pool.value.waiting }))
}))
