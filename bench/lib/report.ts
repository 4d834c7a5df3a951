/** The printed table, latest.json and the markdown summary in docs/benchmarks.md. */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import type { ScenarioRow } from "./types.js"

export interface Machine {
  readonly nproc: number
  readonly cpu: string
  readonly memoryGb: number
  readonly node: string
  readonly platform: string
  readonly loadAverageStart: ReadonlyArray<number>
  readonly loadAverageEnd: ReadonlyArray<number>
}

export interface Target {
  readonly name: string
  readonly target: string
  readonly measured: string
  /** null when it could not be measured in this run. */
  readonly met: boolean | null
}

export interface RunReport {
  readonly date: string
  readonly mode: "quick" | "full"
  readonly machine: Machine
  readonly settings: Readonly<Record<string, number | string>>
  readonly idleRssMb: number | null
  readonly bootMs: ReadonlyArray<number>
  readonly rows: ReadonlyArray<ScenarioRow>
  readonly targets: ReadonlyArray<Target>
  readonly notes: ReadonlyArray<string>
  readonly timings: Readonly<Record<string, number>>
  readonly totalSeconds: number
}

const DASH = "—"

export const fmtNumber = (value: number | null, digits = 0): string =>
  value === null ? DASH : !Number.isFinite(value) ? "∞" : value.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits
  })

export const fmtMs = (value: number | null): string =>
  value === null ? DASH : !Number.isFinite(value) ? "not sent" : value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)

/** A latency cell: "> N" where the value is only a lower bound (actions not sent by the end). */
export const fmtLatency = (row: ScenarioRow, value: number | null): string =>
  value !== null && row.openEndMs !== undefined && value >= row.openEndMs ? `> ${fmtMs(row.openEndMs)}` : fmtMs(value)

const fmtRatio = (value: number | null): string => (value === null ? DASH : `${value.toFixed(2)}×`)

/**
 * The server's CPU time per request (or per action): its CPU use over the load divided by the rate. Ratios of
 * rates carry from machine to machine; this says what each request costs, so a busy machine (which lowers
 * every rate) cannot hide a regression.
 */
export const cpuMicrosPerUnit = (row: Pick<ScenarioRow, "cpuPercent" | "rate">): number | null =>
  row.cpuPercent === null || row.rate === null || row.rate <= 0 ? null : (row.cpuPercent / 100 / row.rate) * 1e6

const HEADERS = ["scenario", "rate", "p50 ms", "p95 ms", "p99 ms", "errors", "peak RSS MB", "server CPU", "CPU µs each", "vs baseline"]

const cells = (row: ScenarioRow): Array<string> => [
  row.name,
  row.rate === null ? DASH : `${fmtNumber(row.rate)} ${row.unit}`,
  fmtLatency(row, row.p50),
  fmtLatency(row, row.p95),
  fmtLatency(row, row.p99),
  fmtNumber(row.errors),
  fmtNumber(row.peakRssMb, 1),
  row.cpuPercent === null ? DASH : `${row.cpuPercent.toFixed(0)}%`,
  fmtNumber(cpuMicrosPerUnit(row)),
  fmtRatio(row.ratio)
]

/** The table as aligned plain text. */
export const textTable = (rows: ReadonlyArray<ScenarioRow>): string => {
  const body = rows.map(cells)
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)))
  const line = (r: ReadonlyArray<string>) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ")
  return [line(HEADERS), widths.map((w) => "─".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

export const markdownTable = (rows: ReadonlyArray<ScenarioRow>): string => {
  const esc = (s: string) => s.replace(/\|/g, "\\|")
  return [
    `| ${HEADERS.join(" | ")} |`,
    `| ${HEADERS.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${cells(r).map(esc).join(" | ")} |`)
  ].join("\n")
}

const targetsTable = (targets: ReadonlyArray<Target>): string =>
  [
    "| target | goal | measured | met |",
    "| --- | --- | --- | :---: |",
    ...targets.map((t) =>
      `| ${t.name} | ${t.target} | ${t.measured} | ${t.met === null ? "n/a" : t.met ? "✅ yes" : "❌ no"} |`
    )
  ].join("\n")

export const markdownSummary = (report: RunReport): string => {
  const m = report.machine
  const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(", ")
  return [
    `### ${report.mode === "full" ? "Full run (`pnpm bench`)" : "Quick run (`pnpm bench --quick`)"} — ${report.date}`,
    "",
    `Machine: ${m.nproc} cores (${m.cpu}), ${m.memoryGb.toFixed(0)} GB, Node ${m.node} on ${m.platform}; ` +
    `load average ${load(m.loadAverageStart)} at start, ${load(m.loadAverageEnd)} at the end. ` +
    `Run took ${report.totalSeconds.toFixed(0)} s.`,
    "",
    `Settings: ${Object.entries(report.settings).map(([k, v]) => `${k} ${v}`).join(", ")}.`,
    "",
    markdownTable(report.rows),
    "",
    `Idle RSS right after start: ${fmtNumber(report.idleRssMb, 1)} MB (boot to /healthz: ${
      report.bootMs.map((b) => `${(b / 1000).toFixed(1)} s`).join(", ")
    }).`,
    "",
    "Targets (issue 6):",
    "",
    targetsTable(report.targets),
    "",
    ...(report.notes.length === 0 ? [] : ["Notes:", "", ...report.notes.map((n) => `- ${n}`), ""])
  ].join("\n")
}

const HEADER = `# Benchmarks

\`pnpm bench\` (full, under 5 minutes on 2 cores) and \`pnpm bench --quick\` (under a minute) start a real
Parley server (\`parley serve\`) on a fresh SQLite data directory, seed it, load it with autocannon from a
separate process, and compare it with raw baselines measured in the same run (\`bench/baselines/\`). The
machine-readable result of the last run is \`bench/results/latest.json\` (not committed).

How each scenario is measured:
- **Read path**: \`GET /api/v1/numbers\` and \`GET /api/v1/messages/{id}\` with the demo org's live key.
  Baseline: a raw \`node:http\` server checking the same Bearer key and answering the byte-identical bodies
  fetched from Parley first.
- **Write path**: \`POST /api/v1/messages\` (live key, simulated carrier), a fresh \`Idempotency-Key\` per
  request. The dispatcher runs as usual and sends what is accepted. Baseline: raw \`node:http\` +
  \`better-sqlite3\` inserting the same action row and idempotency row in one transaction (WAL,
  \`synchronous=NORMAL\`) on a copy of the same database.
- **Idempotent replay**: the same POST (same key, same body) repeated; every answer is the stored 202.
- **Conversations**: \`GET /api/v1/conversations\`, first page and a deep cursor (reached by following
  \`nextCursor\`), on a store seeded straight into SQLite before start (1,000,000 texts across 10,000
  conversations in the full run). Order: the first page under load (10 connections, after its warm-up),
  then one client follows \`nextCursor\` page by page (200 pages in the full run, each timed), then the
  page it reached under load — so every row is measured on a warm server.
- **Dispatcher**: Queued texts inserted straight into SQLite before start, with \`PARLEY_SIM_STEP_MS\` large
  so only the first step (the send) happens; lateness = simulated carrier's \`first_sent_at\` − \`due_at\`.
  Two rows: 100,000 (full run) all due at the same moment a few seconds after start — the sustained rate
  = sent / (last send − first send), judged against ≥ 5,000 actions/s; its lateness only says how long the
  backlog takes to drain (the last of N waits at least N ÷ rate) — and a steady stream (50,000 due evenly
  over 20 s, 2,500/s, below the measured rate), on which the lateness p99 ≤ 100 ms target is judged.
- Every load runs 10 connections from one autocannon process on the same host, so load generator and server
  share the 2 cores. Latencies are of 2xx answers; errors = non-2xx answers + socket errors (timeouts
  included). RSS is sampled from \`/proc/<pid>/status\` every 200 ms; "server CPU" is the server process's CPU
  time over the load (warm-up included, load generator start-up excluded) from \`/proc/<pid>/stat\`, in % of
  one core (100% = one core busy). The rate limit is raised with \`PARLEY_RATE_LIMIT_PER_MINUTE\` and the demo org's text allowance set to unlimited (the value
  \`parley orgs update --sms-allowance unlimited\` writes); nothing else differs from a normal start.
`

const marker = (mode: string, edge: "start" | "end") => `<!-- bench:${mode}:${edge} -->`

/**
 * Writes the run's summary between its mode's markers in docs/benchmarks.md,
 * keeping everything else (such as profile findings written by hand).
 */
export const writeMarkdown = (file: string, report: RunReport) => {
  const start = marker(report.mode, "start")
  const end = marker(report.mode, "end")
  const block = `${start}\n${markdownSummary(report)}\n${end}`
  let text = existsSync(file)
    ? readFileSync(file, "utf8")
    : `${HEADER}\n## Latest results\n\n${marker("full", "start")}\n_No full run yet._\n${marker("full", "end")}\n\n${
      marker("quick", "start")
    }\n_No quick run yet._\n${marker("quick", "end")}\n\n## Findings\n\n_Profile findings go here._\n`
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  text = from >= 0 && to > from
    ? `${text.slice(0, from)}${block}${text.slice(to + end.length)}`
    : `${text.trimEnd()}\n\n${block}\n`
  writeFileSync(file, text)
}
