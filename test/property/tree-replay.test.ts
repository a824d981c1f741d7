import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { runTreeReplayProperty, treeReplaySummary } from './tree-replay.js'

/** The replay property of the folder tree feed (tree-replay.ts). FC_SEED=<n> replays a failure. */

const RUNS = Number(process.env.TREE_REPLAY_RUNS ?? 25)
const MAX_OPS = 60

for (const backend of allBackends()) {
  describe(`${backend.name}: the folder tree feed replays to the tree`, { skip: backend.skip }, () => {
    it(`on ${RUNS} histories of raw-SQL writes, random but for the ones that once failed`, async (t) => {
      const stats = await runTreeReplayProperty(backend, { numRuns: RUNS, maxOps: MAX_OPS })
      t.diagnostic(treeReplaySummary(stats))
      assert.equal(stats.cases, RUNS)
      // The generator must reach every kind of entry, moves and answers cut short by limit.
      assert.ok(
        stats.entries.upsert > 0 && stats.entries.remove > 0 && stats.entries.owner > 0,
        treeReplaySummary(stats),
      )
      assert.ok(stats.moved > 0 && stats.cutShort > 0, treeReplaySummary(stats))
      assert.ok(stats.checks > RUNS, treeReplaySummary(stats))
    })
  })
}
