import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PRUNE_BATCH, startPruning } from '../../src/feed/change-pruning.js'

/** The pruning timer against a fake store: batches until a short one, the retention cut-off, stop. */

describe('change log pruning', () => {
  it('deletes in batches at start, before now minus the retention, and stops cleanly', async () => {
    const calls: { before: number; batch: number }[] = []
    let left = 2 * PRUNE_BATCH + 7
    const store = {
      pruneChanges: (before: number, batch: number) => {
        calls.push({ before, batch })
        const deleted = Math.min(left, batch)
        left -= deleted
        return Promise.resolve(deleted)
      },
    }
    const started = Date.now()
    const pruning = startPruning(store, { retentionDays: 30, onError: (error) => assert.fail(String(error)) })
    assert.equal(await pruning.running, 2 * PRUNE_BATCH + 7)
    assert.equal(calls.length, 3)
    for (const { before, batch } of calls) {
      assert.equal(batch, PRUNE_BATCH)
      assert.ok(Math.abs(started - 30 * 86_400_000 - before) < 1000, 'cut-off is now minus 30 days')
    }
    await pruning.stop()
  })

  it('reports a failed run and tries again at the next tick', async () => {
    const errors: unknown[] = []
    let calls = 0
    const store = {
      pruneChanges: () => (++calls === 1 ? Promise.reject(new Error('down')) : Promise.resolve(0)),
    }
    const pruning = startPruning(store, { retentionDays: 1, everyMs: 20, onError: (e) => errors.push(e) })
    await new Promise((resolve) => setTimeout(resolve, 100))
    await pruning.stop()
    assert.equal(errors.length, 1)
    assert.ok(calls >= 2, `ran again: ${calls}`)
  })
})
