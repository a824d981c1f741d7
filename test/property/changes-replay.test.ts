import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { replaySummary, runReplayProperty } from './changes-replay.js'

/**
 * The quick share of the replay property (changes-replay.ts); the long run is
 * test/deep/changes-replay.deep.test.ts. FC_SEED=<n> replays a failure.
 */

const QUICK_RUNS = 15
const MAX_OPS = 40

for (const backend of allBackends()) {
  describe(`${backend.name}: the changes feed replays to the listing`, { skip: backend.skip }, () => {
    it(`on ${QUICK_RUNS} random histories of raw-SQL writes`, async (t) => {
      const stats = await runReplayProperty(backend, { numRuns: QUICK_RUNS, maxOps: MAX_OPS })
      t.diagnostic(replaySummary(stats))
      assert.equal(stats.cases, QUICK_RUNS)
      // The generator must reach every kind of entry and answers cut short by limit.
      assert.ok(
        stats.entries.upsert > 0 && stats.entries.remove > 0 && stats.entries.owner > 0,
        replaySummary(stats),
      )
      assert.ok(stats.cutShort > 0, replaySummary(stats))
      assert.ok(stats.checks > QUICK_RUNS, replaySummary(stats))
    })
  })
}
