/**
 * Reading Parley's /metrics as Prometheus would: the text parsed by a
 * Prometheus text-format parser (parse-prometheus-text-format), then looked
 * up by series name and labels. The parser folds a histogram's samples into
 * one set of buckets and keeps `_count` and `_sum` only for unlabelled
 * histograms, so `count` reads those; counters and gauges keep their labels.
 */
import parsePrometheusTextFormat, { type Family } from "parse-prometheus-text-format"

export class Scrape {
  constructor(readonly families: ReadonlyArray<Family>, readonly text: string) {}

  static parse(text: string): Scrape {
    return new Scrape(parsePrometheusTextFormat(text), text)
  }

  family(name: string): Family | undefined {
    return this.families.find((f) => f.name === name)
  }

  private samples(name: string, labels: Readonly<Record<string, string>>) {
    return (this.family(name)?.metrics ?? []).filter((sample) =>
      Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value)
    )
  }

  /** The sum of a counter's or gauge's samples with these labels (0 when none: a counter not yet moved). */
  value(name: string, labels: Readonly<Record<string, string>> = {}): number {
    return this.samples(name, labels).reduce((sum, sample) => sum + Number(sample.value ?? 0), 0)
  }

  /** The observation count of an unlabelled histogram (see above). */
  count(name: string, labels: Readonly<Record<string, string>> = {}): number {
    return this.samples(name, labels).reduce((sum, sample) => sum + Number(sample.count ?? 0), 0)
  }

  /** Every label value of a series. */
  labelValues(name: string, label: string): Array<string> {
    return [...new Set((this.family(name)?.metrics ?? []).flatMap((s) => s.labels?.[label] ?? []))]
  }
}
