import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import type { ChangeSignals, Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { followedFolder, insertChild, seedFollowed } from '../helpers/fixtures/followed-folder.js'

/**
 * A store's commit hints (Store.changeSignals) name the owner each commit of another
 * connection moved, on both backends (PostgreSQL's NOTIFY; SQLite reads them after its
 * data_version moved): the watcher then reads those owners' generations alone, where a
 * hint that names no owner makes it read every owner it holds (at 5,000 owners and a
 * commit every 2 ms, the whole core: docs/performance.md "Fan-out").
 */

const [A, B, C] = [followedFolder('7c000001'), followedFolder('7c000002'), followedFolder('7c000003')]

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of allBackends()) {
  describe(`${backend.name}: commit hints name the owners a commit moved`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let store: Store
    let sql: RawSql
    let signals: ChangeSignals | null = null
    const hints: (string | null)[] = []

    /** The hints that arrive within `ms` after `write`, for as long as `ms` at least. */
    const hintsOf = async (write: () => Promise<unknown>, ms = 500): Promise<(string | null)[]> => {
      hints.length = 0
      await write()
      await sleep(ms)
      return [...hints]
    }

    before(async () => {
      opened = await backend.open()
      store = opened.store
      for (const owner of [A, B, C]) await seedFollowed(store, owner)
      sql = await openRawSql(opened.url)
      signals = store.changeSignals?.((ownerId) => hints.push(ownerId)) ?? null
      assert.ok(signals !== null, 'the backend gives commit hints')
      signals.resume()
      // PostgreSQL's LISTEN connection opens with the first resume
      await sleep(500)
    })
    after(async () => {
      signals?.pause()
      await sql?.close()
      await opened?.cleanup()
    })

    it("names the owner of each commit, and no other's", async () => {
      assert.deepEqual(await hintsOf(() => insertChild(sql, A, 'one')), [A.owner])
      const both = await hintsOf(async () => {
        await insertChild(sql, B, 'two')
        await insertChild(sql, C, 'three')
      })
      assert.deepEqual([...new Set(both)].sort(), [B.owner, C.owner].sort())
    })

    it('names the owner of a commit after an owner whose generation is ahead of the clock', async () => {
      // A generation far above the clock (a clock set back, a restored backup) hides no later commit.
      await sql.run(
        'UPDATE users SET listing_generation = listing_generation + 3600000000 WHERE id = ?',
        A.owner,
      )
      await sleep(50)
      await hintsOf(() => insertChild(sql, A, 'ahead'))
      assert.deepEqual([...new Set(await hintsOf(() => insertChild(sql, B, 'later')))], [B.owner])
      assert.deepEqual([...new Set(await hintsOf(() => insertChild(sql, C, 'later')))], [C.owner])
    })
  })
}
