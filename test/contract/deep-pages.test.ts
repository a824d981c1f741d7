import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { listingBackends } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { compareCodePoints } from '../../src/ordering/code-points.js'
import { listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder } from '../../harness/raw-sql.js'

/**
 * Deep offset pages start from checkpoints (every 200th key of the listing, read once per
 * listing generation) instead of stepping over every row before them. They must be exactly
 * the plain offset pages: before and after writes, at every depth, beyond the end.
 */

const OWNER = uuid('d0000000', 1)
const SESSION = uuid('d0000000', 2)
const HUGE = uuid('d1000000', 1)
const CHILDREN = 2650
const T0 = Date.parse('2026-03-01T00:00:00.000Z')

interface Child {
  id: string
  name: string
  created_at: number
}

const order = (a: Child, b: Child) =>
  compareCodePoints(a.name, b.name) || a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

function children(): Child[] {
  return Array.from({ length: CHILDREN }, (_, i) => ({
    id: uuid('d2000000', (i * 7919) % 100_003),
    // A third of the names are shared by two folders: ties broken by created_at, then id.
    name: `n${String(i % 1800).padStart(4, '0')}`,
    created_at: T0 + (i % 3) * 1000,
  }))
}

for (const backend of listingBackends()) {
  describe(`${backend.name}: deep offset pages from checkpoints`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let expected: Child[]
    let checkpointReads = 0

    const page = async (n: number, limit: number) => {
      const res = await request(target.app, {
        session: SESSION,
        query: `folder_id=${HUGE}&page=${n}&limit=${limit}`,
      })
      assert.equal(res.statusCode, 200, res.body)
      return listBody(res)
    }
    const assertPage = async (n: number, limit: number) => {
      const body = await page(n, limit)
      assert.equal(body.total, expected.length)
      assert.deepEqual(
        body.folders.map((f) => f.id),
        expected.slice((n - 1) * limit, n * limit).map((c) => c.id),
        `page ${n} of limit ${limit}`,
      )
    }

    before(async () => {
      expected = children().sort(order)
      const iso = (ms: number) => new Date(ms).toISOString()
      target = await appWithRawSql(
        backend,
        {
          users: [{ id: OWNER, username: 'deep' }],
          sessions: [{ id: SESSION, user_id: OWNER }],
          folders: [
            { id: HUGE, name: 'huge', owner_id: OWNER },
            ...children().map((c) => ({
              ...c,
              owner_id: OWNER,
              folder_id: HUGE,
              created_at: iso(c.created_at),
              updated_at: iso(c.created_at),
            })),
          ],
        },
        T0,
      )
      // Count checkpoint reads: the guard that deep pages really use them.
      const store = target.store
      const read = store.listingCheckpoints.bind(store)
      store.listingCheckpoints = (query) => {
        checkpointReads++
        return read(query)
      }
    })
    after(() => target.close())

    it('gives every page exactly, shallow and deep, reading the checkpoints once per generation', async () => {
      for (let n = 1; n <= Math.ceil(CHILDREN / 100); n++) await assertPage(n, 100)
      assert.equal(checkpointReads, 1, 'one checkpoint read served every deep page')
      for (const [n, limit] of [
        [300, 7],
        [301, 7],
        [379, 7],
        [41, 50],
        [42, 64],
        [2650, 1],
        [2001, 1],
        [2200, 1],
      ] as const) {
        await assertPage(n, limit)
      }
      assert.equal(checkpointReads, 1)
    })

    it('stays exact after writes behind its back (new checkpoints for the new generation)', async () => {
      const { sql } = target
      const add = { id: uuid('d3000000', 1), name: 'a-first', created_at: T0 }
      await insertLiveFolder(sql, { id: add.id, name: add.name, parent: HUGE, owner: OWNER, at: T0 })
      const gone = expected[2100] as Child
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, gone.id)
      const renamed = expected[10] as Child
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'zz-last', renamed.id)
      expected = [
        add,
        ...expected.filter((c) => c !== gone && c !== renamed),
        { ...renamed, name: 'zz-last' },
      ].sort(order)
      const before = checkpointReads
      for (const [n, limit] of [
        [21, 100],
        [22, 100],
        [27, 100],
        [2100, 1],
        [301, 7],
        [expected.length, 1],
      ] as const) {
        await assertPage(n, limit)
      }
      assert.equal(checkpointReads, before + 1)
    })

    it('answers beyond the end with no folders and the true total', async () => {
      for (const n of [28, 1000, 2147483647]) {
        const body = await page(n, 100)
        assert.deepEqual(body.folders, [])
        assert.equal(body.total, expected.length)
      }
    })

    it('keeps 404 for a parent that is gone, deep pages included', async () => {
      await target.sql.run(`UPDATE folders SET is_deleted = ${target.sql.true} WHERE id = ?`, HUGE)
      const res = await request(target.app, {
        session: SESSION,
        query: `folder_id=${HUGE}&page=30&limit=100`,
      })
      assert.equal(res.statusCode, 404)
      await target.sql.run(`UPDATE folders SET is_deleted = ${target.sql.false} WHERE id = ?`, HUGE)
    })
  })
}
