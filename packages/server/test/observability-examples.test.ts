/**
 * The operator's files in examples/observability, read as Prometheus and
 * Grafana read them: the alert rules as a Prometheus rule file (YAML, each
 * expression parsed by Prometheus's own PromQL grammar, @prometheus-io/lezer-promql),
 * the dashboard as Grafana JSON whose every query parses the same way. Every
 * `parley_*` series they name is one the server exposes.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parser } from "@prometheus-io/lezer-promql"
import { describe, expect, it } from "vitest"
import { parse as parseYaml } from "yaml"
import { CRMS } from "../src/crm/Registry.js"
import { makeMetrics } from "../src/observability/Metrics.js"

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "examples", "observability")

/** The PromQL syntax errors in an expression (lezer marks what it could not parse with error nodes). */
const promqlErrors = (expr: string): Array<string> => {
  const errors: Array<string> = []
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`)
    }
  })
  return errors
}

/** Every series name the server registers, with the suffixes Prometheus gives a histogram's samples. */
const exposed = async (): Promise<Set<string>> => {
  const metrics = makeMetrics(CRMS)
  metrics.registerPool({ inUse: () => 0, waiting: () => 0 })
  const names = new Set<string>()
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name)
    if (String(metric.type) === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(metric.name + suffix)
  }
  return names
}

const seriesIn = (expr: string) => expr.match(/\b(parley|process)_[a-z_]+\b/g) ?? []

describe("examples/observability", () => {
  it("prometheus-alerts.yml is a rule file whose expressions parse and name exposed series", async () => {
    const document: unknown = parseYaml(readFileSync(join(EXAMPLES, "prometheus-alerts.yml"), "utf8"))
    const rules = (document as { groups: Array<{ name: string; rules: Array<Record<string, unknown>> }> }).groups
      .flatMap((group) => group.rules)
    const names = await exposed()
    expect(rules.map((rule) => rule["alert"])).toEqual([
      "ParleyQueueBacklogGrowing",
      "ParleyDispatchLatenessHigh",
      "ParleyWebhookBacklogOld",
      "ParleyProviderErrorRatioHigh",
      "ParleyServerErrors"
    ])
    for (const rule of rules) {
      const expr = String(rule["expr"])
      expect(promqlErrors(expr), `${String(rule["alert"])}: ${expr}`).toEqual([])
      expect(String(rule["for"])).toMatch(/^\d+[smh]$/)
      expect((rule["labels"] as Record<string, string>)["severity"]).toMatch(/^(warning|critical)$/)
      expect((rule["annotations"] as Record<string, string>)["summary"]).toBeTruthy()
      for (const series of seriesIn(expr)) expect(names, `${String(rule["alert"])} names ${series}`).toContain(series)
    }
    // The thresholds the issue asks for.
    expect(String(rules[1]!["expr"])).toContain("> 60")
    expect(String(rules[2]!["expr"])).toContain("> 600")
  })

  it("the PromQL check itself rejects a broken expression", () => {
    expect(promqlErrors("sum(rate(parley_http_requests_total[5m])")).not.toEqual([])
    expect(promqlErrors("histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))")).toEqual([])
  })

  it("grafana-dashboard.json's panels query exposed series with valid PromQL", async () => {
    const dashboard = JSON.parse(readFileSync(join(EXAMPLES, "grafana-dashboard.json"), "utf8")) as {
      readonly title: string
      readonly panels: ReadonlyArray<{ readonly title: string; readonly targets: ReadonlyArray<{ readonly expr: string }> }>
    }
    const names = await exposed()
    const titles = dashboard.panels.map((panel) => panel.title)
    for (const wanted of ["Texts per minute by status", "Dispatch lateness p50 / p99", "Queue depth", "Provider errors", "Webhook backlog"]) {
      expect(titles).toContain(wanted)
    }
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0)
      for (const { expr } of panel.targets) {
        expect(promqlErrors(expr), `${panel.title}: ${expr}`).toEqual([])
        for (const series of seriesIn(expr)) expect(names, `${panel.title} names ${series}`).toContain(series)
      }
    }
  })
})
