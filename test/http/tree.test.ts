import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import {
  UNKNOWN_ID,
  folders,
  loadDocument,
  useSeededAppWithRawSql,
  sessions,
  users,
} from '../helpers/fixtures/contract-data.js'
import { request } from '../helpers/apps/test-app.js'
import { JSON_TYPE, assertProblem, assertUnauthorized, header } from '../helpers/http/http-asserts.js'
import { insertLiveFolder } from '../../harness/raw-sql.js'

/**
 * GET /v1/folders/tree over HTTP (docs/api.md "GET /v1/folders/tree"): the checks and their
 * order, cursors bound to user and root, limit, a quiet download parents first, the entries
 * of a move and a removal, 410 after an import, 404 once the root is gone, and wait. The
 * replay guarantee itself is test/property/tree-replay.test.ts.
 */

const PATH = '/v1/folders/tree'

type Entry =
  | {
      type: 'upsert'
      folder: { id: string; folder_id: string | null; name: string }
      previous_folder_id?: string | null
    }
  | { type: 'remove'; id: string; folder_id: string | null }
  | { type: 'owner'; owner: { username: string } }
interface TreeJson {
  changes: Entry[]
  cursor: string
  has_more: boolean
}

function assertInvalidParam(res: LightMyRequestResponse, param: string) {
  const problem = assertProblem(res, 400, 'INVALID_INPUT')
  assert.ok(problem.detail.includes(`'${param}'`), `detail names ${param}: ${problem.detail}`)
}

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders/tree`, { skip: backend.skip }, () => {
    const t = useSeededAppWithRawSql(backend)

    const tree = (query: string, session = sessions.aliceLive.id) =>
      request(t.app, { url: PATH, session, query })
    async function ok(query: string, session?: string): Promise<TreeJson> {
      const res = await tree(query, session)
      assert.equal(res.statusCode, 200, res.payload)
      assert.equal(header(res, 'content-type'), JSON_TYPE)
      assert.equal(header(res, 'cache-control'), 'no-store')
      return JSON.parse(res.payload) as TreeJson
    }
    const folder = async (parent: string | null, name = 'f') => {
      const id = randomUUID()
      await insertLiveFolder(t.sql, { id, name, parent, owner: users.alice.id, at: Date.now() })
      return id
    }
    /** A root with two children and three grandchildren under the first. */
    async function smallTree() {
      const root = await folder(null, 'root')
      const [a, b] = [await folder(root, 'a'), await folder(root, 'b')]
      const grandchildren = [await folder(a, 'a1'), await folder(a, 'a2'), await folder(a, 'a3')]
      return { root, a, b, grandchildren }
    }
    /** Every answer from `cursor` on until has_more is false, each checked against `limit`. */
    async function drain(root: string, cursor: string | null, limit = 2) {
      const answers: TreeJson[] = []
      for (let i = 0; i < 100; i++) {
        const answer = await ok(`root=${root}&limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`)
        assert.ok(answer.changes.length <= limit, `${answer.changes.length} entries, limit ${limit}`)
        answers.push(answer)
        cursor = answer.cursor
        if (!answer.has_more) return { answers, cursor, entries: answers.flatMap((a) => a.changes) }
      }
      throw new Error('the feed never reached the present')
    }

    describe('checks, in the listing order', () => {
      it('401 without or with a bad session, before any parameter check', async () => {
        assertUnauthorized(await request(t.app, { url: PATH, query: 'limit=0' }))
        assertUnauthorized(await tree('wait=99', randomUUID()))
      })

      it('403 for a frozen account, before parameters', async () => {
        assertProblem(await tree('limit=0', sessions.carolLive.id), 403, 'FROZEN_ACCOUNT')
      })

      it('400 naming each malformed or repeated parameter', async () => {
        for (const [query, param] of [
          ['root=nope', 'root'],
          ['root=', 'root'],
          [`root=${UNKNOWN_ID}&root=${UNKNOWN_ID}`, 'root'],
          ['limit=0', 'limit'],
          ['limit=1e2', 'limit'],
          ['limit=1&limit=2', 'limit'],
          ['wait=61', 'wait'],
          ['wait=1.5', 'wait'],
          ['cursor=', 'cursor'],
          ['cursor=not%20a%20token', 'cursor'],
        ] as const) {
          assertInvalidParam(await tree(query), param)
        }
      })

      it('400 for a cursor of another root, another user, the changes feed, or forged', async () => {
        const { root } = await smallTree()
        const { cursor } = await ok(`root=${root}`)
        assertInvalidParam(await tree(`cursor=${cursor}`), 'cursor') // the user's root
        assertInvalidParam(await tree(`root=${folders.nested.id}&cursor=${cursor}`), 'cursor')
        assertInvalidParam(await tree(`root=${root}&cursor=${cursor}`, sessions.bobLive.id), 'cursor')
        const changes = await request(t.app, {
          url: '/v1/folders/changes',
          session: sessions.aliceLive.id,
          query: `folder_id=${root}`,
        })
        const changesCursor = (JSON.parse(changes.payload) as TreeJson).cursor
        assertInvalidParam(await tree(`root=${root}&cursor=${changesCursor}`), 'cursor')
        const forged = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BA' : 'AA')
        assertInvalidParam(await tree(`root=${root}&cursor=${forged}`), 'cursor')
      })

      it('404 for an unknown, foreign or deleted root, the same body', async () => {
        const unknown = assertProblem(await tree(`root=${UNKNOWN_ID}`), 404, 'NOT_FOUND')
        const foreign = assertProblem(
          await tree(`root=${folders.nested.id}`, sessions.bobLive.id),
          404,
          'NOT_FOUND',
        )
        const deleted = assertProblem(await tree(`root=${folders.deletedRoot.id}`), 404, 'NOT_FOUND')
        assert.equal(unknown.detail, foreign.detail)
        assert.equal(unknown.detail, deleted.detail)
      })

      it('405 for other methods', async () => {
        const res = await request(t.app, { url: PATH, method: 'POST', session: sessions.aliceLive.id })
        assertProblem(res, 405, 'METHOD_NOT_ALLOWED')
      })
    })

    describe('download and follow', () => {
      it('a quiet download: within limit, parents before children, exactly the tree, then nothing', async () => {
        const { root, a, b, grandchildren } = await smallTree()
        const { answers, cursor, entries } = await drain(root, null, 2)
        assert.ok(answers.length >= 3 && answers.slice(0, -1).every((x) => x.has_more))
        const seen = new Set<string>([root])
        for (const entry of entries) {
          assert.equal(entry.type, 'upsert')
          if (entry.type !== 'upsert') continue
          assert.ok(seen.has(entry.folder.folder_id as string), `${entry.folder.name} came before its parent`)
          assert.equal(entry.previous_folder_id, undefined)
          seen.add(entry.folder.id)
        }
        assert.deepEqual([...seen].sort(), [root, a, b, ...grandchildren].sort())
        assert.deepEqual((await drain(root, cursor)).entries, [])
      })

      it('a move within the tree carries the previous parent; a deletion removes with the parent it left', async () => {
        const { root, a, b, grandchildren } = await smallTree()
        const { cursor } = await drain(root, null, 10)
        const [a1, a2] = grandchildren as [string, string, string]
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', b, a1)
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, a2)
        const { entries } = await drain(root, cursor, 10)
        const moved = entries.find((e) => e.type === 'upsert' && e.folder.id === a1)
        assert.deepEqual(moved?.type === 'upsert' && [moved.folder.folder_id, moved.previous_folder_id], [
          b,
          a,
        ])
        assert.deepEqual(
          entries.find((e) => e.type === 'remove'),
          { type: 'remove', id: a2, folder_id: a },
        )
      })

      for (const deleted of ['the folder', 'its new parent'] as const) {
        it(`a folder moved, then ${deleted} deleted, between two answers: the move, then the remove of what left, from the parent it left`, async () => {
          const { root, a, b, grandchildren } = await smallTree()
          const { cursor } = await drain(root, null, 10)
          const [a1] = grandchildren as [string, string, string]
          await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', b, a1)
          const gone = deleted === 'the folder' ? a1 : b
          await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, gone)
          const { entries } = await drain(root, cursor, 10)
          assert.deepEqual(
            entries.map((e) =>
              e.type === 'upsert' ? [e.folder.id, e.folder.folder_id, e.previous_folder_id] : e,
            ),
            [[a1, b, a], { type: 'remove', id: gone, folder_id: gone === a1 ? b : root }],
          )
        })
      }

      it('a subtree moved back in comes back whole', async () => {
        const { root, a, grandchildren } = await smallTree()
        const outside = await folder(null, 'outside')
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', outside, a)
        const { cursor } = await drain(root, null, 10)
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', root, a)
        const { entries } = await drain(root, cursor, 10)
        const upserted = entries.flatMap((e) => (e.type === 'upsert' ? [e.folder.id] : []))
        assert.deepEqual(upserted.sort(), [a, ...grandchildren].sort())
      })
      it('entries apply in order: a folder moved out from under one then deleted, renamed after, keeps its subtree', async () => {
        // Collapsing the rename onto the move's entry, at the end of the answer, would send
        // the remove of the old parent first: applied in order, it takes the subtree along.
        const root = await folder(null, 'root')
        const y = await folder(root, 'y')
        const x = await folder(y, 'x')
        const z = await folder(x, 'z')
        const { cursor } = await drain(root, null, 10)
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', root, x)
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, y)
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'x renamed', x)
        const held = new Map<string, string | null>([
          [y, root],
          [x, y],
          [z, x],
        ])
        for (const entry of (await drain(root, cursor, 10)).entries) {
          if (entry.type === 'upsert') held.set(entry.folder.id, entry.folder.folder_id)
          if (entry.type !== 'remove') continue
          const gone = new Set([entry.id])
          for (const [id, parent] of held) if (parent !== null && gone.has(parent)) gone.add(id)
          for (const id of gone) held.delete(id)
        }
        assert.deepEqual(
          [...held].sort(),
          [
            [x, root],
            [z, x],
          ].sort(),
        )
      })
    })

    describe('entries exact: only folders the client holds, one entry each', () => {
      /** A root with child a (holding a1 below it) and child b: drained to the present. */
      async function followed() {
        const root = await folder(null, 'root')
        const a = await folder(root, 'a')
        const a1 = await folder(a, 'a1')
        const b = await folder(root, 'b')
        const { cursor } = await drain(root, null, 10)
        return { root, a, a1, b, cursor }
      }

      it('below a deleted folder a rename and an insert send nothing; a folder moved in there one remove', async () => {
        const { root, a, a1, b, cursor } = await followed()
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, a)
        const gone = await drain(root, cursor, 10)
        assert.deepEqual(gone.entries, [{ type: 'remove', id: a, folder_id: root }])
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'a1 renamed', a1)
        await folder(a1, 'created below')
        const quiet = await drain(root, gone.cursor, 10)
        assert.deepEqual(quiet.entries, [])
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', a1, b)
        assert.deepEqual((await drain(root, quiet.cursor, 10)).entries, [
          { type: 'remove', id: b, folder_id: root },
        ])
      })

      it('a subtree given to another user: one remove for its top, nothing for its descendants', async () => {
        const { root, a, a1, cursor } = await followed()
        // One statement, so the parents stay of the same owner as their children.
        await t.sql.run(
          `UPDATE folders SET owner_id = ?, folder_id = CASE WHEN id = ? THEN NULL ELSE folder_id END WHERE id IN (?, ?)`,
          users.bob.id,
          a,
          a,
          a1,
        )
        assert.deepEqual((await drain(root, cursor, 10)).entries, [
          { type: 'remove', id: a, folder_id: root },
        ])
      })

      it('with root=R, changes outside R send nothing', async () => {
        const { root, cursor } = await followed()
        const outside = await folder(null, 'outside')
        const inside = await folder(outside, 'x')
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed', inside)
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, inside)
        assert.deepEqual((await drain(root, cursor, 10)).entries, [])
      })

      it('a held request is not answered early by changes outside its tree', async () => {
        const { root, cursor } = await followed()
        const started = Date.now()
        const held = tree(`root=${root}&cursor=${cursor}&wait=2`)
        await new Promise((resolve) => setTimeout(resolve, 200))
        const outside = await folder(null, 'outside')
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed', outside)
        const res = await held
        assert.equal(res.statusCode, 200, res.payload)
        const answer = JSON.parse(res.payload) as TreeJson
        assert.deepEqual(answer.changes, [])
        assert.equal(answer.has_more, false)
        assert.ok(
          Date.now() - started >= 1900,
          `answered after ${Date.now() - started} ms, before the wait ended`,
        )
        assert.deepEqual((await drain(root, answer.cursor, 10)).entries, [])
      })

      it('three renames of one folder while a follower is at the present: one upsert in one answer', async () => {
        const { root, b, cursor } = await followed()
        for (const name of ['b1', 'b2', 'b3'])
          await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', name, b)
        const answer = await ok(`root=${root}&limit=100&cursor=${cursor}`)
        assert.equal(answer.has_more, false)
        assert.deepEqual(
          answer.changes.map((e) =>
            e.type === 'upsert' ? [e.folder.id, e.folder.name, e.previous_folder_id] : e,
          ),
          [[b, 'b3', undefined]],
        )
      })

      it('previous_folder_id exactly when the parent changed since the cursor: the parent then', async () => {
        const { root, a, a1, b, cursor } = await followed()
        // Away and back: the parent did not change since the cursor.
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', b, a1)
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', a, a1)
        const back = await drain(root, cursor, 10)
        assert.deepEqual(
          back.entries.map((e) =>
            e.type === 'upsert' ? [e.folder.id, e.folder.folder_id, e.previous_folder_id] : e,
          ),
          [[a1, a, undefined]],
        )
        // Moved twice: the parent at the cursor's position, not the one in between.
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', b, a1)
        await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', root, a1)
        assert.deepEqual(
          (await drain(root, back.cursor, 10)).entries.map((e) =>
            e.type === 'upsert' ? [e.folder.id, e.folder.folder_id, e.previous_folder_id] : e,
          ),
          [[a1, root, a]],
        )
      })

      it('two subtrees that come back within one answer both come back whole', async () => {
        const { root, a, a1, b, cursor } = await followed()
        const b1 = await folder(b, 'b1')
        const outside = await folder(null, 'outside')
        const { cursor: away } = await drain(root, cursor, 10)
        for (const id of [a, b]) await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', outside, id)
        const { cursor: out } = await drain(root, away, 10)
        for (const id of [a, b]) await t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', root, id)
        const upserted = (await drain(root, out, 10)).entries.flatMap((e) =>
          e.type === 'upsert' ? [e.folder.id] : [],
        )
        assert.deepEqual(upserted.sort(), [a, a1, b, b1].sort())
      })

      it('a backlog of 2,000 single-row commits is caught up in answers of limit entries', async () => {
        const { root, cursor } = await followed()
        for (let i = 0; i < 2000; i++) await folder(root, `n${i}`)
        for (const limit of [1000, 250]) {
          const { answers, entries } = await drain(root, cursor, limit)
          assert.equal(entries.length, 2000)
          // Full answers while that much is pending; then the last one says has_more false.
          assert.deepEqual(
            answers.map((a) => a.changes.length),
            [...Array<number>(2000 / limit).fill(limit), ...(answers.length > 2000 / limit ? [0] : [])],
          )
          assert.ok(answers.length <= 2000 / limit + 1, `${answers.length} answers at limit ${limit}`)
        }
      })
    })

    describe("the root's own row", () => {
      it('renamed, moved under another live folder of the user and back, by raw SQL: nothing is sent', async () => {
        // The root is not in its own tree: only its deletion or its leaving the user ends the follow.
        const { root } = await smallTree()
        const elsewhere = await folder(null, 'elsewhere')
        let { cursor } = await drain(root, null, 10)
        for (const [statement, value] of [
          ['UPDATE folders SET name = ? WHERE id = ?', 'root renamed'],
          ['UPDATE folders SET folder_id = ? WHERE id = ?', elsewhere],
          ['UPDATE folders SET folder_id = ? WHERE id = ?', null],
        ] as const) {
          await t.sql.run(statement, value, root)
          const answer = await drain(root, cursor, 10)
          assert.deepEqual(answer.entries, [], statement)
          cursor = answer.cursor
        }
      })
    })

    describe('reset, deletion, wait', () => {
      it('410 CURSOR_EXPIRED after an import touching the owner; a new download works', async () => {
        const { root } = await smallTree()
        const { cursor } = await drain(root, null, 10)
        await loadDocument(t.store, {
          folders: [{ name: 'imported', folder_id: null, owner_id: users.alice.id }],
        })
        assertProblem(await tree(`root=${root}&cursor=${cursor}`), 410, 'CURSOR_EXPIRED')
        assert.equal((await drain(root, null, 10)).entries.length, 5)
      })

      it('404 once the root is deleted', async () => {
        const { root } = await smallTree()
        const { cursor } = await drain(root, null, 10)
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, root)
        assertProblem(await tree(`root=${root}&cursor=${cursor}`), 404, 'NOT_FOUND')
      })

      it('wait: held while nothing is pending, answered after a raw-SQL commit', async () => {
        const { root, b } = await smallTree()
        const { cursor } = await drain(root, null, 10)
        const started = Date.now()
        const held = tree(`root=${root}&cursor=${cursor}&wait=20`)
        await new Promise((resolve) => setTimeout(resolve, 300))
        const id = await folder(b, 'awaited')
        const res = await held
        assert.equal(res.statusCode, 200, res.payload)
        const answer = JSON.parse(res.payload) as TreeJson
        assert.deepEqual(
          answer.changes.map((e) => (e.type === 'upsert' ? e.folder.id : e.type)),
          [id],
        )
        assert.ok(Date.now() - started >= 300, 'it was held')
      })
    })
  })
}
