import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { replaySummary, runReplayProperty } from '../property/changes-replay.js'

/** The long run of the replay property (test/property/changes-replay.ts). */

const RUNS = Number(process.env.DEEP_REPLAY_RUNS ?? 300)

for (const backend of allBackends()) {
  describe(`${backend.name}: the changes feed replays to the listing (deep)`, { skip: backend.skip }, () => {
    it(`on ${RUNS} random histories of raw-SQL writes`, async (t) => {
      const stats = await runReplayProperty(backend, { numRuns: RUNS, maxOps: 120 })
      t.diagnostic(replaySummary(stats))
      assert.equal(stats.cases, RUNS)
      assert.ok(
        stats.entries.upsert > 0 && stats.entries.remove > 0 && stats.entries.owner > 0,
        replaySummary(stats),
      )
    })
  })
}
