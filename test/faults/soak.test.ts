import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { memoryVerdict, type Sample } from '../../harness/soak-memory.js'
import { childEnv, runNode } from '../helpers/processes/child-process.js'
import { ROOT } from '../helpers/processes/build.js'
import { ensureBuilt } from '../helpers/processes/cli.js'

/**
 * A short soak in CI: bench/soak.ts for SOAK_SECONDS (default 20) on the built service,
 * throttled so the machine stays usable, with its writer process writing straight into the
 * database at 100 writes/s. It must exit 0: no unexpected status, no socket error, no failed
 * write, no stale listing after a write, no growing memory, a clean stop. Longer runs:
 * `npm run soak -- --minutes N`.
 */

const SECONDS = Number(process.env.SOAK_SECONDS ?? 20)

const MB = 1024 * 1024
const series = (rss: (i: number) => number, n = 30): Sample[] =>
  Array.from({ length: n }, (_, i) => ({ atSeconds: i, rss: rss(i) }))

/** The soak's own thresholds: 5 warm-up samples, +50 MB or +30 % allowed. */
const verdict = (samples: Sample[]) => memoryVerdict(samples, 5, 50, 30)

describe('soak', () => {
  it('judges memory by medians of thirds after the warm-up, with the documented slack', () => {
    // Flat, and noisy around a flat line: steady.
    assert.equal(verdict(series(() => 100 * MB))?.growing, false)
    assert.equal(verdict(series((i) => 100 * MB + (i % 2) * 40 * MB))?.growing, false)
    // A warm-up climb is not counted.
    assert.equal(verdict(series((i) => (i < 5 ? 20 * i : 100) * MB))?.growing, false)
    // A steady climb of 4 MB a sample (~100 MB over the run): growing.
    assert.equal(verdict(series((i) => (100 + 4 * i) * MB))?.growing, true)
    // +40 MB on 100 MB is over 30 % but under 50 MB: allowed; +60 MB is over both.
    assert.equal(verdict(series((i) => (i < 17 ? 100 : 140) * MB))?.growing, false)
    assert.equal(verdict(series((i) => (i < 17 ? 100 : 160) * MB))?.growing, true)
    // Too few samples to judge.
    assert.equal(verdict(series(() => MB, 8)), null)
  })

  it(`runs ${SECONDS} s of mixed load with no unexpected answer and steady memory (npm run soak)`, async (t) => {
    ensureBuilt()
    // The soak's writer process changes listing generations all the time, so the cache keeps
    // taking new entries: a small budget lets 20 s show it staying within its bound.
    const env = childEnv({ LISTING_CACHE_MB: '16' })
    const run = await runNode(
      [
        '--import',
        'tsx',
        'bench/soak.ts',
        '--seconds',
        String(SECONDS),
        '--connections',
        '4',
        '--rate',
        '500',
      ],
      { env, cwd: ROOT, stdin: 'ignore', timeoutMs: (SECONDS + 90) * 1000 },
    )
    const { code } = run
    // The soak reports on stdout; stderr holds only what a crash prints.
    const output = run.stdout + run.stderr
    const lines = output.trim().split('\n')
    t.diagnostic(
      lines
        .filter((l) =>
          /building|importing|service pid|writer:|load done|by status|memory:|passed|FAILED/.test(l),
        )
        .join(' | '),
    )
    assert.equal(code, 0, output.slice(-4000))
    assert.match(output, /passed: no unexpected status or error, memory steady/)
    // It did drive load: thousands of answers, the expected client errors among them.
    const requests = Number(/load done: (\d+) requests/.exec(output)?.[1] ?? 0)
    assert.ok(requests > SECONDS * 50, `only ${requests} requests`)
    assert.match(output, /"401":\d+/)
    // The writer process ran and every listing after its writes showed them.
    const writes = Number(/writer: (\d+) writes/.exec(output)?.[1] ?? 0)
    assert.ok(writes > SECONDS * 50, `only ${writes} writes`)
    assert.match(output, /listings checked after their write, 0 stale, 0 failed/)
    assert.match(output, /"404":\d+/)
  })
})
