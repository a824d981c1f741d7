import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { Histogram, Registry, type Metric } from 'prom-client'
import { LabelledHistogram } from '../../src/http/labelled-histogram.js'

/**
 * The metrics' own histogram (src/http/labelled-histogram.ts) reads exactly as
 * prom-client's Histogram for the same observations: the /metrics text and get().
 */

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.5, 1]
const LABELS = ['method', 'route', 'status'] as const

const observation = fc.record({
  method: fc.constantFrom('GET', 'HEAD', 'POST'),
  route: fc.constantFrom('/v1/folders', 'unmatched', '/metrics', 'a "quoted" \\ route'),
  status: fc.constantFrom('200', '304', '404'),
  // on the bounds, between them, above the last one, zero
  seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 2), fc.double({ min: 0, max: 3, noNaN: true })),
})

function both() {
  const [ours, theirs] = [new Registry(), new Registry()]
  const labelled = new LabelledHistogram('h_seconds', 'help with "quotes" and \\', LABELS, BUCKETS)
  ours.registerMetric(labelled as unknown as Metric)
  const reference = new Histogram({
    name: 'h_seconds',
    help: 'help with "quotes" and \\',
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [theirs],
  })
  return { ours, theirs, labelled, reference }
}

describe('labelled histogram', () => {
  it('renders and exports what prom-client renders for the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 200 }), async (observations) => {
        const { ours, theirs, labelled, reference } = both()
        for (const { method, route, status, seconds } of observations) {
          labelled.observe([method, route, status], seconds)
          reference.observe({ method, route, status }, seconds)
        }
        assert.equal(await ours.metrics(), await theirs.metrics())
        assert.deepEqual(labelled.get(), await reference.get())
      }),
      { numRuns: 200 },
    )
  })

  it('forgets every series on reset', async () => {
    const { ours, theirs, labelled } = both()
    labelled.observe(['GET', '/v1/folders', '200'], 0.002)
    labelled.reset()
    assert.equal(await ours.metrics(), await theirs.metrics())
  })
})
