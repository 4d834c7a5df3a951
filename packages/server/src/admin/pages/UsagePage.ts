/**
 * Usage (issue 33, item 11): this month's allowances — texts (SMS segments; a WhatsApp message uses one) and AI
 * calls — as a chart, and the last 30 days of texts and calls by channel and status. The chart is inline SVG
 * drawn by the server (the console's CSP allows no outside or inline script, and no style attribute: shapes take
 * their colours from presentation attributes and console.css), named by its <title> and <desc>, with the same
 * numbers in a table beside it for anyone who does not see the picture.
 */
import { CallStatus, MessageStatus } from "@parley/core"
import { Organisations } from "@parley/core/internal"
import { Effect, Option } from "effect"
import type { Session } from "../AdminStore.js"
import { page } from "../ConsoleHttp.js"
import { type Html, html } from "../Html.js"
import { layout } from "../Layout.js"
import { type AllowancesThisPeriod, type AllowanceThisPeriod, allowancesThisPeriod } from "../SendingRules.js"
import { timeOf } from "../Times.js"
import { type RecentUsage, recentUsage, USAGE_DAYS } from "../UsageCounts.js"
import { notFoundPage } from "./NotFound.js"

const ALLOWANCES = [
  { key: "sms", label: "Texts", unit: "SMS segments" },
  { key: "calls", label: "AI calls", unit: "calls started" }
] as const

/** Whole percent of the limit used (a limit of 0 with nothing used is 0 %), or null when unlimited. */
const percentUsed = (a: AllowanceThisPeriod): number | null =>
  a.limit === null ? null : a.limit === 0 ? (a.used === 0 ? 0 : 100) : Math.round((a.used / a.limit) * 100)

const describe = (a: AllowanceThisPeriod, unit: string): string => {
  const percent = percentUsed(a)
  return a.limit === null
    ? `${a.used} ${unit}, no limit`
    : `${a.used} of ${a.limit} ${unit} (${percent} %)`
}

/** Rows of the chart, 56 px each: the label and numbers above, the bar below. Sizes in px keep text legible at any width. */
const ROW = 56

const allowanceChart = (allowances: AllowancesThisPeriod): Html => {
  const description = ALLOWANCES.map(({ key, label, unit }) => `${label}: ${describe(allowances[key], unit)}`).join("; ")
  return html`<svg class="chart" width="100%" height="${ROW * ALLOWANCES.length}" role="img" aria-labelledby="allowance-chart-title allowance-chart-desc" focusable="false">
<title id="allowance-chart-title">Allowances used in ${allowances.period}</title>
<desc id="allowance-chart-desc">${description}.</desc>
${
    ALLOWANCES.map(({ key, label, unit }, i) => {
      const allowance = allowances[key]
      const percent = percentUsed(allowance)
      const top = i * ROW
      // An unlimited allowance has no share to draw: its track is drawn hatched-free and empty.
      const width = percent === null ? 0 : Math.min(percent, 100)
      return html`<g>
<text x="0" y="${top + 18}" class="chart-label">${label}</text>
<text x="100%" y="${top + 18}" text-anchor="end" class="chart-value">${describe(allowance, unit)}</text>
<rect x="0" y="${top + 26}" width="100%" height="18" rx="3" class="chart-track"></rect>
${width === 0 ? "" : html`<rect x="0" y="${top + 26}" width="${width}%" height="18" rx="3" class="${percent !== null && percent >= 90 ? "chart-bar chart-bar-high" : "chart-bar"}"></rect>`}
</g>`
    })
  }
</svg>`
}

const allowanceTable = (allowances: AllowancesThisPeriod): Html =>
  html`<table id="allowance-table">
<caption>The chart's numbers</caption>
<thead><tr><th scope="col">Allowance</th><th scope="col">Used</th><th scope="col">Limit</th><th scope="col">Used (%)</th></tr></thead>
<tbody>${
    ALLOWANCES.map(({ key, label }) => {
      const a = allowances[key]
      const percent = percentUsed(a)
      return html`<tr><th scope="row">${label}</th><td>${String(a.used)}</td><td>${a.limit === null ? "unlimited" : String(a.limit)}</td><td>${
        percent === null ? "—" : `${percent} %`
      }</td></tr>`
    })
  }</tbody>
</table>`

const CHANNELS = ["SMS", "WhatsApp", "Call"] as const

/** Every status either kind of record can have, messages' first, each once; then any the database holds beside them. */
const statusOrder = (usage: RecentUsage): ReadonlyArray<string> => {
  const known = [...new Set<string>([...MessageStatus.literals, ...CallStatus.literals])]
  const extra = [...new Set(usage.counts.map((c) => c.status))].filter((s) => !known.includes(s)).sort()
  const present = new Set(usage.counts.map((c) => c.status))
  return [...known, ...extra].filter((s) => present.has(s))
}

const recentTable = (usage: RecentUsage): Html => {
  const count = (type: string, status: string) =>
    usage.counts.filter((c) => c.type === type && c.status === status).reduce((n, c) => n + c.count, 0)
  const statuses = statusOrder(usage)
  const channelTotal = (type: string) => usage.counts.filter((c) => c.type === type).reduce((n, c) => n + c.count, 0)
  const total = usage.counts.reduce((n, c) => n + c.count, 0)
  return html`<table id="recent-table">
<caption>Texts and calls created in the last ${USAGE_DAYS} days, by status</caption>
<thead><tr><th scope="col">Status</th>${CHANNELS.map((c) => html`<th scope="col">${c}</th>`)}<th scope="col">Total</th></tr></thead>
<tbody>${
    statuses.length === 0
      ? html`<tr><td colspan="${CHANNELS.length + 2}">No texts or calls in the last ${USAGE_DAYS} days.</td></tr>`
      : statuses.map((status) =>
        html`<tr><th scope="row">${status}</th>${CHANNELS.map((c) => html`<td>${String(count(c, status))}</td>`)}<td>${
          String(usage.counts.filter((c) => c.status === status).reduce((n, c) => n + c.count, 0))
        }</td></tr>`
      )
  }</tbody>
<tfoot><tr><th scope="row">Total</th>${CHANNELS.map((c) => html`<td>${String(channelTotal(c))}</td>`)}<td>${String(total)}</td></tr></tfoot>
</table>`
}

export const usagePage = (_request: unknown, session: Session) =>
  Effect.gen(function*() {
    const org = yield* (yield* Organisations.Organisations).get(session.orgId)
    if (Option.isNone(org)) return notFoundPage(session, "The organisation is gone.")
    const allowances = yield* allowancesThisPeriod(org.value)
    const recent = yield* recentUsage(session.orgId)
    return page(layout({
      title: "Usage",
      session,
      current: "/admin/usage",
      body: html`<section aria-labelledby="allowances-title">
<h2 id="allowances-title">Allowances this month (${allowances.period})</h2>
${allowanceChart(allowances)}
${allowanceTable(allowances)}
<p class="hint">Counted since ${allowances.since}, a calendar month in ${allowances.timezone}. A text uses one unit per SMS segment, a WhatsApp message one; an AI call one when it is started. The limits are set on <a href="/admin/rules">Sending rules</a>.</p>
</section>
<section aria-labelledby="recent-title">
<h2 id="recent-title">Last ${USAGE_DAYS} days</h2>
<p>Since ${timeOf(recent.since, session.timezone)}, inbound and outbound, by their status now.</p>
${recentTable(recent)}
<p><a href="/admin/activity">Search them on Activity</a></p>
</section>`
    }))
  })
