/**
 * What the AI-call provider suites share (providers-vapi, providers-retell, crash-vapi, crash-retell):
 * the provider's fake, a Parley server on a fresh store, the demo organisation connected to the fake
 * through the admin CLI (test/support/admin.ts) with the sales line and the sales bot, and the fake
 * calling back on the organisation's events URL; then, over HTTP, asking for a call, reading it, waiting
 * for it to end, listing its events — and the crash suites' rounds. Each suite keeps its own assertions.
 */
import { expect } from "vitest"
import { crashRounds, createRetrying } from "./crashes.js"
import { RetellFake } from "./fakes/RetellFake.js"
import { VapiFake } from "./fakes/VapiFake.js"
import { until } from "./poll.js"
import { type CliResult, type DemoSummary, TestServer } from "./server.js"
import { readUntil } from "./wire.js"

export const PN1 = "PN00000000000000000000000000000001"
/** The sales line's number (PN1). */
export const LINE = "+14155550100"
export const FINAL = new Set(["Completed", "No Answer", "Busy", "Failed"])

export const VAPI_PHONE = "3f1c9a2e-5b7d-4e61-9c3a-0d2b8e7f6a51"
export const VAPI_ASSISTANT = "a1b2c3d4-0000-4000-8000-00000000a551"
export const VAPI_SECRET = "vapi-server-secret-for-tests"
export const RETELL_AGENT = "agent_0123456789abcdef01234567"

export interface ActionRecord {
  readonly id: string
  readonly status?: string | null
  readonly sid?: string | null
  readonly body: string
  readonly audioFileId?: string | null
  readonly errorMessage?: string | null
}

/** What the suites ask of any AI-call provider's fake. */
interface AiCallFake {
  readonly url: string
  readonly apiKey: string
  /** The crash suites' hook: told once a create has been answered. */
  onAnswered: ((call: never) => void) | undefined
  stop(): Promise<void>
}

/** How one provider is set up: its fake, its account, and what its number and bot need. */
export interface AiCallProvider<F extends AiCallFake> {
  /** `--kind`, and the name in the events URL. */
  readonly kind: string
  readonly start: () => Promise<F>
  /** `parley providers set` flags after `--kind`: the fake as the account's API. */
  readonly account: (fake: F) => ReadonlyArray<string>
  /** `numbers add` flags the provider's number needs besides its own. */
  readonly numberFlags: ReadonlyArray<string>
  /** The sales bot's id at the provider (its assistant or agent). */
  readonly botProviderId: string
  /** Sends the fake's callbacks to the organisation's events URL. */
  readonly callBack: (fake: F, url: string) => void
}

export const VAPI: AiCallProvider<VapiFake> = {
  kind: "vapi",
  start: () => VapiFake.start({ stepMs: 30 }),
  account: (fake) => ["--api-key", fake.apiKey, "--webhook-secret", VAPI_SECRET, "--api-base", fake.url],
  numberFlags: ["--provider-id", VAPI_PHONE],
  botProviderId: VAPI_ASSISTANT,
  callBack: (fake, url) => fake.setServer(url, VAPI_SECRET)
}

export const RETELL: AiCallProvider<RetellFake> = {
  kind: "retell",
  start: () => RetellFake.start({ stepMs: 30, agents: [RETELL_AGENT], numbers: [{ number: LINE }] }),
  account: (fake) => ["--api-key", fake.apiKey, "--api-base", fake.url],
  // A Retell number is its E.164 number: no --provider-id.
  numberFlags: [],
  botProviderId: RETELL_AGENT,
  // Retell sets the webhook URL per agent, not per call.
  callBack: (fake, url) => fake.setWebhook(url, RETELL_AGENT)
}

export interface StartedSuite<F> {
  readonly fake: F
  readonly server: TestServer
  readonly demo: DemoSummary
}

let counter = 0

/**
 * One suite's fake, server and organisation. Its helpers are fields, so a suite may take them apart
 * (`const { call, read } = suite`); they work once `start` has run.
 */
export class AiCallSuite<F extends AiCallFake> {
  private fake: F | undefined
  private server: TestServer | undefined
  private demo: DemoSummary | undefined

  constructor(
    private readonly provider: AiCallProvider<F>,
    private readonly options: {
      /** PARLEY_PROVIDER_RECHECK_MS: how soon Parley asks the provider about a call it heard nothing of. */
      readonly recheckMs: number
      /** Lifts the organisation's call allowance (the crash suites place more calls than it allows). */
      readonly unlimitedCalls?: boolean
      /** PARLEY_DISPATCH_LEASE_MS: how long a killed process's claim holds its calls (the server's default when unset). */
      readonly leaseMs?: number
    }
  ) {}

  private started(): StartedSuite<F> {
    if (this.fake === undefined || this.server === undefined || this.demo === undefined) {
      throw new Error("the suite has not started")
    }
    return { fake: this.fake, server: this.server, demo: this.demo }
  }

  start = async (): Promise<StartedSuite<F>> => {
    this.fake = await this.provider.start()
    // Polling many records a second would meet the per-key rate limit; it is not under test here.
    this.server = await TestServer.start({
      env: {
        PARLEY_SIM_STEP_MS: "50",
        PARLEY_RATE_LIMIT_PER_MINUTE: "100000",
        PARLEY_PROVIDER_RECHECK_MS: String(this.options.recheckMs),
        ...(this.options.leaseMs === undefined ? {} : { PARLEY_DISPATCH_LEASE_MS: String(this.options.leaseMs) })
      }
    })
    this.demo = await this.server.demo()
    const orgId = this.demo.orgId
    if (this.options.unlimitedCalls === true) await this.cliOk(["orgs", "update", orgId, "--call-allowance", "unlimited"])
    await this.connect()
    await this.cliOk([
      "numbers", "add", "--org", orgId, "--sid", PN1, "--phone", LINE, "--name", "Sales line", "--voice-bot", "bot_sales",
      ...this.provider.numberFlags
    ])
    await this.cliOk([
      "bots", "add", "--org", orgId, "--id", "bot_sales", "--name", "Sales qualifier", "--provider-id",
      this.provider.botProviderId
    ])
    // The server keeps its port across restarts, so the events URL stays right.
    this.provider.callBack(this.fake, this.eventsUrl())
    return this.started()
  }

  dispose = async (): Promise<void> => {
    if (this.fake !== undefined) this.fake.onAnswered = undefined
    await this.server?.dispose()
    await this.fake?.stop()
  }

  /** Set-up runs the CLI's commands in this process (test/support/admin.ts); the CLI itself is not under test here. */
  cliOk = async (args: ReadonlyArray<string>): Promise<CliResult> => {
    const server = this.server
    if (server === undefined) throw new Error("the suite has not started")
    return server.adminOk(args)
  }

  /** Connects the organisation to the fake (again), with `extra` flags for `providers set`. */
  connect = (...extra: ReadonlyArray<string>): Promise<CliResult> => {
    const { demo, fake } = this.started()
    return this.cliOk([
      "providers", "set", "--org", demo.orgId, "--kind", this.provider.kind, ...this.provider.account(fake), ...extra
    ])
  }

  /** Where the provider calls back for an organisation. */
  eventsUrl = (orgId = this.started().demo.orgId): string =>
    `${this.started().server.baseUrl}/providers/${this.provider.kind}/events?org=${orgId}`

  /** A fresh Idempotency-Key. */
  idem = (): string => `${this.provider.kind}-${Date.now()}-${++counter}`

  /** Asks for a call from the sales line with the sales bot; answers its id once accepted (202). */
  call = async (to: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const { demo, server } = this.started()
    const response = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": this.idem() },
      body: JSON.stringify({
        to,
        fromNumberSid: PN1,
        botId: "bot_sales",
        mode: "deliver_specific_message",
        purposeMessage: "Confirm tomorrow at 10",
        ...extra
      })
    })
    const text = await response.text()
    expect(response.status, text).toBe(202)
    return (JSON.parse(text) as { id: string }).id
  }

  read = (id: string): Promise<ActionRecord> => {
    const { demo, server } = this.started()
    return server.fetch(`/api/v1/ai-calls/${id}`, { key: demo.keys.live }).then((r) => r.json() as Promise<ActionRecord>)
  }

  settle = (id: string): Promise<ActionRecord> => readUntil(() => this.read(id), (r) => FINAL.has(r.status ?? ""))

  /** The types of the events about the action, in order. */
  eventsOf = async (id: string): Promise<ReadonlyArray<string>> =>
    (await this.started().server.db.query<{ type: string }>("SELECT type FROM events WHERE payload LIKE ? ORDER BY seq", [
      `%"id":"${id}"%`
    ])).map((e) => e.type)

  /**
   * The crash suites' rounds (issue 22): in each, two identical calls to `sameCustomer` and one call of
   * its own are asked for while the fake's next answered create kills Parley (test/support/crashes.ts).
   * Answers the number of kills.
   */
  callThroughKills = (rounds: number, sameCustomer: string): Promise<number> => {
    const { demo, fake, server } = this.started()
    const call = (to: string, purposeMessage: string) =>
      createRetrying(server, demo.keys.live, "/api/v1/ai-calls", {
        to,
        fromNumberSid: PN1,
        botId: "bot_sales",
        mode: "deliver_specific_message",
        purposeMessage
      })
    return crashRounds({
      rounds,
      server,
      arm: (onAnswered) => {
        fake.onAnswered = onAnswered
      },
      round: async (round) => {
        await Promise.all([
          call(sameCustomer, "Confirm Friday at 10"),
          call(sameCustomer, "Confirm Friday at 10"),
          call(`+1415555${String(3000 + round)}`, `Round ${round}: confirm the delivery`)
        ])
      }
    })
  }

  /** Every AI call of the organisation, once all are final (the crash suites' end state). */
  finalCalls = (): Promise<ReadonlyArray<{ id: number | string; status: string; sid: string | null }>> => {
    const { demo, server } = this.started()
    return until(async () => {
      const found = await server.db.query<{ id: number | string; status: string; sid: string | null }>(
        "SELECT id, status, sid FROM actions WHERE org_id = ? AND kind = 'ai_call'",
        [demo.orgId]
      )
      return found.length > 0 && found.every((r) => FINAL.has(r.status)) ? found : undefined
    }, { timeoutMs: 300_000, intervalMs: 500, what: "every call final" })
  }
}
