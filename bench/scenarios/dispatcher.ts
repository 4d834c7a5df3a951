/**
 * The dispatcher scenarios: Queued texts seeded straight into SQLite before
 * the server starts, sent by its dispatcher to the simulated carrier.
 * - burst: every action due at the same moment. Measures the sustained rate
 *   (sent ÷ (last send − first send)); the lateness of the last of N is at
 *   least N ÷ rate, so its percentiles say how long a backlog takes to drain.
 * - steady: the due times spread evenly over a window, at an arrival rate
 *   below the dispatcher's capacity. Lateness here is what a sender feels in
 *   normal operation (poll interval, batch size, time to work a batch); the
 *   "lateness p99 ≤ 100 ms" target is judged on this row.
 * Lateness is the carrier's `first_sent_at` − the action's `due_at`.
 */
import { cpuSeconds, type ParleyServer, RssSampler, sleep } from "../lib/processes.js"
import { fmtLatency, fmtNumber } from "../lib/report.js"
import { DispatchProbe, nextActionId, type OrgContext, seedDueActions, snapshot } from "../lib/seed.js"
import { percentile, type ScenarioRow } from "../lib/types.js"

export interface DispatcherHarness {
  readonly step: (line: string) => void
  readonly log: (line: string) => void
  readonly note: (line: string) => void
  readonly timed: <A>(name: string, f: () => Promise<A>) => Promise<A>
  readonly dataDir: (name: string) => string
  readonly startParley: (name: string, dir: string) => Promise<ParleyServer>
  readonly stopParley: (server: ParleyServer, label: string) => Promise<void>
  /** Adds the row to the report (also when the wait was cut short by an error). */
  readonly record: (row: ScenarioRow) => void
  /** How long a server has taken to answer /healthz so far (the first due time is set after it). */
  readonly bootEstimateMs: number
}

export interface DispatchLoad {
  /** Row id; also names the data directory and the server log. */
  readonly id: string
  readonly actions: number
  /** 0: all due at the same moment; otherwise the due times are spread evenly over this many ms. */
  readonly windowMs: number
  /** How long after the last due time to wait for the sends before giving up. */
  readonly timeoutMs: number
}

const SEED_FIXED_MS = 300
const SEED_MS_PER_ACTION = 0.05

const describe = (load: DispatchLoad): string => {
  const count = load.actions.toLocaleString("en-US")
  if (load.windowMs === 0) return `dispatcher: ${count} due at once (lateness)`
  const perSecond = fmtNumber(load.actions / (load.windowMs / 1000))
  return `dispatcher: ${count} over ${(load.windowMs / 1000).toFixed(0)} s (steady ${perSecond}/s)`
}

export const dispatcherScenario = async (
  harness: DispatcherHarness,
  templateDir: string,
  org: OrgContext,
  load: DispatchLoad
): Promise<void> => {
  const { step } = harness
  const dir = harness.dataDir(load.id)
  const file = snapshot(templateDir, dir)
  const firstId = nextActionId(file)
  const name = describe(load)
  step(`${name}: seeding ${load.actions.toLocaleString("en-US")} Queued texts`)
  const seedStarted = Date.now()
  // Opening the copied store and its indexes takes a fixed few hundred ms before the first row.
  const seedEstimate = SEED_FIXED_MS + load.actions * SEED_MS_PER_ACTION
  // The first due time a little after the server will be up (its boot time so far, with a margin).
  const dueAt = Date.now() + seedEstimate + harness.bootEstimateMs * 1.1 + 1_000
  const spacing = load.actions <= 1 ? 0 : load.windowMs / (load.actions - 1)
  const lastDueAt = dueAt + load.windowMs
  await harness.timed(`seed.${load.id}`, async () =>
    seedDueActions(file, org, load.actions, load.windowMs === 0 ? dueAt : (i) => Math.round(dueAt + i * spacing), harness.log))
  if (Date.now() - seedStarted > seedEstimate) harness.note(`${name}: seeding took longer than estimated.`)
  const server = await harness.timed(`boot.${load.id}`, () => harness.startParley(load.id, dir))
  const readyBeforeDue = dueAt - Date.now()
  if (readyBeforeDue < 0) {
    harness.note(`${name}: the server answered /healthz ${-readyBeforeDue} ms after the first due time; lateness includes that.`)
  }
  const sampler = new RssSampler(server.pid).start()
  const probe = new DispatchProbe(file, firstId)
  let progress = probe.progress()
  let timedOut = false
  let cpuAtDue: number | null = null
  let cpuAtEnd: number | null = null
  try {
    step(`  due in ${(readyBeforeDue / 1000).toFixed(1)} s; waiting for the sends (at most ${load.timeoutMs / 1000} s after the last due time)`)
    await harness.timed(load.id, async () => {
      if (readyBeforeDue > 0) await sleep(readyBeforeDue)
      cpuAtDue = cpuSeconds(server.pid)
      let lastLog = Date.now()
      let lastStatus = Date.now()
      while (true) {
        const sent = probe.sent()
        // Statuses (failures, what is still queued) cost a scan of the seeded actions: every 2 s at most.
        if (sent + progress.failed >= load.actions || Date.now() - lastStatus >= 2_000) {
          progress = probe.progress()
          lastStatus = Date.now()
          if (progress.sent + progress.failed >= load.actions) break
        }
        if (!server.alive) break
        if (Date.now() - lastDueAt > load.timeoutMs) {
          timedOut = true
          break
        }
        if (Date.now() - lastLog >= 5_000) {
          lastLog = Date.now()
          step(`  ${progress.sent.toLocaleString("en-US")} sent, ${progress.failed} failed, ${progress.queued.toLocaleString("en-US")} still queued`)
        }
        await sleep(250)
      }
      cpuAtEnd = cpuSeconds(server.pid)
    })
  } finally {
    const endedAt = Date.now()
    const rss = sampler.stop()
    progress = probe.progress()
    const { firstSentAt, lastSentAt, lateness } = probe.lateness()
    probe.close()
    await harness.stopParley(server, load.id)
    const unsent = load.actions - lateness.length
    // Actions not sent by the end count as late as the wait in the percentiles (a lower bound, shown as "> …").
    const waitedMs = endedAt - dueAt
    const all = [...lateness, ...Array.from({ length: unsent }, () => waitedMs)]
    const windowSeconds = firstSentAt === null || lastSentAt === null ? 0 : (lastSentAt - firstSentAt) / 1000
    const rate = lateness.length < 2 || windowSeconds <= 0 ? null : lateness.length / windowSeconds
    const rateFromDue = lastSentAt === null ? null : lateness.length / Math.max(0.001, (lastSentAt - dueAt) / 1000)
    const cpuUsed = cpuAtDue === null || cpuAtEnd === null ? null : cpuAtEnd - cpuAtDue
    const cpuUsPerAction = cpuUsed === null || lateness.length === 0 ? null : (cpuUsed * 1e6) / lateness.length
    if (timedOut || unsent > 0) {
      harness.note(`${name}: ${unsent.toLocaleString("en-US")} of ${load.actions.toLocaleString("en-US")} actions were not sent ${
        (load.timeoutMs / 1000).toFixed(0)
      } s after the last due time (${progress.failed} failed, ${progress.queued.toLocaleString("en-US")} still queued); percentiles count them as ${
        (waitedMs / 1000).toFixed(0)
      } s late (a lower bound, shown as "> …").`)
    }
    const row: ScenarioRow = {
      id: load.id,
      name,
      kind: "parley",
      unit: "actions/s",
      rate,
      p50: percentile(all, 50),
      p95: percentile(all, 95),
      p99: percentile(all, 99),
      ...(unsent > 0 ? { openEndMs: waitedMs } : {}),
      errors: progress.failed + server.warnings,
      peakRssMb: rss.peakMb,
      cpuPercent: rss.cpuPercent,
      ratio: null,
      notes: [],
      details: {
        actions: load.actions,
        windowMs: load.windowMs,
        arrivalPerSecond: load.windowMs === 0 ? null : load.actions / (load.windowMs / 1000),
        sent: lateness.length,
        failed: progress.failed,
        stillQueued: progress.queued,
        timedOut,
        dueAt,
        lastDueAt,
        serverReadyBeforeDueMs: readyBeforeDue,
        firstSentAt,
        lastSentAt,
        firstSendAfterDueMs: firstSentAt === null ? null : firstSentAt - dueAt,
        lastSendAfterDueMs: lastSentAt === null ? null : lastSentAt - dueAt,
        ratePerSecondFirstToLast: rate,
        ratePerSecondFromDue: rateFromDue,
        serverCpuSeconds: cpuUsed,
        serverCpuUsPerAction: cpuUsPerAction,
        latenessMaxMs: lateness[lateness.length - 1] ?? null
      }
    }
    step(`  → ${lateness.length.toLocaleString("en-US")} sent at ${fmtNumber(rate)} actions/s (${fmtNumber(rateFromDue)}/s from the first due time), lateness p50 ${
      fmtLatency(row, row.p50)
    } ms, p95 ${fmtLatency(row, row.p95)} ms, p99 ${fmtLatency(row, row.p99)} ms, peak RSS ${fmtNumber(rss.peakMb, 1)} MB, server CPU ${
      fmtNumber(cpuUsPerAction)
    } µs per action`)
    harness.record(row)
  }
}
