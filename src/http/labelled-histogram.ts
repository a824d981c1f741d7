/**
 * A Prometheus histogram for what every request observes (its duration, its Store calls):
 * an observation finds its series with one Map lookup on its label values, where
 * prom-client's Histogram validates and hashes the label object on every observation, bound
 * child or not (about 0.45 us each, two or more per request). Registered in a prom-client
 * Registry as a metric of its own: get() and getForPromString() return what prom-client's
 * Histogram returns for the same observations, so /metrics reads the same, byte for byte
 * (test/unit/labelled-histogram.test.ts renders both).
 */

interface Series {
  /** label name -> value, in the order of the label names */
  labels: Record<string, string>
  /** observations per bucket (not cumulative); above the last bound: counted in `count` only */
  counts: number[]
  sum: number
  count: number
}

/** One exported value, as prom-client's registry reads it. */
interface ExportedValue {
  labels: Record<string, string | number>
  sharedLabels?: Record<string, string>
  value: number
  metricName: string
  /** null on buckets, undefined on sum and count, as prom-client has them */
  exemplar: null | undefined
}

export class LabelledHistogram<Names extends readonly string[]> {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private series = new Map<string, Series>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: Names,
    private readonly buckets: readonly number[],
  ) {}

  /** `values` in the order of the label names. */
  observe(values: { [I in keyof Names]: string }, value: number): void {
    const key = values.join('\u0000')
    let series = this.series.get(key)
    if (series === undefined) {
      const labels: Record<string, string> = {}
      this.labelNames.forEach((label, i) => (labels[label] = values[i] as string))
      series = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }
      this.series.set(key, series)
    }
    const { buckets } = this
    const { counts } = series
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        counts[i] = (counts[i] as number) + 1
        break
      }
    }
    series.sum += value
    series.count += 1
  }

  reset(): void {
    this.series = new Map()
  }

  /** What the registry renders: prom-client's Histogram shape (labels shared per series). */
  getForPromString(): {
    name: string
    help: string
    type: 'histogram'
    values: ExportedValue[]
    aggregator: 'sum'
  } {
    const bucketName = `${this.name}_bucket`
    const values: ExportedValue[] = []
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0
      this.buckets.forEach((le, i) => {
        cumulative += counts[i] as number
        values.push({
          labels: { le },
          sharedLabels: labels,
          value: cumulative,
          metricName: bucketName,
          exemplar: null,
        })
      })
      values.push(
        {
          labels: { le: '+Inf' },
          sharedLabels: labels,
          value: count,
          metricName: bucketName,
          exemplar: null,
        },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum`, exemplar: undefined },
        {
          labels: {},
          sharedLabels: labels,
          value: count,
          metricName: `${this.name}_count`,
          exemplar: undefined,
        },
      )
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** prom-client's `get()`: each value's labels with the series' labels spread in. */
  get(): ReturnType<LabelledHistogram<Names>['getForPromString']> {
    const data = this.getForPromString()
    return {
      ...data,
      values: data.values.map(({ sharedLabels = {}, labels, ...rest }) => ({
        ...rest,
        labels: { ...labels, ...sharedLabels },
      })),
    }
  }
}
